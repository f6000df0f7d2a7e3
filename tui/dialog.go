package tui

import (
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// dialog is one entry of the overlay stack. Only the top dialog gets keys.
type dialog interface {
	handleKey(m *Model, msg tea.KeyMsg) tea.Cmd
	view(m *Model, width int) string
	// grace is the dialog's grace period, or nil when it has none.
	grace() *grace
	// help is the footer while the dialog is on top: its own keys (the
	// main screen's do not work in it).
	help(m *Model) []key.Binding
}

// hint is a footer entry naming keys by text (a dialog's keys, some of
// which are not bindings of the KeyMap, such as esc).
func hint(keys, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(keys), key.WithHelp(keys, desc))
}

// grace keeps an asynchronously opened dialog from consuming keys the user
// was typing elsewhere: keys are ignored until the user pauses for quiet, or
// until max has passed since the dialog opened.
type grace struct {
	openedAt time.Time
	armed    bool
}

// blocks reports whether a key arriving at now must be ignored, given when
// the previous key arrived.
func (g *grace) blocks(now, lastKey time.Time, quiet, maxDelay time.Duration) bool {
	if g.armed {
		return false
	}
	if now.Sub(g.openedAt) >= maxDelay || now.Sub(lastKey) >= quiet {
		g.armed = true
		return false
	}
	return true
}

// waiting reports, without arming, whether keys would still be ignored.
func (g *grace) waiting(now, lastKey time.Time, quiet, maxDelay time.Duration) bool {
	return !g.armed && now.Sub(g.openedAt) < maxDelay && now.Sub(lastKey) < quiet
}

// newInput returns a text input with a steady cursor: a blinking one would
// redraw the screen twice a second for nothing.
func newInput() textinput.Model {
	ti := textinput.New()
	ti.Cursor.SetMode(cursor.CursorStatic)
	return ti
}

// keyName is the first key of a binding, for prompts.
func keyName(b key.Binding) string {
	if ks := b.Keys(); len(ks) > 0 {
		return ks[0]
	}
	return "?"
}

// ---- checkpoint label ----

type labelDialog struct {
	flowID string
	input  textinput.Model
	err    string
}

func newLabelDialog(flowID string) *labelDialog {
	ti := newInput()
	ti.Prompt = "› "
	ti.Placeholder = "label"
	ti.CharLimit = 200
	ti.Focus()
	return &labelDialog{flowID: flowID, input: ti}
}

func (d *labelDialog) grace() *grace { return nil }
func (d *labelDialog) help(*Model) []key.Binding {
	return []key.Binding{hint("enter", "commit"), hint("esc", "cancel")}
}
func (d *labelDialog) takesText() bool { return true }

func (d *labelDialog) handleKey(m *Model, msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEsc:
		m.popDialog()
		return nil
	case tea.KeyEnter:
		label := strings.TrimSpace(d.input.Value())
		if label == "" {
			d.err = "a label is required"
			return nil
		}
		m.popDialog()
		return m.checkpointCmd(false, d.flowID, label)
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	return cmd
}

func (d *labelDialog) view(m *Model, width int) string {
	d.input.Width = max(10, width-4)
	s := m.st.DialogTitle.Render("Commit a checkpoint of flow "+shortID(d.flowID)) + "\n\nLabel:\n" + d.input.View() +
		"\n\n" + m.st.Key.Render("enter") + " commit  " + m.st.Key.Render("esc") + " cancel"
	if d.err != "" {
		s += "\n" + m.st.Error.Render(d.err)
	}
	return s
}

// ---- revert confirmation ----

type confirmDialog struct {
	flowID, label string
}

func (d *confirmDialog) grace() *grace { return nil }
func (d *confirmDialog) help(*Model) []key.Binding {
	return []key.Binding{hint("y", "revert"), hint("n/esc", "cancel")}
}

func (d *confirmDialog) handleKey(m *Model, msg tea.KeyMsg) tea.Cmd {
	switch msg.String() {
	case "y", "Y":
		m.popDialog()
		return m.checkpointCmd(true, d.flowID, d.label)
	case "n", "N", "esc":
		m.popDialog()
		m.setStatus("revert cancelled", nil)
	}
	return nil
}

func (d *confirmDialog) view(m *Model, width int) string {
	return m.st.DialogTitle.Render("Revert flow "+shortID(d.flowID)+" to checkpoint "+d.label+"?") + "\n\n" +
		wrap("The flow's outputs, records and position are restored to the checkpoint; progress made since is discarded.", width) +
		"\n\n" + m.st.Key.Render("y") + " revert  " + m.st.Key.Render("n/esc") + " cancel"
}

// ---- ending a flow by hand (:kill REASON) ----

// killDialog confirms :kill: the flow (a stalled one, typically: its
// runner or Go program died) ends as killed, recorded with the reviewer
// and the reason. y ends it; the engine refuses a flow a live process
// still drives.
type killDialog struct {
	flowID, reason string
}

func (d *killDialog) grace() *grace { return nil }
func (d *killDialog) help(*Model) []key.Binding {
	return []key.Binding{hint("y", "end the flow"), hint("n/esc", "cancel")}
}

func (d *killDialog) handleKey(m *Model, msg tea.KeyMsg) tea.Cmd {
	switch msg.String() {
	case "y", "Y":
		m.popDialog()
		return m.killCmd(d.flowID, d.reason)
	case "n", "N", "esc":
		m.popDialog()
		m.setStatus("kill cancelled", nil)
	}
	return nil
}

