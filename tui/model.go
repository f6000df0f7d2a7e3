package tui

import (
	"context"
	"errors"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs/watch"
)

// Grace-period defaults for dialogs that open asynchronously.
const (
	DefaultGraceQuiet = 400 * time.Millisecond
	DefaultGraceMax   = 2 * time.Second
)

// DefaultStatusTTL is how long a status message stays on screen (an error
// stays until the next success).
const DefaultStatusTTL = 5 * time.Second

// Options configure a Model.
type Options struct {
	Source   Source
	Keys     KeyMap
	Styles   Styles
	Reviewer string // identity recorded with decisions ($USER)
	// Invocation runs this stratum in the commands the console prints
	// (stratum run --resume …; "stratum" when empty).
	Invocation string
	// Backend names the store, shown at the right of the header.
	Backend string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Events delivers batches of new store events (Source.Watch); nil
	// disables live updates.
	Events <-chan []engine.Event
	// Specs delivers spec-file states (from a specs/watch Watcher); nil
	// leaves the Specs pane empty.
	Specs <-chan watch.Update
	// Reviews delivers gates offered through the review.Sink (Sink);
	// defaults to Sink.Reviews().
	Reviews <-chan review.PendingReview
	// GraceQuiet and GraceMax bound the grace period of asynchronously
	// opened dialogs (defaults DefaultGraceQuiet, DefaultGraceMax).
	GraceQuiet, GraceMax time.Duration
	// Runner runs flows from the Specs pane (nil: no runs from the console).
	Runner FlowRunner
	// Sink is offered to runs started from the console, so their gates open
	// the decision dialog at once; pass its Reviews as Reviews too.
	Sink *review.Queue
	// Context bounds runs started from the console (Background when nil).
	Context context.Context
	// Clipboard is the terminal the copy key writes its OSC 52 sequence to
	// (nil: copying is unavailable).
	Clipboard io.Writer
	// Tick is the countdown refresh interval (1 s when zero; negative
	// disables it, for tests).
	Tick time.Duration
	// StatusTTL is how long a status message (not an error) stays
	// (DefaultStatusTTL when zero).
	StatusTTL time.Duration
	// Pager is the command the pager key pipes the selected output to
	// (Run passes $PAGER, else less); empty disables the key.
	Pager []string

	// panes are the panes to show (registeredPanes when nil); Keys must
	// have been built for them (newKeyMap).
	panes []paneDef
}

// Messages. Results of commands carry what they are for, so a stale answer
// can be recognised.
type (
	snapshotMsg struct {
		flows   flowWindow
		reviews []review.PendingReview
		// flowsOnly: a pass for a new filter, without the gates (reviews
		// is nil and the gates stay as they are).
		flowsOnly bool
		err       error
	}
	// flowPagesMsg are window pages of the Flows listing, from index
	// start, read with the marks of the pass gen from page first's, with
	// the marks of the pages after first the read met (readPages).
	flowPagesMsg struct {
		gen   int
		start int
		rows  []state.FlowSummary
		first int
		marks []state.ListCursor
		// short: the listing ended before the pages asked for did.
		short bool
		err   error
	}
	detailMsg struct {
		flowID string
		state  *state.FlowState
		events []engine.Event
		sum    *state.FlowSummary
		root   string
		stages map[string]int // pipelineStages
		err    error
	}
	eventsMsg    []engine.Event
	eventsEndMsg struct{}
	specMsg      watch.Update
	reviewMsg    review.PendingReview
	tickMsg      time.Time
	actionMsg    struct {
		text string
		err  error
	}
)

// Model is the root (and only) Bubble Tea model of the console. It owns the
// layout, the focus, the routing of keys and messages, the dialogs and the
// shared state (common) the panes render from.
type Model struct {
	common
	opt   Options
	panes []pane
	focus int // index in panes

	loaded  bool
	loadErr error
	// Snapshot reload coalescing.
	loading, dirty bool
	// Detail reload coalescing.
	detailLoading, detailDirty bool
	// passGen numbers the passes over the listing; pagesLoading and
	// pagesDirty coalesce the reads of window pages (flowwindow.go).
	passGen                  int
	pagesLoading, pagesDirty bool

	input     textinput.Model
	inputMode inputMode

	dialogs   []dialog
	lastKeyAt time.Time
	// closed remembers when a review's dialog was last closed, to skip the
	// grace period when it reopens quickly.
	closedReview   string
	closedReviewAt time.Time

	status    string
	statusErr bool
	statusAt  time.Time
	// statusLoad marks an error of a store read: the next successful read
	// clears it.
	statusLoad bool
	quitting   bool
	// lastLoadAt is when the store was last read successfully (the header
	// says how old the counts are while it is unreachable).
	lastLoadAt time.Time

	// Runs started from the Specs pane still running, and the flows whose
	// gates they offered (the Sink): quitting while one waits at a gate asks
	// first.
	runs     int
	runFlows map[string]bool
	// runCtx bounds the runs started here; stopRuns cancels it and waits
	// for them (runsWG), so their leases are released before the process
	// exits and other consoles show their flows stalled at once.
	runCtx    context.Context
	runCancel context.CancelFunc
	runsWG    *sync.WaitGroup
	// gateCtxLoading are the review ids whose gateContext is being loaded.
	gateCtxLoading map[string]bool
}

