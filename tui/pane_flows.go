package tui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"
)

// flowsPaneDef registers the Flows pane: every flow execution with its
// status, step k/n, round, age and driver. Enter opens its trace.
var flowsPaneDef = paneDef{title: "Flows", new: func(keyGroup) pane { return &flowsPane{} }}

type flowsPane struct{ paneBase }

var _ flowSelector = (*flowsPane)(nil)

func (p *flowsPane) visible(c *common) []engine.FlowSummary {
	if p.filter == "" {
		return c.flows
	}
	var out []engine.FlowSummary
	for _, s := range c.flows {
		if matches(p.filter, s.FlowID, s.FlowName, string(s.Status), s.CurrentStep, s.Driver) {
			out = append(out, s)
		}
	}
	return out
}

func (p *flowsPane) Len(c *common) int { return len(p.visible(c)) }

func (p *flowsPane) selectedFlow(c *common) string {
	fl := p.visible(c)
	if len(fl) == 0 {
		return ""
	}
	return fl[min(p.l.cursor, len(fl)-1)].FlowID
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
	fl := p.visible(c)
	if len(fl) == 0 {
		return p.empty(c, "No flows yet. Start one with `stratum plan`, `stratum run` or an agent over MCP.",
			"No flow matches the filter (esc clears it).")
	}
	wide := p.width >= 110
	now := c.now()
	nameW := 18
	if wide {
		nameW = 24
	}
	header := fmt.Sprintf("%-16s %-*s %-14s %5s %5s %-6s %-6s", "STATUS", nameW, "FLOW", "STEP", "K/N", "ROUND", "AGE", "DRIVER")
	if wide {
		header += fmt.Sprintf(" %-8s %s", "ID", "UPDATED")
	}
	return p.rows(c, p.height, header, len(fl), func(i int) string {
		f := fl[i]
		status := c.st.status(f.Status).Render(padRight(statusIcon(f.Status)+" "+string(f.Status), 16))
		kn := fmt.Sprintf("%d/%d", f.StepNumber, f.TotalSteps)
		if f.TotalSteps == 0 {
			kn = fmt.Sprintf("%d/-", f.StepNumber)
		}
		driver := f.Driver
		if driver == "" {
			driver = "-"
		}
		line := fmt.Sprintf("%s %-*s %-14s %5s %5d %-6s %-6s", status, nameW, truncate(clean(f.FlowName), nameW), truncate(clean(f.CurrentStep), 14),
			kn, f.Round, age(now.Sub(f.CreatedAt)), driver)
		if wide {
			line += fmt.Sprintf(" %-8s %s ago", shortID(f.FlowID), age(now.Sub(f.UpdatedAt)))
		}
		return line
	})
}

func statusIcon(s engine.FlowStatus) string {
	switch s {
	case engine.StatusRunning:
		return "▶"
	case engine.StatusAwaitingGate:
		return "⏸"
	case engine.StatusComplete:
		return "✓"
	case engine.StatusKilled:
		return "☠"
	case engine.StatusFailed, engine.StatusBudgetExhausted:
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
