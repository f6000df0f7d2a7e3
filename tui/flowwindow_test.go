package tui

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// windowFixture is a memory store of n flows (a quarter at a gate) and
// the model over it, and the listing's ids in order, read whole (what
// the window must agree with).
func windowFixture(t *testing.T, n int) (*engine.Service, *Model, []string) {
	t.Helper()
	ctx := context.Background()
	st := enginetest.New()
	if err := enginetest.Populate(ctx, st, enginetest.PopulateOptions{Flows: n, Batch: n}); err != nil {
		t.Fatal(err)
	}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	m := New(Options{Source: ServiceSource(svc), Keys: DefaultKeyMap(), Reviewer: "alice",
		Styles: DefaultStyles(NewRenderer(os.Stdout, true)), Tick: -1})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	drive(m, m.Init())
	return svc, m, listedIDs(t, svc, "")
}

// listedIDs are the ids of the flows matching filter, in listing order.
func listedIDs(t *testing.T, svc *engine.Service, filter string) []string {
	t.Helper()
	all, err := svc.Query().List(context.Background(), engine.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range all {
		if flowMatches(filter, &all[i]) {
			ids = append(ids, all[i].FlowID)
		}
	}
	return ids
}

// checkWindow: the Flows pane selects want[cursor], shows it, and the
// window holds at most three pages.
func checkWindow(t *testing.T, m *Model, want []string, what string) {
	t.Helper()
	p, _ := paneOf[*flowsPane](t, m)
	if m.flows.n != len(want) {
		t.Fatalf("%s: %d flows in the pane, want %d", what, m.flows.n, len(want))
	}
	if got := p.selectedFlow(&m.common); got != want[p.l.cursor] {
		t.Fatalf("%s: row %d selects %q, want %q", what, p.l.cursor, got, want[p.l.cursor])
	}
	if len(m.flows.rows) > 3*windowPage {
		t.Fatalf("%s: the window holds %d rows", what, len(m.flows.rows))
	}
	if frame := m.View(); !strings.Contains(frame, "flow "+want[p.l.cursor]) || strings.Contains(frame, "…") {
		t.Fatalf("%s: the frame does not show row %d (%s) whole:\n%s", what, p.l.cursor, want[p.l.cursor], frame)
	}
}

// TestFlowWindow: at 1,000 flows the console holds a window of pages
// around the cursor; every row it moves to is the listing's, through
// paging, jumps, a filter and refreshes, and the header counts every flow.
func TestFlowWindow(t *testing.T) {
	const n = 1000
	svc, m, want := windowFixture(t, n)
	p, _ := paneOf[*flowsPane](t, m)
	if h := m.headerLine(); !strings.Contains(h, "1000 flows") || !strings.Contains(h, "250 waiting gates") {
		t.Fatalf("header %q", h)
	}
	checkWindow(t, m, want, "first frame")
	for i := 0; p.l.cursor < n-1; i++ {
		press(m, "pgdown")
		checkWindow(t, m, want, "page down")
		if i > n {
			t.Fatal("page down does not reach the end")
		}
	}
	press(m, "g")
	checkWindow(t, m, want, "top")
	for p.l.cursor < windowPage+2 {
		press(m, "down")
		checkWindow(t, m, want, "down across a page")
	}
	press(m, "G")
	checkWindow(t, m, want, "bottom")
	for range 3 {
		press(m, "pgup")
		checkWindow(t, m, want, "page up")
	}

	// A refresh keeps the cursor on its flow, also when a new flow comes
	// first in the listing.
	kept := want[p.l.cursor]
	if _, err := svc.Plan(context.Background(), gateSpec, "deploy", map[string]any{"name": "new"}, engine.PlanOptions{}); err != nil {
		t.Fatal(err)
	}
	drive(m, m.handleEngineEvents(nil))
	want = listedIDs(t, svc, "")
	checkWindow(t, m, want, "refresh")
	if got := p.selectedFlow(&m.common); got != kept {
		t.Fatalf("after a refresh the cursor is on %s, was on %s", got, kept)
	}
	if h := m.headerLine(); !strings.Contains(h, "1001 flows") {
		t.Fatalf("header after a new flow %q", h)
	}

	// The filter is applied to the whole listing, page by page.
	press(m, "/")
	typeText(m, "awaiting")
	press(m, "enter")
	gated := listedIDs(t, svc, "awaiting")
	if len(gated) != 250 {
		t.Fatalf("%d flows at a gate", len(gated))
	}
	checkWindow(t, m, gated, "filter")
	if p.l.cursor != 0 {
		t.Fatalf("a new filter leaves the cursor at %d", p.l.cursor)
	}
	press(m, "G")
	checkWindow(t, m, gated, "bottom of the filtered rows")
	press(m, "esc")
	checkWindow(t, m, want, "filter cleared")

	// A gate's flow outside the window (the oldest gate, far down the
	// listing): its summary is read with the detail.
	press(m, "g")
	gates, _ := paneOf[*gatesPane](t, m)
	press(m, "3")
	id := gates.selectedFlow(&m.common)
	for i := range m.flows.rows {
		if m.flows.rows[i].FlowID == id {
			t.Fatalf("the oldest gate's flow %s is in the window", id)
		}
	}
	if sum := m.summaryOf(id); sum == nil || sum.FlowID != id || sum.TotalSteps != 11 || sum.Status != state.StatusAwaitingGate {
		t.Fatalf("the summary of the detail flow %s: %+v", id, sum)
	}
}

// TestFlowWindowStaleCounts: the header's counts follow a runner's lease
// expiring after the pass that read them, without reading again.
func TestFlowWindowStaleCounts(t *testing.T) {
	k := flowCounts{}
	now := base
	for i, d := range []state.FlowStatus{state.StatusRunning, state.StatusAwaitingGate, state.StatusRunning} {
		f := &state.FlowSummary{FlowID: string(rune('a' + i)), Status: d, Driver: state.DriverRunner,
			Owner: &state.Lease{ID: "r", ExpiresAt: now.Add(time.Duration(i+1) * time.Minute)}}
		k.add(f, now)
	}
	k.add(&state.FlowSummary{FlowID: "d", Status: state.StatusRunning, Driver: state.DriverRunner}, now) // no lease: stalled
	k.done()
	for _, tc := range []struct {
		after            time.Duration
		running, stalled int
	}{{0, 2, 1}, {time.Minute, 1, 2}, {2 * time.Minute, 1, 3}, {time.Hour, 0, 4}} {
		if r, s := k.at(now.Add(tc.after)); r != tc.running || s != tc.stalled {
			t.Fatalf("%v later: %d running, %d stalled; want %d, %d", tc.after, r, s, tc.running, tc.stalled)
		}
	}
}

// TestPlainStalledSecondPass: with more stalled flows than --plain keeps,
// it lists them from a second read of the listing, the same lines.
func TestPlainStalledSecondPass(t *testing.T) {
	f := newFixture(t)
	// The state and stalled lines, without their time.
	run := func() string {
		var out strings.Builder
		if err := RunPlain(context.Background(), PlainOptions{Source: f.src, Out: &out, Once: true}); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(out.String(), "\n") {
			if _, rest, _ := strings.Cut(l, " "); strings.HasPrefix(rest, "state ") || strings.HasPrefix(rest, "flow_stalled ") {
				lines = append(lines, rest)
			}
		}
		return strings.Join(lines, "\n")
	}
	kept := run()
	if !strings.Contains(kept, "flow_stalled flow="+f.runID) {
		t.Fatalf("no stalled line:\n%s", kept)
	}
	defer func(n int) { plainStalledKeep = n }(plainStalledKeep)
	plainStalledKeep = 0
	if again := run(); again != kept {
		t.Fatalf("read twice:\n%s\nkept:\n%s", again, kept)
	}
}

// gateCountingSource counts the reads of the pending gates.
type gateCountingSource struct {
	Source
	reads *int
}

func (s gateCountingSource) PendingReviews(ctx context.Context) ([]review.PendingReview, error) {
	*s.reads++
	return s.Source.PendingReviews(ctx)
}

// TestFlowFilterPass: a new Flows filter reads the flows' listing, not the
// gates again; until its pass is back the pane says it is filtering.
func TestFlowFilterPass(t *testing.T) {
	f := newFixture(t)
	reads := 0
	m := newModel(t, gateCountingSource{f.src, &reads}, 80, 24)
	before := reads
	press(m, "/")
	typeText(m, "hunt")
	press(m, "enter")
	if reads != before {
		t.Fatalf("a filter read the gates %d times", reads-before)
	}
	p, _ := paneOf[*flowsPane](t, m)
	if m.flows.n != 1 || p.selectedFlow(&m.common) != f.huntID {
		t.Fatalf("filter hunt: %d flows, selected %s", m.flows.n, p.selectedFlow(&m.common))
	}
	p.filter = "deploy" // typed, its pass not back yet
	if frame := m.View(); !strings.Contains(frame, "Filtering 3 flows…") {
		t.Fatalf("a filter in flight:\n%s", frame)
	}
}

// listCountingSource counts the summaries the whole listing's pages
// return (ListFlows with no status).
type listCountingSource struct {
	Source
	read *int
}

func (s listCountingSource) ListFlows(ctx context.Context, f engine.ListFilter) ([]state.FlowSummary, error) {
	page, err := s.Source.ListFlows(ctx, f)
	if f.Status == "" {
		*s.read += len(page)
	}
	return page, err
}

// TestFlowRefreshReadsTheWindow: with no filter, a refresh reads the pages
// around the cursor, not every summary: the counts come from the index and
// the active flows; the marks past what it read are taken as the cursor
// moves, so every row is still the listing's.
func TestFlowRefreshReadsTheWindow(t *testing.T) {
	const n = 3000
	ctx := context.Background()
	st := enginetest.New()
	if err := enginetest.Populate(ctx, st, enginetest.PopulateOptions{Flows: n, Batch: n}); err != nil {
		t.Fatal(err)
	}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	read := 0
	m := newModel(t, listCountingSource{ServiceSource(svc), &read}, 100, 30)
	want := listedIDs(t, svc, "")
	if h := m.headerLine(); !strings.Contains(h, "3000 flows") || !strings.Contains(h, "750 waiting gates") {
		t.Fatalf("header %q", h)
	}
	checkWindow(t, m, want, "first frame")
	// One store page holds the window's pages (and the detail reads its
	// flow's row): far from the 3000 summaries.
	if read > storePage+windowPage {
		t.Fatalf("the first frame read %d summaries of the listing", read)
	}
	read = 0
	drive(m, m.handleEngineEvents(nil))
	if read > storePage+windowPage {
		t.Fatalf("a refresh read %d summaries of the listing", read)
	}
	p, _ := paneOf[*flowsPane](t, m)
	press(m, "G")
	checkWindow(t, m, want, "bottom")
	for p.l.cursor > 0 {
		press(m, "pgup")
		checkWindow(t, m, want, "page up")
	}
	// The active flows (every one: Populate's are running or at a gate),
	// merged from their listings, in the listing order.
	var active, merged []string
	all, err := svc.Query().List(ctx, engine.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range all {
		if all[i].Status.Active() {
			active = append(active, all[i].FlowID)
		}
	}
	if err := scanActive(ctx, ServiceSource(svc), func(f *state.FlowSummary) bool { merged = append(merged, f.FlowID); return true }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(merged, " ") != strings.Join(active, " ") || len(active) != n {
		t.Fatalf("scanActive: %d flows, the listing's active ones: %d", len(merged), len(active))
	}
}

// overCountingSource counts more flows than the listing holds (as the
// index counts a damaged flow, which the listing leaves out).
type overCountingSource struct{ Source }

func (s overCountingSource) CountFlows(ctx context.Context, f engine.ListFilter) (int, error) {
	n, err := s.Source.CountFlows(ctx, f)
	return n + 3, err
}

// TestFlowWindowCountsToTheEnd: the rows a pass counted from the index
// but the listing does not hold go when the cursor reaches the end.
func TestFlowWindowCountsToTheEnd(t *testing.T) {
	const n = 1000
	ctx := context.Background()
	st := enginetest.New()
	if err := enginetest.Populate(ctx, st, enginetest.PopulateOptions{Flows: n, Batch: n}); err != nil {
		t.Fatal(err)
	}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	m := newModel(t, overCountingSource{ServiceSource(svc)}, 100, 30)
	if m.flows.n != n+3 {
		t.Fatalf("the pass counted %d rows", m.flows.n)
	}
	press(m, "G")
	want := listedIDs(t, svc, "")
	checkWindow(t, m, want, "bottom")
	p, _ := paneOf[*flowsPane](t, m)
	if p.l.cursor != n-1 {
		t.Fatalf("the cursor is on row %d at the bottom, want %d", p.l.cursor, n-1)
	}
}
