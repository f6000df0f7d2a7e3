package tui

import (
	"context"
	"errors"
	"io"
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

	// panes are the panes to show (registeredPanes when nil); Keys must
	// have been built for them (newKeyMap).
	panes []paneDef
}

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

	// Runs started from the Specs pane still running, and the flows whose
	// gates they offered (the Sink): quitting while one waits at a gate asks
	// first.
	runs     int
	runFlows map[string]bool
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
			gateCtx: map[string]*gateContext{}},
		opt:            opt,
		input:          ti,
		runFlows:       map[string]bool{},
		gateCtxLoading: map[string]bool{},
	}
	m.panes = newPanes(opt.panes, &m.keys)
	m.layout()
	return m
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
		if msg.err != nil {
			m.setStatus(decidedText(msg.r, nil), nil)
		} else {
			m.setStatus(decidedText(msg.r, msg.rec), nil)
		}
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

func (m *Model) setStatus(text string, err error) {
	if err != nil {
		m.status, m.statusErr = clean(err.Error()), true
		return
	}
	m.status, m.statusErr = clean(text), false
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
	// The panes that select flows stay on the flow they were on.
	selected := make([]string, len(m.panes))
	for i, p := range m.panes {
		if s, ok := p.(flowSelector); ok {
			selected[i] = s.selectedFlow(&m.common)
		}
	}
	m.flows = msg.flows
	m.reviews = msg.reviews
	// Oldest first: the gate that has waited longest comes first.
	sort.SliceStable(m.reviews, func(i, j int) bool { return m.reviews[i].OpenedAt.Before(m.reviews[j].OpenedAt) })
	m.dropStaleGateCtx()
	cmds = append(cmds, m.closeStaleDialogs())
	m.refreshPanes()
	for i, p := range m.panes {
		if s, ok := p.(flowSelector); ok && selected[i] != "" {
			s.selectFlow(&m.common, selected[i])
		}
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
			m.setStatus("", msg.err)
		}
		m.detail, m.detailEvents = nil, nil
		return nil
	}
	m.detail, m.detailEvents = msg.state, msg.events
	m.refreshPanes()
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
// (decided elsewhere, timed out, or a later round); the command it returns
// reads who decided, the outcome and the rationale, for the notice.
func (m *Model) closeStaleDialogs() tea.Cmd {
	pending := map[string]bool{}
	for _, r := range m.reviews {
		pending[r.ReviewID] = true
	}
	var cmds []tea.Cmd
	kept := m.dialogs[:0]
	for _, d := range m.dialogs {
		if dd, ok := d.(*decisionDialog); ok && !pending[dd.r.ReviewID] {
			m.setStatus("gate "+dd.r.StepID+" of "+shortID(dd.r.FlowID)+" was decided elsewhere; dialog closed", nil)
			cmds = append(cmds, m.decidedElsewhereCmd(dd.r))
			continue
		}
		kept = append(kept, d)
	}
	m.dialogs = kept
	return tea.Batch(cmds...)
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

// ---- keys ----

// handleKey takes one key message. Several runes may arrive in one message
// (fast typing, a laggy connection: one read holds several keys); each is
// a key of its own, so `jjj` moves three rows and `:gates` typed quickly
// opens the command line and types "gates" into it. Runes that reach a text
// input go in whole, and a paste (bracketed) is only ever text: outside a
// text input it is ignored, so pasted text never presses keys (never
// decides a gate).
func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	// esc and the next key in one read arrive as alt+key: unless some
	// action is bound to that alt key, they are esc, then the key.
	if msg.Type == tea.KeyRunes && msg.Alt && !msg.Paste && !m.bound(msg) {
		escCmd := m.routeKey(tea.KeyMsg{Type: tea.KeyEsc})
		msg.Alt = false
		return tea.Batch(escCmd, m.handleKey(msg))
	}
	if msg.Type != tea.KeyRunes || (len(msg.Runes) <= 1 && !msg.Paste) {
		return m.routeKey(msg)
	}
	var cmds []tea.Cmd
	runes := msg.Runes
	for len(runes) > 0 {
		if m.takesText() {
			cmds = append(cmds, m.routeKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: runes, Alt: msg.Alt, Paste: msg.Paste}))
			break
		}
		if msg.Paste {
			break
		}
		cmds = append(cmds, m.routeKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: runes[:1], Alt: msg.Alt}))
		runes = runes[1:]
	}
	return tea.Batch(cmds...)
}

