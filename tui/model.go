package tui

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs/watch"
)

// Grace-period defaults for dialogs that open asynchronously.
const (
	DefaultGraceQuiet = 400 * time.Millisecond
	DefaultGraceMax   = 2 * time.Second
)

// Options configure a Model.
type Options struct {
	Source   Source
	Keys     KeyMap
	Styles   Styles
	Reviewer string // identity recorded with decisions ($USER)
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
	// Tick is the countdown refresh interval (1 s when zero; negative
	// disables it, for tests).
	Tick time.Duration
}

type paneID int

const (
	paneFlows paneID = iota
	paneTrace
	paneGates
	paneCheckpoints
	paneIterations
	paneSpecs
	numPanes
)

var paneNames = [numPanes]string{"Flows", "Trace", "Gates", "Checkpoints", "Iterations", "Specs"}

// Messages. Results of commands carry what they are for, so a stale answer
// can be recognised.
type (
	snapshotMsg struct {
		flows   []engine.FlowSummary
		reviews []review.PendingReview
		err     error
	}
	detailMsg struct {
		flowID string
		state  *engine.FlowState
		events []engine.Event
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

// Model is the root (and only) Bubble Tea model of the console.
type Model struct {
	opt    Options
	keys   KeyMap
	st     Styles
	now    func() time.Time
	width  int
	height int
	focus  paneID

	flows   []engine.FlowSummary
	reviews []review.PendingReview
	specs   map[string]watch.Update
	loaded  bool
	loadErr error

	// Snapshot reload coalescing.
	loading, dirty bool
	// Detail of the flow the focused pane is about.
	detailID      string
	detail        *engine.FlowState
	detailEvents  []engine.Event
	detailLoading bool
	detailDirty   bool

	lists    [numPanes]listState
	filters  [numPanes]string
	expanded map[uint64]bool // trace lines expanded (by event seq)

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
	quitting  bool
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
	if opt.Reviews == nil && opt.Sink != nil {
		opt.Reviews = opt.Sink.Reviews()
	}
	if opt.Reviewer == "" {
		opt.Reviewer = "unknown"
	}
	if opt.Keys.Quit.Keys() == nil {
		opt.Keys = DefaultKeyMap()
	}
	ti := newInput()
	ti.Prompt = ""
	ti.CharLimit = 500
	return &Model{
		opt: opt, keys: opt.Keys, st: opt.Styles, now: opt.Now,
		width: 80, height: 24,
		specs:    map[string]watch.Update{},
		expanded: map[uint64]bool{},
		input:    ti,
	}
}

// Init loads the first snapshot and starts listening.
func (m *Model) Init() tea.Cmd {
	m.loading = true
	cmds := []tea.Cmd{m.snapshotCmd(), m.waitEventsCmd(), m.waitSpecsCmd(), m.waitReviewsCmd(), m.tickCmd()}
	return tea.Batch(cmds...)
}

// Update dispatches by message kind; it does no I/O.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.handleResize(msg)
		return m, nil
	case tea.KeyMsg:
		return m, m.handleKey(msg)
	case snapshotMsg:
		return m, m.handleSnapshot(msg)
	case detailMsg:
		return m, m.handleDetail(msg)
	case eventsMsg:
		return m, m.handleEngineEvents(msg)
	case eventsEndMsg:
		return m, nil
	case specMsg:
		m.handleSpec(watch.Update(msg))
		return m, m.waitSpecsCmd()
	case reviewMsg:
		return m, m.handleReviewEvent(review.PendingReview(msg))
	case tickMsg:
		return m, m.tickCmd()
	case actionMsg:
		m.setStatus(msg.text, msg.err)
		return m, m.reloadCmd()
	case runDoneMsg:
		return m, m.handleRunDone(msg)
	}
	return m, nil
}

func (m *Model) handleResize(msg tea.WindowSizeMsg) {
	m.width, m.height = msg.Width, msg.Height
	m.input.Width = max(10, m.width-4)
}

func (m *Model) setStatus(text string, err error) {
	if err != nil {
		m.status, m.statusErr = err.Error(), true
		return
	}
	m.status, m.statusErr = text, false
}

// ---- commands (all I/O is here) ----

func (m *Model) snapshotCmd() tea.Cmd {
	src := m.opt.Source
	return func() tea.Msg {
		ctx := context.Background()
		flows, err := src.Flows(ctx)
		if err != nil {
			return snapshotMsg{err: err}
		}
		reviews, err := src.PendingReviews(ctx)
		return snapshotMsg{flows: flows, reviews: reviews, err: err}
	}
}

