package tui

import (
	"context"
	"fmt"
	"sort"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// gateContext is what the Gates pane and the decision dialog show of a
// gate beyond its review.PendingReview: where a revise sends the flow and
// how many rounds are left (the gate step's on_revise and the flow's
// max_rounds, from the flow's stored spec), and the violations of the
// attempts that led to the gate. It is loaded once per review (a review id
// names one round of one gate, whose past does not change) by gateCtxCmd.
type gateContext struct {
	onRevise  string // "" when the gate does not accept revise
	maxRounds int    // 0 = unlimited
	noSpec    bool   // the stored spec no longer parses: routing unknown
	// artifacts are the flow's inputs, outputs and earlier decisions, from
	// its state (the gate list carries none: Source.PendingReviews).
	artifacts  *review.Artifacts
	violations []violation
	// order is the steps in the order their outputs were produced (the
	// last step_done of each), so outputs read in execution order.
	order []string
	err   error
}

// violation is one failed attempt of a step in the round that led to a
// gate; fixedBy is the later attempt of the same step that passed (0: the
// violation is still current).
type violation struct {
	stepID  string
	attempt int
	text    string
	fixedBy int
}

type gateCtxMsg struct {
	reviewID string
	ctx      *gateContext
}

// gateCtxCmds loads the context of the gates on screen (the Gates pane's
// selection and every open decision dialog) that is not loaded yet.
func (m *Model) gateCtxCmds() tea.Cmd {
	var want []review.PendingReview
	if g, i := findPane[*gatesPane](m.panes); i >= 0 {
		if r, ok := g.selected(&m.common); ok {
			want = append(want, r)
		}
	}
	for _, d := range m.dialogs {
		if dd, ok := d.(*decisionDialog); ok && !dd.elsewhere {
			want = append(want, dd.r)
		}
	}
	var cmds []tea.Cmd
	for _, r := range want {
		if m.gateCtx[r.ReviewID] != nil || m.gateCtxLoading[r.ReviewID] {
			continue
		}
		m.gateCtxLoading[r.ReviewID] = true
		cmds = append(cmds, m.gateCtxCmd(r))
	}
	return tea.Batch(cmds...)
}

func (m *Model) gateCtxCmd(r review.PendingReview) tea.Cmd {
	src := m.opt.Source
	return func() tea.Msg {
		ctx := context.Background()
		fs, err := src.FlowWithSpec(ctx, r.FlowID)
		if err != nil {
			return gateCtxMsg{r.ReviewID, &gateContext{err: err}}
		}
		evs, err := src.FlowEvents(ctx, r.FlowID)
		if err != nil {
			return gateCtxMsg{r.ReviewID, &gateContext{err: err}}
		}
		a := engine.ReviewArtifacts(fs.State)
		if fs.State.IsLibrary() {
			a = r.Artifacts // a Go program's review carries its own (engine.GateReviews)
		}
		gc := &gateContext{violations: gateViolations(evs, r), artifacts: &a, order: outputOrder(evs)}
		if fs.Flow == nil {
			gc.noSpec = true
		} else {
			gc.maxRounds = fs.Flow.MaxRounds
			if st := fs.Flow.Step(r.StepID); st != nil {
				gc.onRevise = st.OnRevise
			}
		}
		return gateCtxMsg{r.ReviewID, gc}
	}
}

// gateViolations are the failed attempts of the round that led to gate r
// (the events after the previous decision, up to the gate's opening), each
// marked fixed when a later attempt of its step passed.
func gateViolations(evs []engine.Event, r review.PendingReview) []violation {
	var out []violation
	attempts := map[string]int{}
	for _, ev := range evs {
		switch ev.Type {
		case engine.EventGateResolved:
			// A decision (of any gate) ends what led to the next one.
			out, attempts = nil, map[string]int{}
		case engine.EventGateOpened:
			if d, _ := ev.Data.(engine.GateOpened); ev.StepID == r.StepID && d.Round == r.Round {
				return out
			}
		case engine.EventStepFailed:
			attempts[ev.StepID]++
			d, _ := ev.Data.(engine.StepFailed)
			out = append(out, violation{stepID: ev.StepID, attempt: attempts[ev.StepID], text: strings.Join(d.Violations, "; ")})
		case engine.EventStepDone:
			attempts[ev.StepID]++
			for i := range out {
				if out[i].stepID == ev.StepID && out[i].fixedBy == 0 {
					out[i].fixedBy = attempts[ev.StepID]
				}
			}
		}
	}
	return out
}

// outputOrder is the steps of evs in the order of their last step_done.
func outputOrder(evs []engine.Event) []string {
	last := map[string]int{}
	var steps []string
	for i, ev := range evs {
		if ev.Type == engine.EventStepDone {
			if _, ok := last[ev.StepID]; !ok {
				steps = append(steps, ev.StepID)
			}
			last[ev.StepID] = i
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return last[steps[i]] < last[steps[j]] })
	return steps
}

// orderedKeys are the keys of outputs in execution order (gc.order), then
// any other in alphabetical order (all of them so while gc is loading).
func orderedKeys(outputs map[string]any, gc *gateContext) []string {
	out := make([]string, 0, len(outputs))
	seen := map[string]bool{}
	if gc != nil {
		for _, k := range gc.order {
			if _, ok := outputs[k]; ok && !seen[k] {
				out, seen[k] = append(out, k), true
			}
		}
	}
	for _, k := range sortedKeys(outputs) {
		if !seen[k] {
			out = append(out, k)
		}
	}
	return out
}

// gateContextLines renders the context of gate r for width: when and until
// when it waits, who may decide, where a revise goes and the rounds left,
// the question, the flow's inputs, the violations (current ones, then the
// fixed ones marked so), the decisions of earlier rounds and the outputs
// that led to the gate: one line each, or (expanded) pretty-printed. Lines
// wrap; nothing is cut.
func (c *common) gateContextLines(r review.PendingReview, gc *gateContext, width int, expanded, hint bool) []string {
	st := c.st
	now := c.now()
	if gc != nil && gc.artifacts != nil {
		r.Artifacts = *gc.artifacts
	}
	var out []string
	add := func(s string, style func(...string) string) {
		for _, l := range wrapLines(s, width) {
			if style != nil {
				l = style(l)
			}
			out = append(out, l)
		}
	}
	if r.Library {
		// A Go program's review: the value is the decision.
		return c.reviewLines(r, width, 0, true, false, "").lines
	}
	add(fmt.Sprintf("round %d · waiting %s · %s · approver: %s", r.Round, age(now.Sub(r.OpenedAt)), deadlineText(r, now), approverText(r.Approver)), nil)
	add(c.reviseText(r, gc), nil)
	add(clean(r.Question), nil)
	if in := r.Artifacts.Inputs; len(in) > 0 {
		for _, l := range hangLines("", clean("inputs: "+inlineText(readable(in), false)), "    ", width) {
			out = append(out, st.Muted.Render(l))
		}
	}
	if gc != nil {
		for _, v := range gc.violations {
			if v.fixedBy == 0 {
				add(clean(fmt.Sprintf("✗ violation: %s attempt %d: %s", v.stepID, v.attempt, v.text)), st.Warning.Render)
			}
		}
		for _, v := range gc.violations {
			if v.fixedBy != 0 {
				add(clean(fmt.Sprintf("✓ fixed: %s attempt %d: %s (attempt %d passed)", v.stepID, v.attempt, v.text, v.fixedBy)), st.Muted.Render)
			}
		}
	}
	for _, pd := range r.Artifacts.PreviousDecisions {
		add(fmt.Sprintf("round %d: %s by %s: %s", pd.Round, pd.Outcome, clean(pd.Reviewer), clean(pd.Rationale)), st.Muted.Render)
	}
	if outs := r.Artifacts.StepOutputs; len(outs) > 0 {
		title := "Outputs"
		switch {
		case hint && expanded:
			title += " (enter folds)"
		case hint:
			title += " (enter expands)"
		}
		out = append(out, st.Header.Render(truncate(title, width)))
		for _, k := range orderedKeys(outs, gc) {
			if expanded {
				add("  "+clean(k)+":", nil)
				for _, l := range strings.Split(jsonText(outs[k]), "\n") {
					add("    "+clean(l), nil)
				}
				continue
			}
			// Folded, an output is a summary of a few lines; enter
			// expands it (as text), the pager shows it whole.
			// As key: value words (review_view.go), wrapped on spaces.
			folded := hangLines("  ", clean(k+": "+inlineText(readable(outs[k]), false)), "      ", width)
			if len(folded) > foldedLines {
				more := fmt.Sprintf("    … %d more lines folded", len(folded)-foldedLines+1)
				folded = append(folded[:foldedLines-1], st.Muted.Render(truncate(more, width)))
			}
			out = append(out, folded...)
		}
	}
	return out
}

// foldedLines is the most lines a folded output takes in a gate's context.
const foldedLines = 3

// reviseText says where a revise sends the flow and how many rounds are
// left.
func (c *common) reviseText(r review.PendingReview, gc *gateContext) string {
	switch {
	case gc == nil:
		return "revise: …"
	case gc.err != nil:
		return "revise: unknown (" + clean(gc.err.Error()) + ")"
	case gc.noSpec:
		return "revise: unknown (the flow's stored spec does not parse)"
	case gc.onRevise == "" || !allowed(r, review.Revise):
		return "revise: not accepted by this gate (approve or kill)"
	case gc.maxRounds <= 0:
		return "revise → step " + clean(gc.onRevise) + " · rounds: unlimited"
	}
	left := gc.maxRounds - r.Round
	if left <= 0 {
		return "revise → step " + clean(gc.onRevise) + " · no rounds left (max_rounds " + fmt.Sprint(gc.maxRounds) + ")"
	}
	return fmt.Sprintf("revise → step %s · %d of %d round%s left", clean(gc.onRevise), left, gc.maxRounds, plural(gc.maxRounds))
}

func approverText(a review.Approver) string {
	if a == review.HumanApprover {
		return "human (not over MCP)"
	}
	if a == "" {
		return string(review.AnyApprover)
	}
	return string(a)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decidedMsg is what was recorded at a gate decided elsewhere. silent is
// set for a gate that left the list while no dialog of it was open: only a
// timeout is announced then.
type decidedMsg struct {
	r      review.PendingReview
	rec    *state.Record
	err    error
	silent bool
}

// decidedElsewhereCmd reads who decided gate r elsewhere, the outcome and
// the rationale: the flow's gate record of r's step and round (not one a
// revert undid).
func (m *Model) decidedElsewhereCmd(r review.PendingReview, silent bool) tea.Cmd {
	src := m.opt.Source
	return func() tea.Msg {
		st, err := src.Get(context.Background(), r.FlowID)
		if err != nil {
			return decidedMsg{r: r, err: err, silent: silent}
		}
		return decidedMsg{r: r, rec: gateRecord(st, r), silent: silent}
	}
}

// gateRecord is the decision recorded for gate r in st (nil when none). A
// Go program's review is read from the flow's reviews.
func gateRecord(st *state.FlowState, r review.PendingReview) *state.Record {
	if r.Library && st.Library != nil {
		for _, lr := range st.Library.Reviews {
			if lr.ID != r.StepID || lr.Decision == nil {
				continue
			}
			d := lr.Decision
			return &state.Record{Type: state.RecordGate, StepID: lr.ID, Outcome: string(lr.Status),
				Rationale: d.Rationale, ResolvedBy: d.ResolvedBy, Channel: d.Channel, Reviewer: d.Reviewer}
		}
		return nil
	}
	var found *state.Record
	look := func(recs []state.Record) {
		for i := range recs {
			rec := &recs[i]
			if rec.Type == state.RecordGate && rec.StepID == r.StepID && rec.Round == r.Round && !rec.Reverted {
				found = rec
			}
		}
	}
	for _, round := range st.Rounds {
		look(round)
	}
	look(st.Records)
	return found
}

// timedOut reports whether rec is a gate's deadline deciding it.
func timedOut(rec *state.Record) bool {
	return rec != nil && (rec.Channel == string(review.ChannelTimeout) || rec.Outcome == string(state.ReviewTimedOut))
}

// decidedText is the notice of a gate decided elsewhere (or timed out),
// then tail ("dialog closed").
func decidedText(r review.PendingReview, rec *state.Record, tail string) string {
	name := "gate " + r.StepID + " of " + r.FlowName + " (" + shortID(r.FlowID) + ")"
	if tail != "" {
		tail = "; " + tail
	}
	if rec == nil {
		return name + " was decided elsewhere (or timed out)" + tail
	}
	if timedOut(rec) {
		s := "⏱ " + name + " timed out"
		if r.Deadline != nil {
			s += " at " + r.Deadline.UTC().Format("15:04:05")
		}
		if rec.Outcome == string(state.ReviewTimedOut) {
			return s + tail
		}
		return s + ": " + rec.Outcome + " (its on_timeout)" + tail
	}
	who := rec.Reviewer
	if who == "" {
		who = rec.ResolvedBy
	}
	if who == "" {
		who = "someone"
	}
	s := name + " was decided elsewhere: " + rec.Outcome + " by " + who
	if rec.Channel != "" {
		s += " (" + rec.Channel + ")"
	}
	if rec.Rationale != "" {
		s += ": " + rec.Rationale
	}
	return s + tail
}