// bound reports whether any action is bound to msg.
func (m *Model) bound(msg tea.KeyMsg) bool {
	for _, b := range m.keys.Actions() {
		if key.Matches(msg, *b) {
			return true
		}
	}
	return false
}

// textEntry is a dialog that may be taking text (a rationale, a label, a
// run's inputs).
type textEntry interface{ takesText() bool }

// takesText reports whether the next key goes into a text input: the `/`
// or `:` line, or a dialog typing text.
func (m *Model) takesText() bool {
	if n := len(m.dialogs); n > 0 {
		t, ok := m.dialogs[n-1].(textEntry)
		return ok && t.takesText()
	}
	return m.inputMode != inputNone
}

// routeKey routes a key: to the top dialog (after its grace period), to
// the `/` or `:` input, to the global keys, to the list keys, and last to
// the focused pane.
func (m *Model) routeKey(msg tea.KeyMsg) tea.Cmd {
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
	n := len(m.panes)
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Copy):
		return m.copyIDCmd()
	case key.Matches(msg, k.Help):
		m.pushDialog(&helpDialog{})
		return nil
	case key.Matches(msg, k.Filter):
		m.inputMode = inputFilter
		m.input.SetValue(m.focused().base().filter)
		m.input.CursorEnd()
		m.input.Focus()
		return nil
	case key.Matches(msg, k.Command):
		m.inputMode = inputCommand
		m.input.SetValue("")
		m.input.Focus()
		return nil
	case key.Matches(msg, k.NextPane):
		return m.setFocus((m.focus + 1) % n)
	case key.Matches(msg, k.PrevPane):
		return m.setFocus((m.focus + n - 1) % n)
	case key.Matches(msg, k.Back):
		if b := m.focused().base(); b.filter != "" {
			b.filter = ""
			m.refreshPanes()
			return m.reloadDetailCmd()
		}
		m.status = ""
		if m.focus != 0 {
			return m.setFocus(0)
		}
		return nil
	}
	for i, p := range m.panes {
		if pk := m.keys.paneKeys(p.Title()); pk != nil && key.Matches(msg, pk.Focus) {
			return m.setFocus(i)
		}
	}
	if cmd, ok := m.handleListKey(msg); ok {
		return cmd
	}
	if _, gates := m.focused().(*gatesPane); !gates {
		if o, ok := decisionOf(k, msg); ok {
			return m.decideAnywhere(o)
		}
	}
	return m.focused().Update(m, msg)
}

// decisionOf is the outcome a decision key asks for.
func decisionOf(k KeyMap, msg tea.KeyMsg) (review.Outcome, bool) {
	switch {
	case key.Matches(msg, k.Approve):
		return review.Approve, true
	case key.Matches(msg, k.Revise):
		return review.Revise, true
	case key.Matches(msg, k.Kill):
		return review.Kill, true
	}
	return "", false
}

// decideAnywhere is a decision key pressed outside the Gates pane: it
// opens the decision dialog of the gate the focused pane is about (the
// selected flow's, when it waits at one), else of the gate that has waited
// longest, so `a` right after launch approves the waiting gate in three
// keys besides the rationale (a, enter, a). The dialog names the gate and
// asks for the outcome key again before anything is recorded.
func (m *Model) decideAnywhere(o review.Outcome) tea.Cmd {
	if len(m.reviews) == 0 {
		m.setStatus("", errors.New("no gate is waiting for a decision"))
		return nil
	}
	r := m.reviews[0]
	if id := m.focusFlowID(); id != "" {
		for _, x := range m.reviews {
			if x.FlowID == id {
				r = x
				break
			}
		}
	}
	return m.openDecision(r, o)
}

