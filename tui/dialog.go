package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/review"
)

// dialog is one entry of the overlay stack. Only the top dialog gets keys.
type dialog interface {
	handleKey(m *Model, msg tea.KeyMsg) tea.Cmd
	view(m *Model, width int) string
	// grace is the dialog's grace period, or nil when it has none.
	grace() *grace
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

// ---- decision ----

type decisionStage int

const (
	stageChoose  decisionStage = iota // async: pick a, r or x
	stageEdit                         // typing the rationale
	stageConfirm                      // press the outcome key again to record
)

// decisionDialog decides one gate: it shows the gate's context, asks for a
// rationale, and records the decision only when the outcome key is pressed
// at the confirmation step (never on Enter alone).
type decisionDialog struct {
	r       review.PendingReview
	outcome review.Outcome
	stage   decisionStage
	input   textinput.Model
	g       *grace
	err     string
}

func newDecisionDialog(r review.PendingReview, outcome review.Outcome, async bool, now time.Time) *decisionDialog {
	ti := newInput()
	ti.Prompt = "› "
	ti.Placeholder = "rationale"
	ti.CharLimit = 2000
	d := &decisionDialog{r: r, outcome: outcome, input: ti, stage: stageEdit}
	if outcome == "" {
		d.stage = stageChoose
	} else {
		d.input.Focus()
	}
	if async {
		d.g = &grace{openedAt: now}
	}
	return d
}

func (d *decisionDialog) grace() *grace { return d.g }

// rationaleRequired: revise and kill must say why.
func (d *decisionDialog) rationaleRequired() bool { return d.outcome != review.Approve }

func (d *decisionDialog) outcomeKey(k KeyMap) key.Binding {
	switch d.outcome {
	case review.Revise:
		return k.Revise
	case review.Kill:
		return k.Kill
	}
	return k.Approve
}

func (d *decisionDialog) handleKey(m *Model, msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if msg.Type == tea.KeyEsc || (d.stage != stageEdit && key.Matches(msg, k.Back)) {
		m.popDialog()
		m.setStatus("decision cancelled", nil)
		return nil
	}
	switch d.stage {
	case stageChoose:
		for _, c := range []struct {
			b key.Binding
			o review.Outcome
		}{{k.Approve, review.Approve}, {k.Revise, review.Revise}, {k.Kill, review.Kill}} {
			if key.Matches(msg, c.b) {
				if !allowed(d.r, c.o) {
					d.err = "this gate does not accept " + string(c.o)
					return nil
				}
				d.outcome, d.stage, d.err = c.o, stageEdit, ""
				d.input.Focus()
				return nil
			}
		}
		return nil
	case stageEdit:
		if msg.Type == tea.KeyEnter {
			if d.rationaleRequired() && strings.TrimSpace(d.input.Value()) == "" {
				d.err = "a rationale is required to " + string(d.outcome)
				return nil
			}
			d.stage, d.err = stageConfirm, ""
			d.input.Blur()
			return nil
		}
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(msg)
		return cmd
	case stageConfirm:
		switch {
		case key.Matches(msg, d.outcomeKey(k)):
			m.popDialog()
			m.setStatus("recording "+string(d.outcome)+"…", nil)
			return m.decideCmd(d.r, d.outcome, strings.TrimSpace(d.input.Value()))
		case key.Matches(msg, k.Edit):
			d.stage = stageEdit
			d.input.Focus()
		}
	}
	return nil
}

func (d *decisionDialog) view(m *Model, width int) string {
	st := m.st
	var b strings.Builder
	title := "Gate " + clean(d.r.StepID) + " of " + clean(d.r.FlowName)
	if d.outcome != "" {
		title = strings.ToUpper(string(d.outcome)) + " · " + title
	}
	fmt.Fprintf(&b, "%s\n", st.DialogTitle.Render(title))
	fmt.Fprintf(&b, "flow %s · round %d · %s\n", shortID(d.r.FlowID), d.r.Round, deadlineText(d.r, m.now()))
	fmt.Fprintf(&b, "%s\n", wrap(clean(d.r.Question), width))
	if v := m.lastViolations(d.r.FlowID); v != "" {
		fmt.Fprintf(&b, "%s\n", st.Warning.Render(truncate("violations: "+v, width)))
	}
	b.WriteString("\n")
	switch d.stage {
	case stageChoose:
		fmt.Fprintf(&b, "%s approve  %s revise  %s kill  %s cancel",
			st.Key.Render(keyName(m.keys.Approve)), st.Key.Render(keyName(m.keys.Revise)),
			st.Key.Render(keyName(m.keys.Kill)), st.Key.Render("esc"))
	case stageEdit:
		req := "optional"
		if d.rationaleRequired() {
			req = "required"
		}
		d.input.Width = max(10, width-4)
		fmt.Fprintf(&b, "Rationale (%s):\n%s\n", req, d.input.View())
		fmt.Fprintf(&b, "%s continue  %s cancel", st.Key.Render("enter"), st.Key.Render("esc"))
	case stageConfirm:
		rat := strings.TrimSpace(d.input.Value())
		if rat == "" {
			rat = "(none)"
		}
		fmt.Fprintf(&b, "Rationale: %s\n", truncate(clean(rat), width-11))
		fmt.Fprintf(&b, "Press %s to record %s as %s · %s edit · %s cancel",
			st.Key.Render(keyName(d.outcomeKey(m.keys))), strings.ToUpper(string(d.outcome)), m.opt.Reviewer,
			st.Key.Render(keyName(m.keys.Edit)), st.Key.Render("esc"))
	}
	if d.g != nil && d.g.waiting(m.now(), m.lastKeyAt, m.opt.GraceQuiet, m.opt.GraceMax) {
		b.WriteString("\n" + st.Muted.Render("(keys armed once you pause typing)"))
	}
	if d.err != "" {
		b.WriteString("\n" + st.Error.Render(d.err))
	}
	return b.String()
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

// ---- help ----

type helpDialog struct{}

func (d *helpDialog) grace() *grace { return nil }

func (d *helpDialog) handleKey(m *Model, msg tea.KeyMsg) tea.Cmd {
	if msg.Type == tea.KeyEsc || key.Matches(msg, m.keys.Help) || key.Matches(msg, m.keys.Back) || key.Matches(msg, m.keys.Quit) {
		m.popDialog()
	}
	return nil
}

func (d *helpDialog) view(m *Model, width int) string {
	var b strings.Builder
	b.WriteString(m.st.DialogTitle.Render("Keys") + "\n")
	titles := []string{"Move", "Panes", "Decide", "App"}
	for i, group := range m.keys.FullHelp() {
		parts := []string{m.st.Header.Render(titles[i] + ":")}
		for _, kb := range group {
			parts = append(parts, m.st.Key.Render(kb.Help().Key)+" "+kb.Help().Desc)
		}
		b.WriteString(wrap(strings.Join(parts, " "), width) + "\n")
	}
	b.WriteString("\n" + wrap("A decision asks for a rationale (required for revise and kill), then a second press of its key; enter alone never decides. Commands (:): "+
		strings.Join(m.paneCommands(), ", ")+", "+otherCommands+".", width))
	return b.String()
}
