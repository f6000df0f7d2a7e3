package tui

import (
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/review"
)

// Key routing of the root model: what a key does depends on what has the
// focus — a dialog, the text input, the decision keys that work in every
// pane, the list keys, then the focused pane's own keys.

// handleKey takes one key message. Several runes may arrive in one message
// (fast typing, a laggy connection: one read holds several keys); each is
// a key of its own, so `jjj` moves three rows and `:gates` typed quickly
// opens the command line and types "gates" into it. Typed runes reach a
// text input one by one too: a burst that spells a key's name ("right",
// "home") would otherwise be taken for that key (key.Matches compares the
// message's text) and lost. A paste (bracketed) is only ever text: it goes
// into a text input whole, and outside one it is ignored, so pasted text
// never presses keys (never decides a gate).
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
		if msg.Paste {
			if m.takesText() {
				cmds = append(cmds, m.routeKey(msg))
			}
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
			return tea.Batch(m.refilter(), m.reloadDetailCmd())
		}
		m.clearStatus()
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
	if r, ok := m.focused().(reader); ok && r.scroll(&m.common, msg) {
		return nil
	}
	if key.Matches(msg, k.Pager) {
		return m.pagerCmd()
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
// opens the decision dialog of the gate of the flow the focused pane is
// about (the selected flow), and only of that one: a flow that waits at no
// gate says so, naming how many gates wait in the Gates pane, rather than
// open another flow's gate. With one flow waiting, `a`, the rationale,
// enter, `a` approve its gate from the pane the console opens on. The
// dialog names the gate and asks for the outcome key again before anything
// is recorded.
func (m *Model) decideAnywhere(o review.Outcome) tea.Cmd {
	id := m.focusFlowID()
	for _, r := range m.reviews {
		if id != "" && r.FlowID == id {
			return m.openDecision(r, o)
		}
	}
	what := "no flow is selected"
	if id != "" {
		what = "flow " + shortID(id) + " is not waiting at a gate"
		if sum := m.summaryOf(id); sum != nil {
			what = "flow " + clean(sum.FlowName) + " (" + shortID(id) + ") is not waiting at a gate"
		}
	}
	switch n := len(m.reviews); n {
	case 0:
		what += "; no gate is waiting for a decision"
	default:
		what += fmt.Sprintf("; %d gate%s wait%s in the Gates pane (%s)", n, plural(n), map[bool]string{true: "s"}[n == 1], m.gatesKey())
	}
	m.setStatus("", errors.New(what))
	return nil
}

// gatesKey is the key that focuses the Gates pane, for messages.
func (m *Model) gatesKey() string {
	if pk := m.keys.paneKeys(gatesPaneDef.title); pk != nil {
		return keyName(pk.Focus)
	}
	return ":gates"
}

// openDecision opens the dialog deciding r with outcome o (refused, with a
// message, when the gate does not accept o).
func (m *Model) openDecision(r review.PendingReview, o review.Outcome) tea.Cmd {
	if !allowed(r, o) {
		m.setStatus("", errors.New("gate "+r.StepID+" does not accept "+string(o)))
		return nil
	}
	m.clearStatus()
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
	m.clearStatus()
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
		if cmd := m.ensureWindow(); cmd != nil {
			return cmd, true // the detail follows when the pages arrive
		}
		return m.reloadDetailCmd(), true
	}
	return nil, true
}

// refilter follows a change of the focused pane's filter: the Flows pane's
// rows are the store's, so its filter takes a pass over the listing
// (coalesced with any in flight, as a reload).
func (m *Model) refilter() tea.Cmd {
	m.refreshPanes()
	if _, ok := m.focused().(*flowsPane); ok {
		return m.refilterCmd()
	}
	return nil
}

func (m *Model) handleInputKey(msg tea.KeyMsg) tea.Cmd {
	b := m.focused().base()
	switch msg.Type {
	case tea.KeyEsc:
		var cmd tea.Cmd
		if m.inputMode == inputFilter {
			b.filter = ""
			cmd = m.refilter()
		}
		m.inputMode = inputNone
		m.input.Blur()
		return tea.Batch(cmd, m.reloadDetailCmd())
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
		changed := b.filter != m.input.Value()
		b.filter = m.input.Value()
		b.l = listState{}
		m.refreshPanes()
		if changed {
			cmd = tea.Batch(cmd, m.refilter())
		}
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
	m.clearStatus()
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
		return tea.Batch(m.refilter(), m.reloadDetailCmd())
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
	case "kill":
		id, reason := m.focusFlowID(), strings.Join(args, " ")
		if id == "" || reason == "" {
			m.setStatus("", errors.New("usage: kill REASON (with a flow selected): ends a flow nothing drives any more, recorded with the reason"))
			return nil
		}
		m.pushDialog(&killDialog{flowID: id, reason: reason})
		return nil
	}
	m.setStatus("", errors.New("unknown command \""+name+"\" (try "+strings.Join(m.paneCommands(), ", ")+", "+otherCommands+")"))
	return nil
}

// otherCommands are the `:` commands besides the panes'.
const otherCommands = "filter TEXT, commit LABEL, revert LABEL, kill REASON, help, quit"
