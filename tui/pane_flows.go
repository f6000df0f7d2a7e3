package tui

import (
	"fmt"
	"strings"
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
	now := c.now()
	cols := flowColumns(p.width - 2) // the rows' cursor margin
	header := make([]string, len(cols))
	for i, col := range cols {
		header[i] = padRight(col.title, col.width)
	}
	// The last line is the selected flow's full id (and, when nothing
	// drives it, the command that continues it).
	out := p.rows(c, max(1, p.height-3), strings.TrimRight(strings.Join(header, " "), " "), fl.n, func(i int) string {
		f := fl.row(i)
		if f == nil {
			return c.st.Muted.Render("…") // its page is being read
		}
		cells := make([]string, len(cols))
		for j, col := range cols {
			cells[j] = col.cell(c, f, now, col.width)
		}
		return strings.TrimRight(strings.Join(cells, " "), " ")
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
		why, next := stalledHint(c.invocation, c.resumeTarget, f)
		return []string{c.st.Warning.Render(line + " · ⚠ stalled: " + why), c.st.Warning.Render(next)}
	}
	if in, ok := c.inflightOf(f, now); ok {
		return []string{c.st.Muted.Render(line + " · " + flowStatusText(f, now)),
			c.st.Running.Render("step " + clean(in.stepID) + " under way for " + elapsedText(now.Sub(in.since)) +
				" (dispatched at " + in.since.UTC().Format("15:04:05") + ")")}
	}
	return []string{c.st.Muted.Render(line + " · " + flowStatusText(f, now)), ""}
}

// stalledHint says why a stalled flow stopped and what continues it: a
// runner's flow is resumed, a child flow through its parent; a Go
// program's (driver library) never is.
func stalledHint(invocation string, target func(id string) string, f *state.FlowSummary) (why, next string) {
	if f.Driver == state.DriverLibrary {
		return "its Go program has exited", "a Go program's flow is not resumed: end it with :kill REASON"
	}
	cmd, child := resumeCommand(invocation, target, f)
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

// flowColumn is a column of the Flows pane: its title, width and cell.
type flowColumn struct {
	title string
	width int
	// drop is the column's rank among those a narrow terminal drops: 1
	// goes first; 0 is never dropped (status, flow, step and the short
	// id: what `stratum run --resume` and `query flow` take).
	drop int
	cell func(c *common, f *state.FlowSummary, now time.Time, w int) string
}

// flowColumnsAll are the Flows pane's columns in their order, at their
// widths on a wide terminal; FLOW and STEP narrow first.
var flowColumnsAll = []flowColumn{
	{title: "STATUS", width: 16, cell: func(c *common, f *state.FlowSummary, now time.Time, w int) string {
		text := flowStatusText(f, now)
		if in, ok := c.inflightOf(f, now); ok {
			// Its step is under way: for how long (inflight.go).
			text += " " + elapsedText(now.Sub(in.since))
		}
		return c.st.flowStatus(f, now).Render(padRight(truncate(text, w), w))
	}},
	{title: "FLOW", width: 24, cell: func(c *common, f *state.FlowSummary, _ time.Time, w int) string {
		name := clean(f.FlowName)
		if c != nil && c.flows.prefix[f.FlowID] != "" {
			name = c.st.Muted.Render(c.flows.prefix[f.FlowID]) + name // a child flow under its parent (flowtree.go)
		}
		return padRight(truncate(name, w), w)
	}},
	{title: "STEP", width: 14, cell: func(_ *common, f *state.FlowSummary, _ time.Time, w int) string {
		return padRight(truncate(clean(f.CurrentStep), w), w)
	}},
	{title: "  K/N", width: 5, drop: 5, cell: func(_ *common, f *state.FlowSummary, _ time.Time, w int) string {
		kn := fmt.Sprintf("%d/%d", f.StepNumber, f.TotalSteps)
		if f.TotalSteps == 0 {
			kn = fmt.Sprintf("%d/-", f.StepNumber)
		}
		return fmt.Sprintf("%*s", w, kn)
	}},
	{title: "ROUND", width: 5, drop: 3, cell: func(_ *common, f *state.FlowSummary, _ time.Time, w int) string {
		return fmt.Sprintf("%*d", w, f.Round)
	}},
	{title: "ID", width: 8, cell: func(_ *common, f *state.FlowSummary, _ time.Time, w int) string {
		return padRight(shortID(f.FlowID), w)
	}},
	{title: "AGE", width: 4, drop: 4, cell: func(_ *common, f *state.FlowSummary, now time.Time, w int) string {
		return padRight(age(now.Sub(f.CreatedAt)), w)
	}},
	{title: "DRIVER", width: 7, drop: 2, cell: func(_ *common, f *state.FlowSummary, now time.Time, w int) string {
		driver := f.Driver
		switch {
		case f.Owner != nil && strings.HasPrefix(f.Owner.ID, "bg-") && f.Owner.ExpiresAt.After(now):
			driver = "bg" // the MCP server's background run
		case driver == "":
			driver = "-"
		}
		return padRight(driver, w)
	}},
	{title: "UPDATED", width: 8, drop: 1, cell: func(_ *common, f *state.FlowSummary, now time.Time, w int) string {
		return padRight(age(now.Sub(f.UpdatedAt))+" ago", w)
	}},
}

// flowMinWidths are the narrowest FLOW and STEP get before a column is
// dropped.
const flowMinName, flowMinStep = 12, 10

// flowColumns are the columns that fit width: all of them when they do,
// else without the columns dropped first (UPDATED, DRIVER, ROUND, AGE,
// K/N, in that order) until the rest fit with FLOW and STEP at least
// flowMinName and flowMinStep wide; FLOW, then STEP, take what is left up
// to their full width.
func flowColumns(width int) []flowColumn {
	cols := append([]flowColumn(nil), flowColumnsAll...)
	fixed := func() int { // the width of every column but FLOW and STEP, separators included
		n := len(cols) - 1
		for _, col := range cols {
			if col.title != "FLOW" && col.title != "STEP" {
				n += col.width
			}
		}
		return n
	}
	for rank := 1; width-fixed() < flowMinName+flowMinStep && rank <= 5; rank++ {
		for i, col := range cols {
			if col.drop == rank {
				cols = append(cols[:i], cols[i+1:]...)
				break
			}
		}
	}
	room := width - fixed()
	name := max(flowMinName, min(flowColumnsAll[1].width, room-flowMinStep))
	step := max(flowMinStep, min(flowColumnsAll[2].width, room-name))
	for i := range cols {
		switch cols[i].title {
		case "FLOW":
			cols[i].width = name
		case "STEP":
			cols[i].width = step
		}
	}
	return cols
}