func (d *killDialog) view(m *Model, width int) string {
	what := "flow " + shortID(d.flowID)
	if sum := m.summaryOf(d.flowID); sum != nil {
		what = "flow " + clean(sum.FlowName) + " (" + shortID(d.flowID) + ")"
		if sum.Stalled(m.now()) {
			what += ", stalled"
		}
	}
	return m.st.DialogTitle.Render("End "+what+"?") + "\n\n" +
		wrap("It ends as killed, with its running child flows; a Go program's open reviews are withdrawn. Recorded as killed by "+
			clean(m.opt.Reviewer)+": "+clean(d.reason), width) +
		"\n\n" + m.st.Key.Render("y") + " end it  " + m.st.Key.Render("n/esc") + " cancel"
}

// ---- quit while a run started here waits at a gate ----

type quitDialog struct{ r review.PendingReview }

func (d *quitDialog) grace() *grace { return nil }
func (d *quitDialog) help(*Model) []key.Binding {
	return []key.Binding{hint("y", "quit"), hint("n/esc", "stay")}
}

func (d *quitDialog) handleKey(m *Model, msg tea.KeyMsg) tea.Cmd {
	switch msg.String() {
	case "y", "Y":
		m.popDialog()
		m.quitting = true
		return tea.Quit
	case "n", "N", "esc":
		m.popDialog()
	}
	return nil
}

func (d *quitDialog) view(m *Model, width int) string {
	// The command on a line of its own, never wrapped inside the id, so
	// it can be copied whole.
	cmd, _ := resumeCommand(m.invocation, m.resumeTarget, &state.FlowSummary{FlowID: d.r.FlowID})
	return m.st.DialogTitle.Render("Quit while a run waits at a gate?") + "\n\n" +
		wrap("The run of "+clean(d.r.FlowName)+" started here waits at gate "+clean(d.r.StepID)+". Quitting stops the run there "+
			"(its lease is released: it reads stalled at once); the gate stays open, and the flow continues only with:", width) +
		"\n\n  " + clean(cmd) + "\n\n" + m.st.Key.Render("y") + " quit  " + m.st.Key.Render("n/esc") + " stay"
}

// ---- help ----

type helpDialog struct{}

func (d *helpDialog) grace() *grace { return nil }
func (d *helpDialog) help(m *Model) []key.Binding {
	return []key.Binding{hint("esc/"+keyName(m.keys.Help), "close")}
}

func (d *helpDialog) handleKey(m *Model, msg tea.KeyMsg) tea.Cmd {
	if msg.Type == tea.KeyEsc || key.Matches(msg, m.keys.Help) || key.Matches(msg, m.keys.Back) || key.Matches(msg, m.keys.Quit) {
		m.popDialog()
	}
	return nil
}

func (d *helpDialog) view(m *Model, width int) string {
	st := m.st
	k := m.keys
	note := wrapLines("A decision needs a rationale (for revise and kill) and a second press of its key; enter never decides. "+
		"A long gate or trace entry scrolls with "+keyName(k.PageDown)+"/"+keyName(k.PageUp)+" ("+keyName(k.Top)+"/"+keyName(k.Bottom)+
		" once opened); "+keyName(k.Pager)+" reads it in $PAGER. "+
		"Commands (:): "+strings.Join(m.paneCommands(), ", ")+", "+otherCommands+".", width)
	// The rows the key table may take: the body less the border, the title,
	// a blank line and the note.
	room := max(4, m.bodyHeight()-2-1-1-len(note))
	type row struct{ title, key, desc string }
	var rows []row
	titles := []string{"Move", "Panes", "Decide and act", "App"}
	for i, group := range m.keys.FullHelp() {
		rows = append(rows, row{title: titles[i]})
		for _, kb := range group {
			rows = append(rows, row{key: kb.Help().Key, desc: kb.Help().Desc})
		}
	}
	// Fill columns top to bottom, as few as fit the room, never leaving a
	// group's title alone at the bottom of a column.
	var cols [][]row
	for n := 1; ; n++ {
		per := (len(rows) + n - 1) / n
		cols = nil
		var col []row
		for i, r := range rows {
			if len(col) == per || (r.title != "" && len(col) == per-1 && i+1 < len(rows)) {
				cols, col = append(cols, col), nil
			}
			col = append(col, r)
		}
		cols = append(cols, col)
		if per <= room || n >= 4 {
			break
		}
	}
	const gap = 2
	colW := (width - gap*(len(cols)-1)) / len(cols)
	lines := make([]string, 0, room)
	for _, col := range cols {
		keyW := 0
		for _, r := range col {
			keyW = max(keyW, ansi.StringWidth(r.key))
		}
		for i, r := range col {
			var cell string
			if r.title != "" {
				cell = st.Header.Render(truncate(r.title, colW))
			} else {
				cell = st.Key.Render(padRight(r.key, keyW)) + " " + truncate(r.desc, max(0, colW-keyW-1))
			}
			cell = padRight(cell, colW)
			if i >= len(lines) {
				lines = append(lines, "")
			}
			if lines[i] != "" || len(lines[i]) > 0 {
				lines[i] += strings.Repeat(" ", gap)
			}
			lines[i] += cell
		}
	}
	var b strings.Builder
	b.WriteString(st.DialogTitle.Render("Keys") + "\n")
	for _, l := range lines {
		b.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	b.WriteString("\n" + strings.Join(note, "\n"))
	return b.String()
}