func (m *Model) detailCmd(flowID string) tea.Cmd {
	src := m.opt.Source
	return func() tea.Msg {
		ctx := context.Background()
		st, err := src.Get(ctx, flowID)
		if err != nil {
			return detailMsg{flowID: flowID, err: err}
		}
		evs, err := src.FlowEvents(ctx, flowID)
		return detailMsg{flowID: flowID, state: st, events: evs, err: err}
	}
}

// reloadCmd reloads the snapshot, or marks it dirty when a load is in flight.
func (m *Model) reloadCmd() tea.Cmd {
	if m.loading {
		m.dirty = true
		return nil
	}
	m.loading = true
	return m.snapshotCmd()
}

// reloadDetailCmd (re)loads the detail of the flow the focus is about.
func (m *Model) reloadDetailCmd() tea.Cmd {
	id := m.focusFlowID()
	if id == "" {
		m.detailID, m.detail, m.detailEvents = "", nil, nil
		return nil
	}
	if m.detailLoading {
		m.detailDirty = true
		return nil
	}
	if id != m.detailID {
		m.detailID, m.detail, m.detailEvents = id, nil, nil
		m.lists[paneTrace] = listState{}
		m.lists[paneCheckpoints] = listState{}
		m.lists[paneIterations] = listState{}
	}
	m.detailLoading = true
	return m.detailCmd(id)
}

func (m *Model) waitEventsCmd() tea.Cmd {
	ch := m.opt.Events
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		evs, ok := <-ch
		if !ok {
			return eventsEndMsg{}
		}
		return eventsMsg(evs)
	}
}

func (m *Model) waitSpecsCmd() tea.Cmd {
	ch := m.opt.Specs
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		u, ok := <-ch
		if !ok {
			return nil
		}
		return specMsg(u)
	}
}

func (m *Model) waitReviewsCmd() tea.Cmd {
	ch := m.opt.Reviews
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		r, ok := <-ch
		if !ok {
			return nil
		}
		return reviewMsg(r)
	}
}

func (m *Model) tickCmd() tea.Cmd {
	if m.opt.Tick < 0 {
		return nil
	}
	return tea.Tick(m.opt.Tick, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *Model) decideCmd(r review.PendingReview, outcome review.Outcome, rationale string) tea.Cmd {
	src := m.opt.Source
	round := r.Round
	d := review.Decision{
		ReviewID: r.ReviewID, FlowID: r.FlowID, StepID: r.StepID, Round: &round,
		Outcome: outcome, Rationale: rationale, Reviewer: m.opt.Reviewer,
		ResolvedBy: review.Human, Channel: review.ChannelTUI,
	}
	return func() tea.Msg {
		out, err := src.GateResolve(context.Background(), r.FlowID, d)
		if e := engine.AsError(err); e != nil {
			if e.Committed() {
				return actionMsg{text: string(outcome) + " recorded for " + r.StepID + ": " + errorText(e)}
			}
			return actionMsg{err: errors.New("gate " + r.StepID + " of " + shortID(r.FlowID) + ": " + errorText(e))}
		}
		if err != nil {
			return actionMsg{err: err}
		}
		return actionMsg{text: pastTense(outcome) + " " + r.StepID + " of " + r.FlowName + " (" + shortID(r.FlowID) + "); next: " + out.WireStatus()}
	}
}

func (m *Model) checkpointCmd(revert bool, flowID, label string) tea.Cmd {
	src := m.opt.Source
	return func() tea.Msg {
		var err error
		verb := "committed"
		if revert {
			verb = "reverted to"
			_, err = src.Revert(context.Background(), flowID, label)
		} else {
			_, err = src.Commit(context.Background(), flowID, label)
		}
		if e := engine.AsError(err); e != nil {
			return actionMsg{err: errors.New(errorText(e))}
		}
		if err != nil {
			return actionMsg{err: err}
		}
		return actionMsg{text: verb + " checkpoint " + label + " of " + shortID(flowID)}
	}
}

// errorText is how an engine refusal reads in the status line.
func errorText(e *engine.Error) string { return string(e.Type) + ": " + e.Message }

func pastTense(o review.Outcome) string {
	switch o {
	case review.Approve:
		return "approved"
	case review.Revise:
		return "sent back for revision:"
	case review.Kill:
		return "killed at"
	}
	return string(o)
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
	m.loaded, m.loadErr = true, nil
	m.flows = msg.flows
	m.reviews = msg.reviews
	sort.SliceStable(m.reviews, func(i, j int) bool { return m.reviews[i].OpenedAt.Before(m.reviews[j].OpenedAt) })
	m.closeStaleDialogs()
	m.clampLists()
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
			m.setStatus("", msg.err)
		}
		m.detail, m.detailEvents = nil, nil
		return nil
	}
	m.detail, m.detailEvents = msg.state, msg.events
	m.clampLists()
	return nil
}

// handleEngineEvents reacts to new store events: one reload per burst.
func (m *Model) handleEngineEvents(evs eventsMsg) tea.Cmd {
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
	m.clampLists()
}

