package tui

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

type decisionStage int

const (
	stageChoose  decisionStage = iota // async: pick a, r or x
	stageValue                        // a Go program's review: pick an option (its number) or type a value
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
	// The value an approve records on a Go program's review (r.Library):
	// an option (1-based) or a value typed in valueIn.
	option  int
	value   json.RawMessage
	valueIn textinput.Model
	digits  string // the digits of an option's number typed so far
	// elsewhere is set when the gate was decided elsewhere while a
	// rationale or value was being typed here: the dialog stays, read-only,
	// with what was typed and (once read) who decided.
	elsewhere bool
	decided   string
	// ctx scrolls the gate's context inside the dialog when it does not
	// fit (every option of a review stays reachable).
	ctx scrollView
}

func newDecisionDialog(r review.PendingReview, outcome review.Outcome, async bool, now time.Time) *decisionDialog {
	ti := newInput()
	ti.Prompt = "› "
	ti.Placeholder = "rationale"
	ti.CharLimit = 2000
	vi := newInput()
	vi.Prompt = "› "
	vi.Placeholder = "JSON value"
	vi.CharLimit = 20000
	d := &decisionDialog{r: r, outcome: outcome, input: ti, valueIn: vi, stage: stageEdit}
	if outcome == "" {
		d.stage = stageChoose
	} else {
		d.begin()
	}
	if async {
		d.g = &grace{openedAt: now}
	}
	return d
}

func (d *decisionDialog) grace() *grace { return d.g }
func (d *decisionDialog) takesText() bool {
	return !d.elsewhere && (d.stage == stageEdit || d.stage == stageValue && len(d.r.Options) == 0)
}

// typed reports whether the user has typed anything worth keeping (a
// rationale or a value).
func (d *decisionDialog) typed() bool {
	return strings.TrimSpace(d.input.Value()) != "" || strings.TrimSpace(d.valueIn.Value()) != ""
}

func (d *decisionDialog) help(m *Model) []key.Binding {
	if d.elsewhere {
		return []key.Binding{hint("esc", "close")}
	}
	h := d.stageHelp(m)
	if d.ctx.overflows() {
		h = append(h[:len(h)-1:len(h)-1], hint(d.scrollKeys(m), "scroll"), h[len(h)-1])
	}
	return h
}

// scrollKeys names the keys that scroll the context at this stage: the
// page keys, and the line keys where no text is typed.
func (d *decisionDialog) scrollKeys(m *Model) string {
	k := m.keys
	s := keyName(k.PageDown) + "/" + keyName(k.PageUp)
	if !d.takesText() {
		s = keyName(k.Down) + "/" + keyName(k.Up) + " " + s
	}
	return s
}

// scroll scrolls the gate's context by msg when it does not fit: the page
// keys while text is typed (pgdown, pgup only: ctrl+d edits), the line and
// page keys otherwise.
func (d *decisionDialog) scroll(k KeyMap, msg tea.KeyMsg) bool {
	if !d.ctx.overflows() {
		return false
	}
	if d.takesText() {
		if msg.Type != tea.KeyPgDown && msg.Type != tea.KeyPgUp {
			return false
		}
		page := max(1, d.ctx.height-2)
		if msg.Type == tea.KeyPgUp {
			page = -page
		}
		d.ctx.offset += page
		d.ctx.clamp()
		return true
	}
	return d.ctx.key(k, msg, true)
}

func (d *decisionDialog) stageHelp(m *Model) []key.Binding {
	k := m.keys
	switch d.stage {
	case stageChoose:
		return []key.Binding{shortHelp(k.Approve, "approve"), shortHelp(k.Revise, "revise"), shortHelp(k.Kill, "kill"), hint("esc", "cancel")}
	case stageValue:
		if n := len(d.r.Options); n > 0 {
			return []key.Binding{hint(fmt.Sprintf("1–%d", n), "pick an option"), hint("esc", "cancel")}
		}
		return []key.Binding{hint("enter", "check the value"), hint("esc", "cancel")}
	case stageConfirm:
		return []key.Binding{shortHelp(d.outcomeKey(k), "record "+string(d.outcome)), shortHelp(k.Edit, "edit"), hint("esc", "cancel")}
	}
	return []key.Binding{hint("enter", "continue"), hint("esc", "cancel")}
}