// openDecision opens the dialog deciding r with outcome o (refused, with a
// message, when the gate does not accept o).
func (m *Model) openDecision(r review.PendingReview, o review.Outcome) tea.Cmd {
	if !allowed(r, o) {
		m.setStatus("", errors.New("gate "+r.StepID+" does not accept "+string(o)))
		return nil
	}
	m.status = ""
	m.pushDialog(newDecisionDialog(r, o, false, m.now()))
	return nil
}

// quit ends the console, after asking when a run started here waits at a
// gate (quitting stops it there).
func (m *Model) quit() tea.Cmd {
	if r, ok := m.runWaiting(); ok {
		m.pushDialog(&quitDialog{r: r})
		return nil
	}
	m.quitting = true
	return tea.Quit
}

// runWaiting is a gate at which a run started from the Specs pane (still
// running in this process) waits.
func (m *Model) runWaiting() (review.PendingReview, bool) {
	if m.runs == 0 {
		return review.PendingReview{}, false
	}
	for _, r := range m.reviews {
		if m.runFlows[r.FlowID] {
			return r, true
		}
	}
	return review.PendingReview{}, false
}

// focused is the pane with the focus.
func (m *Model) focused() pane { return m.panes[m.focus] }

// setFocus switches panes; a pane switch clears the status message.
func (m *Model) setFocus(i int) tea.Cmd {
	m.focus = i
	m.status, m.statusErr = "", false
	return m.reloadDetailCmd()
}

// focusPaneOf focuses the pane of type T (if there is one).
func focusPaneOf[T pane](m *Model) tea.Cmd {
	if _, i := findPane[T](m.panes); i >= 0 {
		return m.setFocus(i)
	}
	return nil
}

func (m *Model) handleListKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	p := m.focused()
	l := &p.base().l
	n := p.Len(&m.common)
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
	if _, ok := p.(flowSelector); ok {
		return m.reloadDetailCmd(), true
	}
	return nil, true
}

func (m *Model) handleInputKey(msg tea.KeyMsg) tea.Cmd {
	b := m.focused().base()
	switch msg.Type {
	case tea.KeyEsc:
		if m.inputMode == inputFilter {
			b.filter = ""
			m.refreshPanes()
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
		b.filter = m.input.Value()
		b.l = listState{}
		m.refreshPanes()
	}
	return cmd
}

// paneCommands are the `:` commands that focus a pane (the panes' titles in
// lower case).
func (m *Model) paneCommands() []string {
	out := make([]string, 0, len(m.panes))
	for _, p := range m.panes {
		out = append(out, strings.ToLower(p.Title()))
	}
	return out
}

// runCommand executes a `:` command line.
func (m *Model) runCommand(line string) tea.Cmd {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil
	}
	name, args := strings.ToLower(fields[0]), fields[1:]
	m.status, m.statusErr = "", false
	for i, p := range m.paneCommands() {
		if strings.HasPrefix(p, name) && len(name) >= 2 {
			return m.setFocus(i)
		}
	}
	switch name {
	case "q", "quit", "exit":
		return m.quit()
	case "help":
		m.pushDialog(&helpDialog{})
		return nil
	case "filter":
		m.focused().base().filter = strings.Join(args, " ")
		m.refreshPanes()
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
	m.setStatus("", errors.New("unknown command \""+name+"\" (try "+strings.Join(m.paneCommands(), ", ")+", "+otherCommands+")"))
	return nil
}

// otherCommands are the `:` commands besides the panes'.
const otherCommands = "filter TEXT, commit LABEL, revert LABEL, help, quit"

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