type inputMode int

const (
	inputNone inputMode = iota
	inputFilter
	inputCommand
)

// New builds the model. Options.Source is required.
func New(opt Options) *Model {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.GraceQuiet <= 0 {
		opt.GraceQuiet = DefaultGraceQuiet
	}
	if opt.GraceMax <= 0 {
		opt.GraceMax = DefaultGraceMax
	}
	if opt.Tick == 0 {
		opt.Tick = time.Second
	}
	if opt.StatusTTL <= 0 {
		opt.StatusTTL = DefaultStatusTTL
	}
	if opt.Reviews == nil && opt.Sink != nil {
		opt.Reviews = opt.Sink.Reviews()
	}
	if opt.Reviewer == "" {
		opt.Reviewer = "unknown"
	}
	if opt.panes == nil {
		opt.panes = registeredPanes
	}
	if opt.Keys.Quit.Keys() == nil {
		opt.Keys = newKeyMap(opt.panes)
	}
	ti := newInput()
	ti.Prompt = ""
	ti.CharLimit = 500
	m := &Model{
		common: common{keys: opt.Keys, st: opt.Styles, now: opt.Now, width: 80, height: 24, specs: map[string]watch.Update{},
			gateCtx: map[string]*gateContext{}, inflight: map[string]inflightStep{}, inflightSeen: map[string]bool{},
			invocation: opt.Invocation},
		opt:            opt,
		input:          ti,
		runFlows:       map[string]bool{},
		gateCtxLoading: map[string]bool{},
	}
	parent := opt.Context
	if parent == nil {
		parent = context.Background()
	}
	m.runCtx, m.runCancel = context.WithCancel(parent)
	m.runsWG = &sync.WaitGroup{}
	m.panes = newPanes(opt.panes, &m.keys)
	m.layout()
	return m
}

// stopRuns stops the runs started from the console and waits, at most
// timeout, for them to end: each releases its flow's lease (a run stopped
// at a gate reads stalled at once elsewhere, not after its lease expires).
// It reports whether they all ended.
func (m *Model) stopRuns(timeout time.Duration) bool {
	m.runCancel()
	done := make(chan struct{})
	go func() {
		m.runsWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Init loads the first snapshot and starts listening.
func (m *Model) Init() tea.Cmd {
	m.loading = true
	return tea.Batch(m.snapshotCmd(), m.waitEventsCmd(), m.waitSpecsCmd(), m.waitReviewsCmd(), m.tickCmd())
}

// Update dispatches by message kind; it does no I/O. After every message
// the context of the gates on screen is loaded if it is not yet.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	if ctxCmd := m.gateCtxCmds(); ctxCmd != nil {
		cmd = tea.Batch(cmd, ctxCmd)
	}
	return m, cmd
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case gateCtxMsg:
		delete(m.gateCtxLoading, msg.reviewID)
		m.gateCtx[msg.reviewID] = msg.ctx
		return nil
	case decidedMsg:
		m.handleDecided(msg)
		return nil
	case tea.WindowSizeMsg:
		m.handleResize(msg)
		return nil
	case tea.KeyMsg:
		return m.handleKey(msg)
	case snapshotMsg:
		return m.handleSnapshot(msg)
	case detailMsg:
		return m.handleDetail(msg)
	case flowPagesMsg:
		return m.handleFlowPages(msg)
	case eventsMsg:
		return m.handleEngineEvents(msg)
	case eventsEndMsg:
		return nil
	case specMsg:
		m.handleSpec(watch.Update(msg))
		return m.waitSpecsCmd()
	case reviewMsg:
		return m.handleReviewEvent(review.PendingReview(msg))
	case tickMsg:
		return m.tickCmd()
	case inflightSeedMsg:
		m.handleInflightSeed(msg)
	case actionMsg:
		m.setStatus(msg.text, msg.err)
		return m.reloadCmd()
	case runDoneMsg:
		return m.handleRunDone(msg)
	}
	return nil
}

func (m *Model) handleResize(msg tea.WindowSizeMsg) {
	m.width, m.height = msg.Width, msg.Height
	m.input.Width = max(10, m.width-4)
	m.layout()
}

