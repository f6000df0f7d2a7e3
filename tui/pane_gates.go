package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/review"
)

// gatesPaneDef registers the Gates pane: every gate waiting for a
// decision, with its context and deadline. Its keys (approve, revise, kill)
// are KeyMap.DecideKeys, shared with the decision dialogs.
var gatesPaneDef = paneDef{title: "Gates", new: func(keyGroup) pane { return &gatesPane{} }}

type gatesPane struct{ paneBase }

var (
	_ flowSelector = (*gatesPane)(nil)
	_ badged       = (*gatesPane)(nil)
)

func (p *gatesPane) visible(c *common) []review.PendingReview {
	if p.filter == "" {
		return c.reviews
	}
	var out []review.PendingReview
	for _, r := range c.reviews {
		if matches(p.filter, r.FlowID, r.FlowName, r.StepID, r.Question) {
			out = append(out, r)
		}
	}
	return out
}

func (p *gatesPane) Len(c *common) int { return len(p.visible(c)) }

func (p *gatesPane) selected(c *common) (review.PendingReview, bool) {
	rs := p.visible(c)
	if len(rs) == 0 {
		return review.PendingReview{}, false
	}
	return rs[min(p.l.cursor, len(rs)-1)], true
}

// selectedFlow: the detail panes show the selected gate's flow.
func (p *gatesPane) selectedFlow(c *common) string {
	r, _ := p.selected(c)
	return r.FlowID
}

func (p *gatesPane) badge(c *common) string {
	if len(c.reviews) == 0 {
		return ""
	}
	return fmt.Sprintf("(%d)", len(c.reviews))
}

// Update: a, r and x open the decision dialog for the selected gate.
func (p *gatesPane) Update(m *Model, msg tea.KeyMsg) tea.Cmd {
	r, ok := p.selected(&m.common)
	if !ok {
		return nil
	}
	k := m.keys
	var outcome review.Outcome
	switch {
	case key.Matches(msg, k.Approve):
		outcome = review.Approve
	case key.Matches(msg, k.Revise):
		outcome = review.Revise
	case key.Matches(msg, k.Kill):
		outcome = review.Kill
	default:
		return nil
	}
	if !allowed(r, outcome) {
		m.setStatus("", errors.New("gate "+r.StepID+" does not accept "+string(outcome)))
		return nil
	}
	m.pushDialog(newDecisionDialog(r, outcome, false, m.now()))
	return nil
}

func (p *gatesPane) ShortHelp(c *common) []key.Binding {
	return []key.Binding{shortHelp(c.keys.Approve, "approve"), shortHelp(c.keys.Revise, "revise"), shortHelp(c.keys.Kill, "kill")}
}

func (p *gatesPane) View(c *common) []string {
	rs := p.visible(c)
	if len(rs) == 0 {
		return p.empty(c, "No gate is waiting for a decision.", "No gate matches the filter (esc clears it).")
	}
	now := c.now()
	listH := min(len(rs)+1, max(2, p.height/3))
	out := p.rows(c, listH, fmt.Sprintf("%-20s %-14s %5s %-8s %s", "FLOW", "GATE", "ROUND", "ID", "DEADLINE"), len(rs), func(i int) string {
		r := rs[i]
		return fmt.Sprintf("%-20s %-14s %5d %-8s %s", truncate(clean(r.FlowName), 20), truncate(clean(r.StepID), 14), r.Round, shortID(r.FlowID), deadlineText(r, now))
	})
	r, _ := p.selected(c)
	out = append(out, "")
	out = append(out, c.st.Header.Render("Gate "+clean(r.StepID)+" of "+clean(r.FlowName)+fmt.Sprintf(" · round %d · opened %s ago · %s", r.Round, age(now.Sub(r.OpenedAt)), deadlineText(r, now))))
	out = append(out, wrapLines(clean(r.Question), p.width)...)
	if v := c.lastViolations(r.FlowID); v != "" {
		out = append(out, c.st.Warning.Render("violations: "+v))
	}
	for _, pd := range r.Artifacts.PreviousDecisions {
		out = append(out, c.st.Muted.Render(fmt.Sprintf("round %d: %s by %s: %s", pd.Round, pd.Outcome, clean(pd.Reviewer), clean(pd.Rationale))))
	}
	if outs := r.Artifacts.StepOutputs; len(outs) > 0 {
		out = append(out, c.st.Header.Render("Outputs"))
		keys := make([]string, 0, len(outs))
		for k := range outs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b, _ := json.Marshal(outs[k])
			out = append(out, "  "+k+": "+string(b))
		}
	}
	return out
}

// deadlineText counts down to the gate's deadline.
func deadlineText(r review.PendingReview, now time.Time) string {
	if r.Deadline == nil {
		return "no deadline"
	}
	left := r.Deadline.Sub(now)
	if left <= 0 {
		return "deadline passed (" + string(r.OnTimeout) + ")"
	}
	left = left.Truncate(time.Second)
	return fmt.Sprintf("%s left, then %s", left, r.OnTimeout)
}

// allowed reports whether gate r accepts outcome o.
func allowed(r review.PendingReview, o review.Outcome) bool {
	if len(r.Outcomes) == 0 {
		return true
	}
	for _, x := range r.Outcomes {
		if x == o {
			return true
		}
	}
	return false
}
