package tui

import (
	"fmt"
	"sort"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine/state"
)

// iterationsPaneDef registers the Iterations pane: the detail flow's
// accumulator reports (items, new count, dry streak, outcome per report).
var iterationsPaneDef = paneDef{title: "Iterations", new: func(keyGroup) pane { return &iterationsPane{} }}

type iterationsPane struct{ paneBase }

var _ detailPane = (*iterationsPane)(nil)

func (p *iterationsPane) showsDetail() {}

type iterRow struct {
	step  string
	e     state.IterationEntry
	accum int
}

func (p *iterationsPane) iterationRows(c *common) []iterRow {
	if c.detail == nil {
		return nil
	}
	steps := make([]string, 0, len(c.detail.Iterations))
	for s := range c.detail.Iterations {
		steps = append(steps, s)
	}
	sort.Strings(steps)
	var out []iterRow
	for _, s := range steps {
		acc := 0
		for _, e := range c.detail.Iterations[s] {
			if e.NewCount != nil {
				acc += *e.NewCount
			}
			if matches(p.filter, s, e.Outcome) {
				out = append(out, iterRow{step: s, e: e, accum: acc})
			}
		}
	}
	return out
}

func (p *iterationsPane) Len(c *common) int { return len(p.iterationRows(c)) }

func (p *iterationsPane) Update(*Model, tea.KeyMsg) tea.Cmd { return nil }

func (p *iterationsPane) ShortHelp(*common) []key.Binding { return nil }

func (p *iterationsPane) View(c *common) []string {
	out := []string{c.detailHeader()}
	if c.detail == nil {
		return out
	}
	if a := c.detail.ActiveIteration; a != nil {
		out = append(out, c.st.Running.Render(fmt.Sprintf("▶ %s: iteration %d of %d running", clean(a.StepID), a.Count, a.MaxIterations)))
	}
	rows := p.iterationRows(c)
	if len(rows) == 0 {
		return append(out, c.st.Muted.Render("No iteration reports for this flow."))
	}
	opt := func(v *int) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	}
	return append(out, p.rows(c, p.height-len(out), fmt.Sprintf("%-16s %4s %5s %5s %5s %6s %s", "STEP", "#", "ROUND", "NEW", "DRY", "ITEMS", "OUTCOME"), len(rows), func(i int) string {
		r := rows[i]
		items := "-"
		if r.e.NewCount != nil {
			items = fmt.Sprint(r.accum)
		}
		line := fmt.Sprintf("%-16s %4d %5d %5s %5s %6s %s", truncate(clean(r.step), 16), r.e.Iteration, r.e.Round, opt(r.e.NewCount), opt(r.e.DryStreak), clean(items), clean(string(r.e.Outcome)))
		if r.e.Score != nil {
			line += fmt.Sprintf(" score %.3g", *r.e.Score)
		}
		return line
	})...)
}
