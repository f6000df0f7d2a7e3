package tui

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// FlowRunner runs one flow of a valid spec in-process; run.Background is
// the implementation main.go wires in. Gates the run meets are decided
// through the store, like any other; the runner offers them to sink as they
// open. RunFlow blocks until the run ends or stops (ctx cancelled, a step it
// cannot execute), so it is only ever called from a tea.Cmd.
type FlowRunner interface {
	RunFlow(ctx context.Context, sp *specs.Spec, flowName string, inputs map[string]any, sink review.Sink) (*run.Outcome, error)
}

var _ FlowRunner = run.Background{}

// runDoneMsg is the end of a run started from the Specs pane.
type runDoneMsg struct {
	file, flow string
	res        *run.Outcome
	err        error
}

// runDialog asks which flow of a spec to run and with which inputs.
type runDialog struct {
	path  string
	sp    *specs.Spec
	flows []string
	idx   int
	input textinput.Model
	err   string
}

func newRunDialog(path string, sp *specs.Spec) *runDialog {
	flows := append([]string(nil), sp.FlowNames...)
	if len(flows) == 0 {
		for name := range sp.Flows {
			flows = append(flows, name)
		}
		sort.Strings(flows)
	}
	idx := 0
	if sp.Workflow != nil {
		for i, f := range flows {
			if f == sp.Workflow.EntryFlow {
				idx = i
			}
		}
	}
	ti := newInput()
	ti.Prompt = "› "
	ti.Placeholder = "name=value …"
	ti.CharLimit = 4000
	ti.Focus()
	return &runDialog{path: path, sp: sp, flows: flows, idx: idx, input: ti}
}

func (d *runDialog) grace() *grace { return nil }
func (d *runDialog) help(*Model) []key.Binding {
	h := []key.Binding{hint("enter", "run"), hint("esc", "cancel")}
	if len(d.flows) > 1 {
		h = append(h, hint("tab", "next flow"))
	}
	return h
}
func (d *runDialog) takesText() bool { return true }

func (d *runDialog) handleKey(m *Model, msg tea.KeyMsg) tea.Cmd {
	switch {
	case msg.Type == tea.KeyEsc:
		m.popDialog()
		return nil
	case msg.Type == tea.KeyTab && len(d.flows) > 1:
		d.idx = (d.idx + 1) % len(d.flows)
		return nil
	case msg.Type == tea.KeyEnter:
		inputs, err := run.ParseInputLine(d.input.Value())
		if err != nil {
			d.err = err.Error()
			return nil
		}
		if len(d.flows) == 0 {
			d.err = "this spec has no flow"
			return nil
		}
		m.popDialog()
		flow := d.flows[d.idx]
		m.setStatus("running "+flow+" of "+d.path+"…", nil)
		m.runs++
		return m.runFlowCmd(d.path, d.sp, flow, inputs)
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	return cmd
}

func (d *runDialog) view(m *Model, width int) string {
	var b strings.Builder
	b.WriteString(m.st.DialogTitle.Render("Run a flow of "+d.path) + "\n\n")
	for i, f := range d.flows {
		mark := "  "
		if i == d.idx {
			mark = "› "
		}
		line := mark + f
		if fl := d.sp.Flows[f]; fl != nil && len(fl.Input) > 0 {
			names := make([]string, 0, len(fl.Input))
			for _, p := range fl.Input {
				n := p.Name
				if p.Type != "" {
					n += ":" + p.Type
				}
				names = append(names, n)
			}
			line += m.st.Muted.Render("  inputs: " + strings.Join(names, ", "))
		}
		b.WriteString(truncate(line, width) + "\n")
	}
	d.input.Width = max(10, width-4)
	b.WriteString("\nInputs (name=value, values may be JSON):\n" + d.input.View() + "\n\n")
	keys := m.st.Key.Render("enter") + " run  " + m.st.Key.Render("esc") + " cancel"
	if len(d.flows) > 1 {
		keys += "  " + m.st.Key.Render("tab") + " next flow"
	}
	b.WriteString(keys)
	if d.err != "" {
		b.WriteString("\n" + m.st.Error.Render(d.err))
	}
	return b.String()
}

func (m *Model) runFlowCmd(path string, sp *specs.Spec, flow string, inputs map[string]any) tea.Cmd {
	r, sink, ctx, wg := m.opt.Runner, m.opt.Sink, m.runCtx, m.runsWG
	wg.Add(1)
	return func() tea.Msg {
		defer wg.Done()
		var s review.Sink
		if sink != nil {
			s = sink
		}
		res, err := r.RunFlow(ctx, sp, flow, inputs, s)
		return runDoneMsg{file: path, flow: flow, res: res, err: err}
	}
}

func (m *Model) handleRunDone(msg runDoneMsg) tea.Cmd {
	m.runs--
	if msg.err != nil {
		m.setStatus("", errors.New("run "+msg.flow+": "+msg.err.Error()))
		return m.reloadCmd()
	}
	text := "run " + msg.flow + " (" + shortID(msg.res.FlowID) + ") ended " + msg.res.Status
	if msg.res.Message != "" {
		text += ": " + msg.res.Message
	}
	m.setStatus(text, nil)
	return m.reloadCmd()
}