// layout gives every pane the body's size.
func (m *Model) layout() {
	for _, p := range m.panes {
		p.SetSize(m.width, m.bodyHeight())
	}
}

// setStatus shows text, or err as an error. A message expires after
// Options.StatusTTL (statusLine); an error stays until the next message.
func (m *Model) setStatus(text string, err error) {
	m.statusAt, m.statusLoad = m.now(), false
	if err != nil {
		m.status, m.statusErr = clean(err.Error()), true
		return
	}
	m.status, m.statusErr = clean(text), false
}

// clearStatus removes the status message.
func (m *Model) clearStatus() { m.status, m.statusErr, m.statusLoad = "", false, false }

// loadFailed shows the error of a store read; loadSucceeded clears it (and
// only such an error) once a read succeeds again.
func (m *Model) loadFailed(err error) {
	m.setStatus("", err)
	m.statusLoad = true
	if errors.Is(err, engine.ErrNewerStore) {
		// The store refuses every read from now on: the header says why
		// (and what to do), whichever read found it.
		m.loadErr = err
	}
}

func (m *Model) loadSucceeded() {
	if m.statusLoad {
		m.clearStatus()
	}
}

// ---- message handlers ----

func (m *Model) handleSnapshot(msg snapshotMsg) tea.Cmd {
	m.loading = false
	var cmds []tea.Cmd
	if m.dirty {
		m.dirty = false
		cmds = append(cmds, m.reloadCmd())
	}
	if msg.err != nil {
		m.loadErr = msg.err
		return tea.Batch(cmds...)
	}
	first := !m.loaded
	m.loaded, m.loadErr, m.lastLoadAt = true, nil, m.now()
	m.loadSucceeded()
	// The panes that select flows stay on the flow they were on.
	selected := make([]string, len(m.panes))
	for i, p := range m.panes {
		if s, ok := p.(flowSelector); ok {
			selected[i] = s.selectedFlow(&m.common)
		}
	}
	// After a new filter the cursor stays where the filter put it.
	refiltered := msg.flows.filter != m.flows.filter
	m.flows = msg.flows
	if !msg.flowsOnly {
		before := m.reviews
		m.reviews = msg.reviews
		// Oldest first: the gate that has waited longest comes first.
		sort.SliceStable(m.reviews, func(i, j int) bool { return m.reviews[i].OpenedAt.Before(m.reviews[j].OpenedAt) })
		m.dropStaleGateCtx()
		if first {
			before = nil
		}
		cmds = append(cmds, m.closeStaleDialogs(before))
	}
	m.refreshPanes()
	if first {
		cmds = append(cmds, m.seedInflightCmd(m.runningSteps()))
	}
	for i, p := range m.panes {
		if _, flows := p.(*flowsPane); flows && refiltered {
			continue
		}
		if s, ok := p.(flowSelector); ok && selected[i] != "" {
			s.selectFlow(&m.common, selected[i])
		}
	}
	if cmd := m.ensureWindow(); cmd != nil {
		return tea.Batch(append(cmds, cmd)...)
	}
	cmds = append(cmds, m.reloadDetailCmd())
	return tea.Batch(cmds...)
}

func (m *Model) handleDetail(msg detailMsg) tea.Cmd {
	m.detailLoading = false
	if m.detailDirty || msg.flowID != m.focusFlowID() {
		m.detailDirty = false
		return m.reloadDetailCmd()
	}
	if msg.err != nil {
		if !errors.Is(msg.err, engine.ErrNotFound) {
			m.loadFailed(msg.err)
		}
		m.detail, m.detailEvents, m.detailSum, m.detailRoot = nil, nil, nil, ""
		return nil
	}
	m.loadSucceeded()
	m.detail, m.detailEvents, m.detailSum, m.detailRoot = msg.state, msg.events, msg.sum, msg.root
	m.detailStages = msg.stages
	m.refreshPanes()
	return nil
}

// handleEngineEvents reacts to new store events: one reload per burst.
func (m *Model) handleEngineEvents(evs eventsMsg) tea.Cmd {
	m.noteInflight(evs)
	return tea.Batch(m.reloadCmd(), m.waitEventsCmd())
}

func (m *Model) handleSpec(u watch.Update) {
	if old, ok := m.specs[u.Path]; ok && old.Gen > u.Gen {
		return
	}
	if u.Removed {
		delete(m.specs, u.Path)
	} else {
		m.specs[u.Path] = u
	}
	m.refreshPanes()
}