// handleReviewEvent is a gate offered through the Sink: show it and open
// its dialog (asynchronously, so with a grace period).
func (m *Model) handleReviewEvent(r review.PendingReview) tea.Cmd {
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
// (decided elsewhere, timed out, or a later round).
func (m *Model) closeStaleDialogs() {
	pending := map[string]bool{}
	for _, r := range m.reviews {
		pending[r.ReviewID] = true
	}
	kept := m.dialogs[:0]
	for _, d := range m.dialogs {
		if dd, ok := d.(*decisionDialog); ok && !pending[dd.r.ReviewID] {
			m.setStatus("gate "+dd.r.StepID+" of "+shortID(dd.r.FlowID)+" was decided elsewhere; dialog closed", nil)
			continue
		}
		kept = append(kept, d)
	}
	m.dialogs = kept
}

// ---- keys ----

func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	now := m.now()
	defer func() { m.lastKeyAt = now }()
	if len(m.dialogs) > 0 {
		d := m.dialogs[len(m.dialogs)-1]
		if g := d.grace(); g != nil && g.blocks(now, m.lastKeyAt, m.opt.GraceQuiet, m.opt.GraceMax) {
			return nil
		}
		return d.handleKey(m, msg)
	}
	if m.inputMode != inputNone {
		return m.handleInputKey(msg)
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		m.quitting = true
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.pushDialog(&helpDialog{})
		return nil
	case key.Matches(msg, k.Filter):
		m.inputMode = inputFilter
		m.input.SetValue(m.filters[m.focus])
		m.input.CursorEnd()
		m.input.Focus()
		return nil
	case key.Matches(msg, k.Command):
		m.inputMode = inputCommand
		m.input.SetValue("")
		m.input.Focus()
		return nil
	case key.Matches(msg, k.NextPane):
		return m.setFocus((m.focus + 1) % numPanes)
	case key.Matches(msg, k.PrevPane):
		return m.setFocus((m.focus + numPanes - 1) % numPanes)
	case key.Matches(msg, k.Back):
		if m.filters[m.focus] != "" {
			m.filters[m.focus] = ""
			m.clampLists()
			return m.reloadDetailCmd()
		}
		m.status = ""
		if m.focus != paneFlows {
			return m.setFocus(paneFlows)
		}
		return nil
	}
	for i, b := range []key.Binding{k.Flows, k.Trace, k.Gates, k.Checkpoints, k.Iterations, k.Specs} {
		if key.Matches(msg, b) {
			return m.setFocus(paneID(i))
		}
	}
	if cmd, ok := m.handleListKey(msg); ok {
		return cmd
	}
	return m.handlePaneKey(msg)
}

func (m *Model) setFocus(p paneID) tea.Cmd {
	m.focus = p
	return m.reloadDetailCmd()
}

func (m *Model) handleListKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	l := &m.lists[m.focus]
	n := m.rowCount(m.focus)
	page := max(1, m.bodyHeight()-2)
	k := m.keys
	switch {
	case key.Matches(msg, k.Up):
		l.move(-1, n)
	case key.Matches(msg, k.Down):
		l.move(1, n)
	case key.Matches(msg, k.PageUp):
		l.move(-page, n)
	case key.Matches(msg, k.PageDown):
		l.move(page, n)
	case key.Matches(msg, k.Top):
		l.move(-n, n)
	case key.Matches(msg, k.Bottom):
		l.move(n, n)
	default:
		return nil, false
	}
	if m.focus == paneFlows || m.focus == paneGates {
		return m.reloadDetailCmd(), true
	}
	return nil, true
}

// handlePaneKey handles the focused pane's own keys.
func (m *Model) handlePaneKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	switch m.focus {
	case paneFlows:
		if key.Matches(msg, k.Open) && m.focusFlowID() != "" {
			return m.setFocus(paneTrace)
		}
	case paneSpecs:
		if key.Matches(msg, k.Open) {
			m.openRunDialog()
		}
	case paneTrace:
		if key.Matches(msg, k.Open) {
			if lines := m.traceLines(); len(lines) > 0 {
				seq := lines[m.lists[paneTrace].cursor].seq
				m.expanded[seq] = !m.expanded[seq]
			}
		}
	case paneGates:
		r, ok := m.selectedReview()
		if !ok {
			return nil
		}
		var outcome review.Outcome
		switch {
		case key.Matches(msg, k.Approve):
			outcome = review.Approve
		case key.Matches(msg, k.Revise):
			outcome = review.Revise
		case key.Matches(msg, k.Kill):
			outcome = review.Kill
		default:
			return nil
		}
		if !allowed(r, outcome) {
			m.setStatus("", errors.New("gate "+r.StepID+" does not accept "+string(outcome)))
			return nil
		}
		m.pushDialog(newDecisionDialog(r, outcome, false, m.now()))
	case paneCheckpoints:
		id := m.focusFlowID()
		if id == "" {
			return nil
		}
		switch {
		case key.Matches(msg, k.Commit):
			m.pushDialog(newLabelDialog(id))
		case key.Matches(msg, k.Revert):
			cps := m.checkpoints()
			if len(cps) == 0 {
				m.setStatus("", errors.New("no checkpoint to revert to"))
				return nil
			}
			m.pushDialog(&confirmDialog{flowID: id, label: cps[m.lists[paneCheckpoints].cursor].Label})
		}
	}
	return nil
}

