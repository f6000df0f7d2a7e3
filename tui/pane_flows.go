package tui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/stratum-go/stratum/engine/state"
)

// flowsPaneDef registers the Flows pane: every flow execution with its
// status, step k/n, round, age and driver. Enter opens its trace.
var flowsPaneDef = paneDef{title: "Flows", new: func(keyGroup) pane { return &flowsPane{} }}

type flowsPane struct{ paneBase }

var _ flowSelector = (*flowsPane)(nil)

// Len is the number of flows matching the filter (the last pass's).
func (p *flowsPane) Len(c *common) int { return c.flows.n }

func (p *flowsPane) selectedFlow(c *common) string {
	if f := c.flows.row(min(p.l.cursor, c.flows.n-1)); f != nil {
		return f.FlowID
	}
	return ""
}

// selectFlow keeps the cursor on flow id's row when flows come and go (the
// pass centres the window on it).
func (p *flowsPane) selectFlow(c *common, id string) {
	for i := range c.flows.rows {
		if c.flows.rows[i].FlowID == id {
			p.l.cursor = c.flows.start + i
			return
		}
	}
}

func (p *flowsPane) Update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, m.keys.Open) && m.focusFlowID() != "" {
		return focusPaneOf[*tracePane](m)
	}
	return nil
}

func (p *flowsPane) ShortHelp(c *common) []key.Binding {
	return []key.Binding{shortHelp(c.keys.Open, "open")}
}

func (p *flowsPane) View(c *common) []string {
	fl := &c.flows
	if fl.filter != p.filter {
		// The pass for the new filter reads the whole listing.
		return []string{c.st.Muted.Render(fmt.Sprintf("Filtering %d flows…", fl.counts.total))}
	}
	if fl.n == 0 {
		return p.empty(c, "No flows yet. Start one with `stratum plan`, `stratum run` or an agent over MCP.",
			"No flow matches the filter (esc clears it).")
	}
	// Narrow terminals keep the short id (what `stratum query flow` and
	// `stratum run --resume` take) and drop the driver column first.
	wide := p.width >= 110
	now := c.now()
	nameW, stepW := 16, 12
	header := fmt.Sprintf("%-16s %-*s %-*s %5s %5s %-8s %-4s", "STATUS", nameW, "FLOW", stepW, "STEP", "K/N", "ROUND", "ID", "AGE")
	if wide {
		nameW, stepW = 24, 14
		header = fmt.Sprintf("%-16s %-*s %-*s %5s %5s %-8s %-4s %-6s %s", "STATUS", nameW, "FLOW", stepW, "STEP", "K/N", "ROUND", "ID", "AGE", "DRIVER", "UPDATED")
	}
	// The last line is the selected flow's full id (and, when nothing
	// drives it, the command that continues it).
	out := p.rows(c, max(1, p.height-3), header, fl.n, func(i int) string {
		f := fl.row(i)
		if f == nil {
			return c.st.Muted.Render("…") // its page is being read
		}
		status := c.st.flowStatus(f, now).Render(padRight(flowStatusText(f, now), 16))
		kn := fmt.Sprintf("%d/%d", f.StepNumber, f.TotalSteps)
		if f.TotalSteps == 0 {
			kn = fmt.Sprintf("%d/-", f.StepNumber)
		}
		line := fmt.Sprintf("%s %-*s %-*s %5s %5d %-8s %-4s", status, nameW, truncate(clean(f.FlowName), nameW), stepW, truncate(clean(f.CurrentStep), stepW),
			kn, f.Round, shortID(f.FlowID), age(now.Sub(f.CreatedAt)))
		if wide {
			driver := f.Driver
			if driver == "" {
				driver = "-"
			}
			line += fmt.Sprintf(" %-6s %s ago", driver, age(now.Sub(f.UpdatedAt)))
		}
		return line
	})
	if sel := fl.row(min(p.l.cursor, fl.n-1)); p.height >= 5 && sel != nil {
		for len(out) < p.height-2 {
			out = append(out, "")
		}
		out = append(out, flowFootnote(c, sel, now)...)
	}
	return out
}

// flowFootnote is the two lines under the Flows list: the selected flow's
// full id and, when nothing drives it any more, the command that continues
// it.
func flowFootnote(c *common, f *state.FlowSummary, now time.Time) []string {
	line := "flow " + clean(f.FlowID)
	if f.Stalled(now) {
		why, next := stalledHint(c.resumeTarget, f)
		return []string{c.st.Warning.Render(line + " · ⚠ stalled: " + why), c.st.Warning.Render(next)}
	}
	return []string{c.st.Muted.Render(line + " · " + flowStatusText(f, now)), ""}
}

// stalledHint says why a stalled flow stopped and what continues it: a
// runner's flow is resumed, a child flow through its parent; a Go
// program's (driver library) never is.
func stalledHint(target func(id string) string, f *state.FlowSummary) (why, next string) {
	if f.Driver == state.DriverLibrary {
		return "its Go program has exited", "a Go program's flow is not resumed: end it with :kill REASON"
	}
	cmd, child := resumeCommand(target, f)
	if child {
		return "its runner has exited", "a child flow: continue its parent with: " + clean(cmd)
	}
	return "its runner has exited", "continue it with: " + clean(cmd)
}

// flowStatusText is a flow's status as the console shows it: a flow still
// running or at a gate whose runner is gone reads "stalled", never running.
func flowStatusText(f *state.FlowSummary, now time.Time) string {
	if f.Stalled(now) {
		return "⚠ stalled"
	}
	return statusIcon(f.Status) + " " + string(f.Status)
}

func statusIcon(s state.FlowStatus) string {
	switch s {
	case state.StatusRunning:
		return "▶"
	case state.StatusAwaitingGate:
		return "⏸"
	case state.StatusComplete:
		return "✓"
	case state.StatusKilled:
		return "☠"
	case state.StatusFailed, state.StatusBudgetExhausted:
		return "✗"
	}
	return "·"
}

// age renders a duration compactly: 45s, 3m, 2h, 4d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