// question is what the dialog asks, in the words of its outcome: an
// approve approves, a revise sends back, a kill kills (the gate's own
// question, which may say "Approve …?", is shown as the gate's).
func (d *decisionDialog) question() string {
	gate, flow := clean(d.r.StepID), clean(d.r.FlowName)
	switch {
	case d.outcome == review.Approve && d.r.Library:
		return "APPROVE · answer review " + gate + " of " + flow + "?"
	case d.outcome == review.Approve:
		return "APPROVE · approve gate " + gate + " of " + flow + "?"
	case d.outcome == review.Revise:
		return "REVISE · send " + flow + " back for revision at gate " + gate + "?"
	case d.outcome == review.Kill && d.r.Library:
		return "KILL · reject review " + gate + " of " + flow + "?"
	case d.outcome == review.Kill:
		return "KILL · kill flow " + flow + " at gate " + gate + "?"
	}
	return "Gate " + gate + " of " + flow + ": approve, revise or kill?"
}

// begin starts the chosen outcome: the value first for an approve of a Go
// program's review, else the rationale.
func (d *decisionDialog) begin() {
	if d.r.Library && d.outcome == review.Approve {
		d.stage = stageValue
		if len(d.r.Options) == 0 {
			d.valueIn.Focus()
		}
		return
	}
	d.stage = stageEdit
	d.input.Focus()
}

// pickValue takes the value of a Go program's review: an option's number
// (one key) or the typed value on enter, checked as the engine checks it
// (engine.CheckReviewValue: one of the options, or a value of the
// review's type); a value that does not fit keeps the dialog here.
func (d *decisionDialog) pickValue(msg tea.KeyMsg) (tea.Cmd, bool) {
	lr := &state.LibraryReview{ID: d.r.StepID, Options: d.r.Options, Schema: d.r.Schema}
	if len(d.r.Options) > 0 {
		// An option's number: picked at its last digit, the one after which
		// no other option's number can follow (at once below 10 options;
		// with 12, "1" waits for a second digit or enter).
		switch {
		case msg.Type == tea.KeyBackspace:
			d.digits = ""
			return nil, true
		case msg.Type == tea.KeyEnter && d.digits != "":
		case msg.Type == tea.KeyRunes && len(msg.Runes) == 1 && msg.Runes[0] >= '0' && msg.Runes[0] <= '9':
			d.digits += string(msg.Runes)
		default:
			return nil, false
		}
		n, _ := strconv.Atoi(d.digits)
		if _, _, err := engine.CheckReviewValue(lr, n, nil); err != nil {
			d.err, d.digits = err.Error(), ""
			return nil, true
		}
		if msg.Type != tea.KeyEnter && n*10 <= len(d.r.Options) {
			d.err = ""
			return nil, true // more digits may follow
		}
		d.option, d.err, d.digits = n, "", ""
	} else {
		if msg.Type != tea.KeyEnter {
			var cmd tea.Cmd
			d.valueIn, cmd = d.valueIn.Update(msg)
			return cmd, true
		}
		v := json.RawMessage(strings.TrimSpace(d.valueIn.Value()))
		if _, _, err := engine.CheckReviewValue(lr, 0, v); err != nil {
			d.err = err.Error()
			return nil, true
		}
		d.value, d.err = v, ""
		d.valueIn.Blur()
	}
	d.stage = stageEdit
	d.input.Focus()
	return nil, true
}

// valueText is the value chosen, as the confirmation shows it.
func (d *decisionDialog) valueText() string {
	if d.option > 0 {
		return fmt.Sprintf("option %d: %s", d.option, inlineText(readable(d.r.Options[d.option-1]), false))
	}
	return inlineText(readable(d.value), false)
}

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
	if d.elsewhere {
		// Read-only: the gate is decided; only closing is left.
		if msg.Type == tea.KeyEsc || key.Matches(msg, k.Back) {
			m.popDialog()
		}
		return nil
	}
	if msg.Type == tea.KeyEsc || (d.stage != stageEdit && key.Matches(msg, k.Back)) {
		m.popDialog()
		m.setStatus("decision cancelled", nil)
		return nil
	}
	if (d.stage != stageConfirm || !key.Matches(msg, d.outcomeKey(k))) && d.scroll(k, msg) {
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
				d.outcome, d.err = c.o, ""
				d.begin()
				return nil
			}
		}
		return nil
	case stageValue:
		cmd, _ := d.pickValue(msg)
		return cmd
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
			return m.decideCmd(d.r, d.outcome, strings.TrimSpace(d.input.Value()), d.option, d.value)
		case key.Matches(msg, k.Edit):
			d.stage = stageEdit
			d.input.Focus()
		default:
			// Another decision's key is not ignored silently: it would
			// record something else than the dialog says.
			if o, ok := decisionOf(k, msg); ok {
				d.err = fmt.Sprintf("%s is %s: this dialog records %s (press %s); esc cancels it",
					msg.String(), o, strings.ToUpper(string(d.outcome)), keyName(d.outcomeKey(k)))
			}
		}
	}
	return nil
}

