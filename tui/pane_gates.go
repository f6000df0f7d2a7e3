package tui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/review"
)

// gatesPaneDef registers the Gates pane: every gate waiting for a
// decision, with its context and deadline. Its keys (approve, revise, kill)
// are KeyMap.DecideKeys, shared with the decision dialogs.
var gatesPaneDef = paneDef{title: "Gates", new: func(keyGroup) pane { return &gatesPane{} }}

type gatesPane struct {
	paneBase
	expanded bool // the outputs pretty-printed in full
	// foldable: the selected gate's context folds something to fit (a Go
	// program's review; enter unfolds it), as last rendered.
	foldable bool
	// detail scrolls the selected gate's context; reading is the review
	// it scrolls (another selection starts at its top).
	detail  scrollView
	reading string
}

var (
	_ flowSelector = (*gatesPane)(nil)
	_ badged       = (*gatesPane)(nil)
	_ reader       = (*gatesPane)(nil)
	_ pagerPane    = (*gatesPane)(nil)
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

// selectFlow keeps the cursor on the gate of flow id.
func (p *gatesPane) selectFlow(c *common, id string) {
	for i, r := range p.visible(c) {
		if r.FlowID == id {
			p.l.cursor = i
			return
		}
	}
}

// Update: a, r and x open the decision dialog for the selected gate; enter
// expands (or folds) the outputs that led to it.
func (p *gatesPane) Update(m *Model, msg tea.KeyMsg) tea.Cmd {
	r, ok := p.selected(&m.common)
	if !ok {
		return nil
	}
	if key.Matches(msg, m.keys.Open) {
		p.expanded = !p.expanded
		return nil
	}
	if o, ok := decisionOf(m.keys, msg); ok {
		return m.openDecision(r, o)
	}
	return nil
}

// ShortHelp offers only the keys that act on the selected gate: revise
// where the gate accepts it (never on a Go program's review, whose kill
// rejects it), enter where there is something to expand.
func (p *gatesPane) ShortHelp(c *common) []key.Binding {
	r, ok := p.selected(c)
	if !ok {
		return nil
	}
	k := c.keys
	h := []key.Binding{shortHelp(k.Approve, "approve")}
	if reviseApplies(r, c.gateCtx[r.ReviewID]) {
		h = append(h, shortHelp(k.Revise, "revise"))
	}
	switch {
	case r.Library && allowed(r, review.Kill):
		h = append(h, shortHelp(k.Kill, "reject"))
	case allowed(r, review.Kill):
		h = append(h, shortHelp(k.Kill, "kill"))
	}
	switch {
	case r.Library && p.foldable && p.expanded:
		h = append(h, shortHelp(k.Open, "fold"))
	case r.Library && p.foldable:
		h = append(h, shortHelp(k.Open, "expand"))
	case !r.Library && len(p.outputs(c, r)) > 0:
		h = append(h, shortHelp(k.Open, "outputs"))
	}
	if p.detail.overflows() {
		h = append(h, shortHelp(c.keys.PageDown, "scroll"))
	}
	return append(h, shortHelp(c.keys.Pager, "pager"))
}

// scroll: the page keys scroll the selected gate's context when it does
// not fit; with the outputs expanded, top and bottom go to its ends too
// (else they move in the list of gates).
func (p *gatesPane) scroll(c *common, msg tea.KeyMsg) bool {
	if _, ok := p.selected(c); !ok || !p.detail.overflows() {
		return false
	}
	k := c.keys
	if !p.expanded && (key.Matches(msg, k.Top) || key.Matches(msg, k.Bottom)) {
		return false
	}
	return p.detail.key(k, msg, false)
}

// pagerText is the selected gate's whole context, outputs expanded, as
// plain text.
func (p *gatesPane) pagerText(c *common) (string, string) {
	r, ok := p.selected(c)
	if !ok {
		return "", ""
	}
	title := "Gate " + r.StepID + " of " + r.FlowName + " · flow " + r.FlowID
	lines := c.gateContextLines(r, c.gateCtx[r.ReviewID], pagerWidth, true, false)
	return title, plainText(title, lines)
}

func (p *gatesPane) View(c *common) []string {
	rs := p.visible(c)
	if len(rs) == 0 {
		return p.empty(c, "No gate is waiting for a decision.", "No gate matches the filter (esc clears it).")
	}
	now := c.now()
	listH := min(len(rs)+1, max(2, p.height/3))
	if p.expanded {
		listH = 2 // room for the outputs: the list shows the selected gate only
	}
	nameW, stepW := 16, 12
	if p.width >= 110 {
		nameW, stepW = 24, 16
	}
	out := p.rows(c, listH, fmt.Sprintf("%-*s %-*s %5s %-8s %-7s %s", nameW, "FLOW", stepW, "GATE", "ROUND", "ID", "WAITING", "DEADLINE"), len(rs), func(i int) string {
		r := rs[i]
		return fmt.Sprintf("%-*s %-*s %5d %-8s %-7s %s", nameW, truncate(clean(r.FlowName), nameW), stepW, truncate(clean(r.StepID), stepW), r.Round, shortID(r.FlowID),
			age(now.Sub(r.OpenedAt)), deadlineText(r, now))
	})
	r, _ := p.selected(c)
	if r.ReviewID != p.reading {
		p.reading, p.detail = r.ReviewID, scrollView{}
	}
	out = append(out, "")
	// The full flow id: what `stratum gate` and `stratum query flow` take
	// (y copies it). The context scrolls below the list (page keys).
	kind := "Gate "
	if r.Library {
		kind = "Review " // a Go program's: decided with a value
	}
	detail := wrapLines(c.st.Header.Render(kind+clean(r.StepID)+" of "+clean(r.FlowName)+" · flow "+clean(r.FlowID)), p.width)
	p.foldable = false
	if r.Library {
		rv := c.reviewLines(r, p.width, p.height-len(out)-len(detail), p.expanded, true, "")
		p.foldable = rv.foldable
		detail = append(detail, rv.lines...)
	} else {
		detail = append(detail, c.gateContextLines(r, c.gateCtx[r.ReviewID], p.width, p.expanded, true)...)
	}
	return append(out, p.detail.window(c, detail, p.height-len(out), p.width, p.expanded)...)
}

// reviseApplies reports whether a revise of gate r can be recorded, as far
// as its context says: not on a Go program's review, nor where the gate
// has no on_revise or its flow's max_rounds are spent (unknown while the
// context loads, or when the spec no longer parses: offered).
func reviseApplies(r review.PendingReview, gc *gateContext) bool {
	if r.Library || !allowed(r, review.Revise) {
		return false
	}
	if gc == nil || gc.err != nil || gc.noSpec {
		return true
	}
	return gc.onRevise != "" && (gc.maxRounds <= 0 || gc.maxRounds-r.Round > 0)
}

// outputs are the step outputs gate r shows (from its context once
// loaded).
func (p *gatesPane) outputs(c *common, r review.PendingReview) map[string]any {
	if gc := c.gateCtx[r.ReviewID]; gc != nil && gc.artifacts != nil {
		return gc.artifacts.StepOutputs
	}
	return r.Artifacts.StepOutputs
}

// deadlineText counts down to the gate's deadline.
func deadlineText(r review.PendingReview, now time.Time) string {
	if r.Deadline == nil {
		return "no deadline"
	}
	then := string(r.OnTimeout)
	if r.Library {
		// A Go program's review decides its default value, or times out.
		then = "times out"
		if r.OnTimeout == review.Approve {
			then = "default value"
		}
	}
	left := r.Deadline.Sub(now)
	if left <= 0 {
		return "deadline passed (" + then + ")"
	}
	left = left.Truncate(time.Second)
	return fmt.Sprintf("%s left, then %s", left, then)
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