// handleReviewEvent is a gate offered through the Sink: show it and open
// its dialog (asynchronously, so with a grace period).
func (m *Model) handleReviewEvent(r review.PendingReview) tea.Cmd {
	m.runFlows[r.FlowID] = true
	found := false
	for i := range m.reviews {
		if m.reviews[i].ReviewID == r.ReviewID {
			m.reviews[i], found = r, true
		}
	}
	if !found {
		m.reviews = append(m.reviews, r)
	}
	if !m.hasDialogFor(r.ReviewID) {
		async := !(m.closedReview == r.ReviewID && m.now().Sub(m.closedReviewAt) < time.Second)
		m.pushDialog(newDecisionDialog(r, "", async, m.now()))
	}
	return tea.Batch(m.reloadCmd(), m.waitReviewsCmd())
}

// closeStaleDialogs closes decision dialogs whose gate is no longer pending
// (decided elsewhere, timed out, or a later round), except one in which a
// rationale or value was typed: it stays, read-only, keeping the text. The
// command it returns reads who decided, the outcome and the rationale, for
// the notice; gates that left without a dialog are read too, so a timeout
// is announced.
func (m *Model) closeStaleDialogs(before []review.PendingReview) tea.Cmd {
	pending := map[string]bool{}
	for _, r := range m.reviews {
		pending[r.ReviewID] = true
	}
	var cmds []tea.Cmd
	dialogFor := map[string]bool{}
	kept := m.dialogs[:0]
	for _, d := range m.dialogs {
		if dd, ok := d.(*decisionDialog); ok && !pending[dd.r.ReviewID] {
			dialogFor[dd.r.ReviewID] = true
			if dd.elsewhere {
				kept = append(kept, d)
				continue
			}
			cmds = append(cmds, m.decidedElsewhereCmd(dd.r, false))
			if dd.typed() {
				dd.elsewhere = true
				dd.input.Blur()
				dd.valueIn.Blur()
				kept = append(kept, d)
				continue
			}
			m.setStatus("gate "+dd.r.StepID+" of "+shortID(dd.r.FlowID)+" was decided elsewhere; dialog closed", nil)
			continue
		}
		kept = append(kept, d)
	}
	m.dialogs = kept
	for _, r := range before {
		if !pending[r.ReviewID] && !dialogFor[r.ReviewID] {
			cmds = append(cmds, m.decidedElsewhereCmd(r, true))
		}
	}
	return tea.Batch(cmds...)
}

// handleDecided shows who decided a gate that left the list: in its kept
// dialog and the status line, or (no dialog was open) only when its
// deadline decided it.
func (m *Model) handleDecided(msg decidedMsg) {
	rec := msg.rec
	if msg.err != nil {
		rec = nil
	}
	for _, d := range m.dialogs {
		if dd, ok := d.(*decisionDialog); ok && dd.elsewhere && dd.r.ReviewID == msg.r.ReviewID {
			dd.decided = decidedText(msg.r, rec, "")
			m.setStatus(decidedText(msg.r, rec, "your rationale is kept in its dialog (esc closes it)"), nil)
			return
		}
	}
	switch {
	case !msg.silent:
		m.setStatus(decidedText(msg.r, rec, "dialog closed"), nil)
	case timedOut(rec):
		m.setStatus(decidedText(msg.r, rec, ""), nil)
	}
}

// dropStaleGateCtx forgets the context of gates no longer pending.
func (m *Model) dropStaleGateCtx() {
	pending := map[string]bool{}
	for _, r := range m.reviews {
		pending[r.ReviewID] = true
	}
	for id := range m.gateCtx {
		if !pending[id] {
			delete(m.gateCtx, id)
		}
	}
}

// ---- dialogs ----

func (m *Model) pushDialog(d dialog) { m.dialogs = append(m.dialogs, d) }

func (m *Model) popDialog() {
	if n := len(m.dialogs); n > 0 {
		if dd, ok := m.dialogs[n-1].(*decisionDialog); ok {
			m.closedReview, m.closedReviewAt = dd.r.ReviewID, m.now()
		}
		m.dialogs = m.dialogs[:n-1]
	}
}

func (m *Model) hasDialogFor(reviewID string) bool {
	for _, d := range m.dialogs {
		if dd, ok := d.(*decisionDialog); ok && dd.r.ReviewID == reviewID {
			return true
		}
	}
	return false
}

// ---- selection ----

// focusFlowID is the flow the detail panes show: the one selected in the
// focused pane when it selects flows (a gate's flow in Gates), else the one
// selected in the first pane that selects flows (Flows).
func (m *Model) focusFlowID() string {
	if s, ok := m.focused().(flowSelector); ok {
		return s.selectedFlow(&m.common)
	}
	for _, p := range m.panes {
		if s, ok := p.(flowSelector); ok {
			return s.selectedFlow(&m.common)
		}
	}
	return ""
}

// refreshPanes keeps every pane's cursor within its rows after the shared
// state (or a filter) changed.
func (m *Model) refreshPanes() {
	for _, p := range m.panes {
		p.base().l.clamp(p.Len(&m.common))
	}
}
