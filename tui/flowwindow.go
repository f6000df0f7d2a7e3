package tui

import (
	"context"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// The Flows listing, bounded by what is on screen. The console never holds
// every flow's summary: it reads the store's listing (Source.ListFlows,
// newest first) page by page and keeps a window of a few pages of rows
// around the Flows pane's cursor, the counts the header shows, and where
// each page of the rows matching the pane's filter starts in the listing
// (a cursor per windowPage rows, so any page is one read away). A pass
// over the listing (flowPass) computes all three at the first frame, after
// store events and when the filter changes; scrolling out of the window
// reads the pages it needs from their marks (flowPagesCmd). Memory is a few
// pages of summaries, whatever the store holds.
//
// With no filter every flow matches, so the pass reads no further than
// the window: the counts come from the store's index (Source.CountFlows,
// every flow) and the active flows' listings (the running and stalled
// counts: state.FlowStatus.Active, readCounts), and the marks past the
// window are taken as the cursor moves down (readPages). A refresh then
// reads the counts, the active flows and the pages on screen, not every
// summary. A filter's pass still reads the whole listing, page by page.

const (
	// storePage is how many summaries one Source.ListFlows call reads.
	storePage = 500
	// windowPage is a page of the Flows pane's rows; the window holds the
	// cursor's page and the pages either side.
	windowPage = 200
)

// plainStalledKeep bounds the stalled flows --plain holds to print after
// its state line; past it, it reads the listing again (a variable for
// tests).
var plainStalledKeep = 1000

// flowCounts are the header's counts over every flow, as of the pass that
// read them, and the lease expiries that change them as time passes.
type flowCounts struct {
	total, running, stalled int
	// The lease expiries (Unix nanoseconds, sorted once the pass ends) of
	// the flows live runners drove at the pass: counted running (run) or
	// neither (gate, waiting at a gate); each reads stalled once its lease
	// has expired. One per flow a runner drives, not per flow.
	run, gate []int64
}

// add counts f at now: a flow something drives is running, one whose
// runner is gone is stalled.
func (k *flowCounts) add(f *state.FlowSummary, now time.Time) {
	k.total++
	switch {
	case f.Stalled(now):
		k.stalled++
	case f.Status == state.StatusRunning:
		k.running++
	}
	if f.Owner != nil && f.Status.Active() && (f.Driver == state.DriverRunner || f.Driver == state.DriverLibrary) && f.Owner.ExpiresAt.After(now) {
		if f.Status == state.StatusRunning {
			k.run = append(k.run, f.Owner.ExpiresAt.UnixNano())
		} else {
			k.gate = append(k.gate, f.Owner.ExpiresAt.UnixNano())
		}
	}
}

// done sorts the expiries (at the end of a pass).
func (k *flowCounts) done() {
	slices.Sort(k.run)
	slices.Sort(k.gate)
}

// at is the running and stalled counts at now: the flows whose lease has
// expired since the pass are stalled (FlowSummary.Stalled's rule).
func (k *flowCounts) at(now time.Time) (running, stalled int) {
	expired := func(exp []int64) int {
		i, _ := slices.BinarySearch(exp, now.UnixNano()+1)
		return i
	}
	r := expired(k.run)
	return k.running - r, k.stalled + r + expired(k.gate)
}

// flowWindow is what the console holds of the Flows listing.
type flowWindow struct {
	// filter is the Flows pane's filter the window was read with.
	filter string
	counts flowCounts
	// n is the number of flows matching filter.
	n int
	// marks[k] is where page k of the matching flows starts: it is read
	// After marks[k] (marks[0] is the start of the listing).
	marks []state.ListCursor
	// rows are the matching flows from index start (a page boundary).
	start int
	rows  []state.FlowSummary
	// prefix is the tree glyphs of each child flow in rows, by id
	// (flowWindow.nest orders rows as trees).
	prefix map[string]string
	// at is the index of the flow the pass was asked to find (-1: absent).
	at int
	// gen numbers the passes: pages read with another pass's marks are
	// stale.
	gen int
}

// row is the i-th matching flow, nil when it is not in the window.
func (w *flowWindow) row(i int) *state.FlowSummary {
	if i < w.start || i >= w.start+len(w.rows) {
		return nil
	}
	return &w.rows[i-w.start]
}

// covers reports whether the window holds the pages around index i (the
// cursor's page and those either side that exist).
func (w *flowWindow) covers(i int) bool {
	from, to := pagesAround(i, w.n)
	return w.start <= from*windowPage && min(w.n, (to+1)*windowPage) <= w.start+len(w.rows)
}

// pagesAround are the first and last window pages around index i of n rows.
func pagesAround(i, n int) (from, to int) {
	last := max(0, (n-1)/windowPage)
	p := min(max(0, i)/windowPage, last)
	return max(0, p-1), min(last, p+1)
}

// flowMatches reports whether f matches the Flows pane's filter.
func flowMatches(filter string, f *state.FlowSummary) bool {
	return matches(filter, f.FlowID, f.FlowName, string(f.Status), f.CurrentStep, f.Driver)
}

// scanFlows calls fn with every flow's summary in the listing order, read
// storePage at a time, from after; fn returns false to stop.
func scanFlows(ctx context.Context, src Source, after state.ListCursor, fn func(f *state.FlowSummary) bool) error {
	for {
		page, err := src.ListFlows(ctx, engine.ListFilter{Limit: storePage, After: after})
		if err != nil {
			return err
		}
		for i := range page {
			if !fn(&page[i]) {
				return nil
			}
		}
		if len(page) < storePage {
			return nil
		}
		after = page[len(page)-1].Cursor()
	}
}

// activeStatuses are the statuses of state.FlowStatus.Active: the only
// flows a header count other than the total depends on.
var activeStatuses = []state.FlowStatus{state.StatusRunning, state.StatusAwaitingGate}

// statusPages reads one status's listing, storePage summaries at a time.
type statusPages struct {
	src  Source
	f    engine.ListFilter
	page []state.FlowSummary
	i    int
	end  bool
}

// head is the next flow of the listing, nil at its end.
func (p *statusPages) head(ctx context.Context) (*state.FlowSummary, error) {
	if p.i < len(p.page) {
		return &p.page[p.i], nil
	}
	if p.end {
		return nil, nil
	}
	page, err := p.src.ListFlows(ctx, p.f)
	if err != nil {
		return nil, err
	}
	p.page, p.i, p.end = page, 0, len(page) < p.f.Limit
	if len(page) == 0 {
		return nil, nil
	}
	p.f.After = page[len(page)-1].Cursor()
	return &page[0], nil
}

// scanActive calls fn with every active flow's summary (activeStatuses)
// in the listing order, merged from each status's listing read page by
// page; fn returns false to stop.
func scanActive(ctx context.Context, src Source, fn func(f *state.FlowSummary) bool) error {
	ps := make([]*statusPages, len(activeStatuses))
	for i, st := range activeStatuses {
		ps[i] = &statusPages{src: src, f: engine.ListFilter{Status: st, Limit: storePage}}
	}
	for {
		var first *state.FlowSummary
		var from *statusPages
		for _, p := range ps {
			f, err := p.head(ctx)
			if err != nil {
				return err
			}
			if f != nil && (first == nil || f.Cursor().Precedes(first.CreatedAt, first.FlowID)) {
				first, from = f, p
			}
		}
		if first == nil {
			return nil
		}
		from.i++
		if !fn(first) {
			return nil
		}
	}
}

// readCounts reads the header's counts at now without reading every
// summary: the number of flows from the listing's index, the rest from
// the active flows (scanActive), each also passed to each (when set). A
// flow neither running nor at a gate counts in the total only.
func readCounts(ctx context.Context, src Source, now time.Time, each func(f *state.FlowSummary)) (flowCounts, error) {
	var k flowCounts
	total, err := src.CountFlows(ctx, engine.ListFilter{})
	if err != nil {
		return k, err
	}
	err = scanActive(ctx, src, func(f *state.FlowSummary) bool {
		k.add(f, now)
		if each != nil {
			each(f)
		}
		return true
	})
	if err != nil {
		return flowCounts{}, err
	}
	k.done()
	k.total = total
	return k, nil
}

// passQuery is what a pass over the listing is for: the Flows pane's
// filter, the flow to keep the cursor on (keep, may be empty) and the
// cursor's index, whose pages are kept when keep is not found.
type passQuery struct {
	filter string
	keep   string
	cursor int
	gen    int
	now    time.Time
}

// flowPass reads the listing once: the counts, the matching flows' number
// and page marks, and the window around the kept flow (else around the
// cursor). It holds a few pages of rows: the page it reads, the one
// before, and those around the cursor and the kept flow. With no filter
// (every flow matches) it stops past the window: the counts, and so the
// number of rows, are read from the indexes and the active flows
// (readCounts), and the marks after the last page read are taken later
// (readPages).
func flowPass(ctx context.Context, src Source, q passQuery) (flowWindow, error) {
	w := flowWindow{filter: q.filter, at: -1, gen: q.gen}
	partial := q.filter == ""
	if partial {
		k, err := readCounts(ctx, src, q.now, nil)
		if err != nil {
			return flowWindow{}, err
		}
		w.counts = k
	}
	cursorPage := q.cursor / windowPage
	kept := map[int][]state.FlowSummary{}
	want := func(p int) bool {
		if p >= cursorPage-1 && p <= cursorPage+1 {
			return true
		}
		at := w.at / windowPage
		return w.at >= 0 && p >= at-1 && p <= at+1
	}
	// past reports whether page p is past the window (partial passes):
	// past the pages around the kept flow once found, else around the
	// cursor when there is no flow to keep.
	past := func(p int) bool {
		switch {
		case w.at >= 0:
			return p > w.at/windowPage+1
		case q.keep == "":
			return p > cursorPage+1
		}
		return false
	}
	// The page being read (cur) and the one before (prev), whose arrays
	// are reused unless kept.
	var prev, cur []state.FlowSummary
	prevKept, stopped := false, false
	var last state.ListCursor
	err := scanFlows(ctx, src, state.ListCursor{}, func(f *state.FlowSummary) bool {
		if !partial {
			w.counts.add(f, q.now)
		}
		if !flowMatches(q.filter, f) {
			last = f.Cursor()
			return true
		}
		i := w.n
		page := i / windowPage
		if i%windowPage == 0 {
			w.marks = append(w.marks, last)
			if partial && page > 0 && past(page) {
				stopped = true
				return false
			}
			if page > 0 {
				done, doneKept := cur, want(page-1)
				if doneKept {
					kept[page-1] = done
				}
				if prevKept {
					prev = nil
				}
				prev, cur, prevKept = done, prev[:0], doneKept
			}
		}
		w.n++
		if f.FlowID == q.keep && q.keep != "" {
			w.at = i
			if page > 0 && !prevKept {
				kept[page-1], prevKept = prev, true
			}
		}
		if cur == nil {
			cur = make([]state.FlowSummary, 0, windowPage)
		}
		cur = append(cur, *f)
		last = f.Cursor()
		return true
	})
	if err != nil {
		return flowWindow{}, err
	}
	if !partial {
		w.counts.done()
	}
	if w.n > 0 {
		kept[(w.n-1)/windowPage] = cur
	}
	if stopped {
		// Flows counted but not read: the rows after the window.
		w.n = max(w.n, w.counts.total)
	}
	w.takeRows(kept, cursorPage)
	w.nest()
	return w, nil
}

// takeRows sets the window's rows from the kept pages: the pages around
// the kept flow (else around the cursor's page), as far as they were read
// in a row.
func (w *flowWindow) takeRows(kept map[int][]state.FlowSummary, cursorPage int) {
	center := cursorPage
	if w.at >= 0 {
		center = w.at / windowPage
	}
	from, to := pagesAround(center*windowPage, w.n)
	w.start = from * windowPage
	for p := from; p <= to; p++ {
		rows, ok := kept[p]
		if !ok || (p > from && len(w.rows) != (p-from)*windowPage) {
			break
		}
		w.rows = append(w.rows, rows...)
	}
}

// readPages reads pages window pages of the flows matching filter from
// after, the mark of a page, skipping the skip pages from there first:
// the rows, and the marks of the pages after the first it met (marks[k]
// is the mark of the (k+1)-th page after after's).
func readPages(ctx context.Context, src Source, filter string, after state.ListCursor, skip, pages int) ([]state.FlowSummary, []state.ListCursor, error) {
	var rows []state.FlowSummary
	var marks []state.ListCursor
	n, last := 0, after
	err := scanFlows(ctx, src, after, func(f *state.FlowSummary) bool {
		if !flowMatches(filter, f) {
			last = f.Cursor()
			return true
		}
		if n > 0 && n%windowPage == 0 {
			marks = append(marks, last)
		}
		if n >= skip*windowPage {
			rows = append(rows, *f)
		}
		n++
		last = f.Cursor()
		return len(rows) < pages*windowPage
	})
	return rows, marks, err
}

// flowsPaneOf is the Flows pane (nil when the console has none).
func (m *Model) flowsPaneOf() *flowsPane {
	p, _ := findPane[*flowsPane](m.panes)
	return p
}

// passQuery is the pass the Flows pane needs now: its filter, and the flow
// it selects to keep the cursor on (none when the filter changed since the
// window was read: the cursor stays where the filter put it).
func (m *Model) passQuery() passQuery {
	m.passGen++
	q := passQuery{gen: m.passGen, now: m.now()}
	if p := m.flowsPaneOf(); p != nil {
		q.filter, q.cursor = p.filter, p.l.cursor
		if p.filter == m.flows.filter {
			q.keep = p.selectedFlow(&m.common)
		}
	}
	return q
}

// ensureWindow reads the pages around the Flows pane's cursor when the
// window does not hold them (after the cursor moved), one read at a time.
func (m *Model) ensureWindow() tea.Cmd {
	p := m.flowsPaneOf()
	if p == nil || m.flows.n == 0 || m.flows.covers(p.l.cursor) {
		return nil
	}
	if m.pagesLoading {
		m.pagesDirty = true
		return nil
	}
	from, to := pagesAround(p.l.cursor, m.flows.n)
	if len(m.flows.marks) == 0 {
		return nil
	}
	// From the last mark known at or before from (a partial pass took
	// the marks of the pages it read only).
	known := min(from, len(m.flows.marks)-1)
	m.pagesLoading = true
	return m.flowPagesCmd(m.flows.gen, m.flows.filter, known, m.flows.marks[known], from-known, to-from+1)
}

// handleFlowPages takes pages read for the window: kept when they were
// read with the current pass's marks, then the detail follows the cursor.
func (m *Model) handleFlowPages(msg flowPagesMsg) tea.Cmd {
	m.pagesLoading = false
	if msg.err != nil {
		m.loadFailed(msg.err)
		return nil
	}
	if msg.gen == m.flows.gen {
		m.flows.start, m.flows.rows = msg.start, msg.rows
		m.flows.nest()
		// The marks of the pages it met after the first: the new ones.
		for k, mark := range msg.marks {
			if msg.first+1+k == len(m.flows.marks) {
				m.flows.marks = append(m.flows.marks, mark)
			}
		}
		// Fewer rows than asked: the end of the listing, which a partial
		// pass counted from the index (a damaged flow, which the listing
		// leaves out, or a flow deleted since, counted there).
		if msg.short && m.flows.filter == "" {
			m.flows.n = msg.start + len(msg.rows)
		}
	}
	if m.pagesDirty || msg.gen != m.flows.gen {
		m.pagesDirty = false
		if cmd := m.ensureWindow(); cmd != nil {
			return cmd
		}
	}
	return m.reloadDetailCmd()
}