func (d *decisionDialog) view(m *Model, width int) string {
	st := m.st
	if d.elsewhere {
		return d.elsewhereView(m, width)
	}
	tail := d.tail(m, width)
	// The gate's context, in the room the prompt leaves (the border, the
	// title, the flow, a blank line and the prompt always show); what does
	// not fit scrolls inside the dialog. The gate's own question is
	// labelled as such: it may read "Approve …?" in a kill dialog.
	room := max(3, m.bodyHeight()-2-2-1-strings.Count(tail, "\n")-1)
	r := d.r
	asker := ""
	if d.outcome != "" && r.Question != "" {
		asker = "the gate asks: "
		if r.Library {
			asker = "the review asks: "
		}
	}
	var ctx []string
	if r.Library {
		ctx = m.reviewLines(r, width, room, false, false, asker).lines
	} else {
		r.Question = asker + r.Question
		ctx = m.gateContextLines(r, m.gateCtx[d.r.ReviewID], width, false, false)
	}
	d.ctx.keysText = d.scrollKeys(m) + " scroll"
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", st.DialogTitle.Render(truncate(d.question(), width)))
	flow := "flow " + clean(d.r.FlowID)
	if r.Library {
		flow += " · waiting " + age(m.now().Sub(r.OpenedAt))
	}
	fmt.Fprintf(&b, "%s\n", truncate(flow, width))
	for _, l := range d.ctx.window(&m.common, ctx, room, width, false) {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n" + tail)
	return b.String()
}

// tail is the dialog's prompt for its stage, and its notes.
func (d *decisionDialog) tail(m *Model, width int) string {
	st := m.st
	var b strings.Builder
	switch d.stage {
	case stageChoose:
		fmt.Fprintf(&b, "%s approve  %s revise  %s kill  %s cancel",
			st.Key.Render(keyName(m.keys.Approve)), st.Key.Render(keyName(m.keys.Revise)),
			st.Key.Render(keyName(m.keys.Kill)), st.Key.Render("esc"))
	case stageValue:
		if n := len(d.r.Options); n > 0 {
			fmt.Fprintf(&b, "Pick the value: %s an option's number  %s cancel", st.Key.Render(fmt.Sprintf("1–%d", n)), st.Key.Render("esc"))
			if d.digits != "" {
				fmt.Fprintf(&b, "\nOption %s… (another digit, or %s for option %s)", d.digits, st.Key.Render("enter"), d.digits)
			}
		} else {
			d.valueIn.Width = max(10, width-4)
			fmt.Fprintf(&b, "Value (JSON, checked against the review's type):\n%s\n", d.valueIn.View())
			fmt.Fprintf(&b, "%s continue  %s cancel", st.Key.Render("enter"), st.Key.Render("esc"))
		}
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
		if d.option > 0 || d.value != nil {
			fmt.Fprintf(&b, "Value: %s\n", truncate(clean(d.valueText()), width-7))
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
		b.WriteString("\n" + st.Error.Render(wrap(clean(d.err), width)))
	}
	return b.String()
}

// elsewhereView is the dialog of a gate decided elsewhere while a
// rationale (or value) was being typed: who decided, and the text, kept.
func (d *decisionDialog) elsewhereView(m *Model, width int) string {
	st := m.st
	var b strings.Builder
	b.WriteString(st.DialogTitle.Render(truncate("Gate "+clean(d.r.StepID)+" of "+clean(d.r.FlowName)+" was decided elsewhere", width)) + "\n")
	fmt.Fprintf(&b, "flow %s\n\n", clean(d.r.FlowID))
	decided := d.decided
	if decided == "" {
		decided = "reading who decided…"
	}
	b.WriteString(st.Warning.Render(wrap(clean(decided), width)) + "\n\n")
	b.WriteString("Nothing was recorded from here. What you typed is kept:\n")
	if v := strings.TrimSpace(d.valueIn.Value()); v != "" {
		b.WriteString(wrap("value: "+clean(v), width) + "\n")
	}
	b.WriteString(wrap("rationale: "+clean(strings.TrimSpace(d.input.Value())), width) + "\n\n")
	b.WriteString(st.Key.Render("esc") + " close")
	return b.String()
}