func allowed(r review.PendingReview, o review.Outcome) bool {
	if len(r.Outcomes) == 0 {
		return true
	}
	for _, x := range r.Outcomes {
		if x == o {
			return true
		}
	}
	return false
}

func (m *Model) handleInputKey(msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEsc:
		if m.inputMode == inputFilter {
			m.filters[m.focus] = ""
			m.clampLists()
		}
		m.inputMode = inputNone
		m.input.Blur()
		return m.reloadDetailCmd()
	case tea.KeyEnter:
		mode := m.inputMode
		m.inputMode = inputNone
		m.input.Blur()
		if mode == inputCommand {
			return m.runCommand(m.input.Value())
		}
		return m.reloadDetailCmd()
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	if m.inputMode == inputFilter {
		m.filters[m.focus] = m.input.Value()
		m.lists[m.focus] = listState{}
		m.clampLists()
	}
	return cmd
}

// runCommand executes a `:` command line.
func (m *Model) runCommand(line string) tea.Cmd {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil
	}
	name, args := strings.ToLower(fields[0]), fields[1:]
	for i, p := range paneNames {
		if strings.HasPrefix(strings.ToLower(p), name) && len(name) >= 2 {
			return m.setFocus(paneID(i))
		}
	}
	switch name {
	case "q", "quit", "exit":
		m.quitting = true
		return tea.Quit
	case "help":
		m.pushDialog(&helpDialog{})
		return nil
	case "filter":
		m.filters[m.focus] = strings.Join(args, " ")
		m.clampLists()
		return m.reloadDetailCmd()
	case "commit":
		id := m.focusFlowID()
		if id == "" || len(args) != 1 {
			m.setStatus("", errors.New("usage: commit LABEL (with a flow selected)"))
			return nil
		}
		return m.checkpointCmd(false, id, args[0])
	case "revert":
		id := m.focusFlowID()
		if id == "" || len(args) != 1 {
			m.setStatus("", errors.New("usage: revert LABEL (with a flow selected)"))
			return nil
		}
		m.pushDialog(&confirmDialog{flowID: id, label: args[0]})
		return nil
	}
	m.setStatus("", errors.New("unknown command "+strconvQuote(name)+" (try flows, trace, gates, checkpoints, iterations, specs, filter TEXT, commit LABEL, revert LABEL, help, quit)"))
	return nil
}

func strconvQuote(s string) string { return "\"" + s + "\"" }

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

// focusFlowID is the flow the detail panes show: the selected gate's flow in
// the Gates pane, else the flow selected in the Flows pane.
func (m *Model) focusFlowID() string {
	if m.focus == paneGates {
		if r, ok := m.selectedReview(); ok {
			return r.FlowID
		}
		return ""
	}
	fl := m.visibleFlows()
	if len(fl) == 0 {
		return ""
	}
	return fl[min(m.lists[paneFlows].cursor, len(fl)-1)].FlowID
}

func (m *Model) selectedReview() (review.PendingReview, bool) {
	rs := m.visibleReviews()
	if len(rs) == 0 {
		return review.PendingReview{}, false
	}
	return rs[min(m.lists[paneGates].cursor, len(rs)-1)], true
}

func (m *Model) clampLists() {
	for p := paneID(0); p < numPanes; p++ {
		m.lists[p].clamp(m.rowCount(p))
	}
}

// listState is a cursor and a scroll offset.
type listState struct{ cursor, offset int }

func (l *listState) move(d, n int) {
	l.cursor += d
	l.clamp(n)
}

func (l *listState) clamp(n int) {
	if l.cursor >= n {
		l.cursor = n - 1
	}
	if l.cursor < 0 {
		l.cursor = 0
	}
}

// window returns the first visible row for height rows, keeping the cursor
// in view.
func (l *listState) window(height, n int) int {
	if height <= 0 {
		return 0
	}
	if l.cursor < l.offset {
		l.offset = l.cursor
	}
	if l.cursor >= l.offset+height {
		l.offset = l.cursor - height + 1
	}
	if l.offset > max(0, n-height) {
		l.offset = max(0, n-height)
	}
	return l.offset
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
