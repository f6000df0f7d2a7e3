package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// PendingReview describes the gate the flow waits on (flow is its spec's
// flow) as a reviewer sees it (engine/GATES.md); ok is false when the flow is not waiting at a gate.
//
// Question is the gate function's intent (or a default). Artifacts carries
// the flow inputs, the outputs of the steps so far and the decisions of
// earlier rounds (round, outcome, rationale, reviewer).
func PendingReview(st *state.FlowState, flow *specs.Flow) (review.PendingReview, bool) {
	step := pendingGateStep(st, flow)
	if step == nil {
		return review.PendingReview{}, false
	}
	rv := state.GateReview{Question: gateQuestion(step, st.FlowName), Revise: step.OnRevise != ""}
	return pendingReview(st.FlowID, st.FlowName, st.Gate, rv, ReviewArtifacts(st)), true
}

// pendingGateStep is the gate step st waits at in flow: st awaits a gate
// (Gate set) and the step at its cursor is that gate; else nil.
func pendingGateStep(st *state.FlowState, flow *specs.Flow) *specs.Step {
	if st.Status != state.StatusAwaitingGate || st.Gate == nil {
		return nil
	}
	step := stepAt(transitionEnv{Flow: flow}, st.CurrentIdx)
	if step == nil || !step.IsGate() || step.ID != st.Gate.StepID {
		return nil
	}
	return step
}

// gateQuestion is what a gate asks: its function's intent, else a default.
func gateQuestion(step *specs.Step, flowName string) string {
	if step.Fn != nil && step.Fn.Intent != "" {
		return step.Fn.Intent
	}
	return fmt.Sprintf("Approve step '%s' of flow '%s'?", step.ID, flowName)
}

// ReviewArtifacts is what a reviewer sees of a flow waiting at a gate: its
// inputs, the outputs of the steps so far and the decisions of earlier
// rounds (round, outcome, rationale, reviewer).
func ReviewArtifacts(st *state.FlowState) review.Artifacts {
	var earlier []review.PriorDecision
	for _, round := range st.Rounds {
		for _, r := range round {
			if r.Type == state.RecordGate {
				earlier = append(earlier, review.PriorDecision{Round: r.Round, StepID: r.StepID,
					Outcome: review.Outcome(r.Outcome), Rationale: r.Rationale, Reviewer: r.Reviewer})
			}
		}
	}
	outputs := make(map[string]any, len(st.StepOutputs))
	for k, v := range st.StepOutputs {
		outputs[k] = v
	}
	return review.Artifacts{Inputs: st.Inputs, StepOutputs: outputs, PreviousDecisions: earlier}
}

// pendingReview is the review of gate g of flow flowID, asking rv.
func pendingReview(flowID, flowName string, g *state.PendingGate, rv state.GateReview, artifacts review.Artifacts) review.PendingReview {
	outcomes := []review.Outcome{review.Approve, review.Revise, review.Kill}
	if !rv.Revise {
		outcomes = []review.Outcome{review.Approve, review.Kill}
	}
	var deadline = g.Deadline
	if deadline != nil {
		d := *deadline
		deadline = &d
	}
	return review.PendingReview{
		ReviewID:  review.ID(flowID, g.StepID, g.Round),
		FlowID:    flowID,
		FlowName:  flowName,
		StepID:    g.StepID,
		Round:     g.Round,
		Question:  rv.Question,
		Artifacts: artifacts,
		Outcomes:  outcomes,
		Approver:  review.Approver(orStr(g.Approver, string(review.AnyApprover))),
		OpenedAt:  g.DispatchedAt,
		Deadline:  deadline,
		OnTimeout: review.Outcome(orStr(g.OnTimeout, string(review.Kill))),
	}
}

// PendingReviews returns the review of every flow waiting at a gate (every
// open review of a Go program's flow, library.go), with its Artifacts.
// Flows whose stored spec no longer parses are skipped. The states are read
// in one View; their specs are parsed after it. Listings that need no
// artifacts use GateReviews, which reads no state.
func (q Query) PendingReviews(ctx context.Context) ([]review.PendingReview, error) {
	var states []*state.FlowState
	err := q.s.Store.View(ctx, func(tx Tx) error {
		states = nil
		gates, err := q.s.listing(tx.PendingGates())
		if err != nil {
			return err
		}
		for _, g := range gates {
			st, err := tx.Get(g.FlowID)
			if errors.Is(err, ErrNotFound) || q.s.noteDamagedErr(err) {
				continue
			}
			if err != nil {
				return err
			}
			states = append(states, st)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []review.PendingReview
	now := q.s.now()
	for _, st := range states {
		if st.IsLibrary() {
			out = append(out, libraryPendingReviews(st)...)
			continue
		}
		env, bad := q.s.env(ctx, st, newSnapshot(ctx, q.s.Store), now)
		if bad != nil {
			continue
		}
		if pr, ok := PendingReview(st, env.Flow); ok {
			out = append(out, pr)
		}
	}
	return out, nil
}

// GateReviews returns the review of every flow waiting at a gate, in
// PendingGates' order, without Artifacts (ReviewArtifacts of the flow's
// state has them): each is built from the flow's summary
// (FlowSummary.Review), so listing 25,000 gates decodes no state and parses
// no spec; PendingReviews is the same list with the artifacts. Only a gate whose summary lacks Review (a summary written before
// it existed, or while the spec did not parse) has its state read and its
// spec parsed, as PendingReview does; those whose stored spec no longer
// parses are skipped.
func (q Query) GateReviews(ctx context.Context) ([]review.PendingReview, error) {
	var out []review.PendingReview
	var states []*state.FlowState // gates whose summary lacks Review
	var at []int                  // where each goes in out
	err := q.s.Store.View(ctx, func(tx Tx) error {
		out, states, at = nil, nil, nil
		gates, err := q.s.listing(tx.PendingGates())
		if err != nil {
			return err
		}
		// One review per gate but a Go program's (a few more, appended):
		// sized once, not grown by doubling (25,000 reviews grown by append
		// made twice their size in garbage).
		out = make([]review.PendingReview, 0, len(gates))
		for _, g := range gates {
			if g.Gate == nil {
				continue
			}
			if g.Review != nil && g.Driver != state.DriverLibrary {
				out = append(out, pendingReview(g.FlowID, g.FlowName, g.Gate, *g.Review, review.Artifacts{}))
				continue
			}
			st, err := tx.Get(g.FlowID)
			if errors.Is(err, ErrNotFound) || q.s.noteDamagedErr(err) {
				continue
			}
			if err != nil {
				return err
			}
			states, at = append(states, st), append(at, len(out))
			out = append(out, review.PendingReview{}) // filled below, or dropped
		}
		return nil
	})
	if err != nil || len(states) == 0 {
		return out, err
	}
	keep := make([]bool, len(out))
	for i := range keep {
		keep[i] = true
	}
	now := q.s.now()
	library := map[int][]review.PendingReview{} // a Go program's flow: each open review (library.go)
	for i, st := range states {
		keep[at[i]] = false
		if st.IsLibrary() {
			library[at[i]] = libraryPendingReviews(st)
			continue
		}
		env, bad := q.s.env(ctx, st, newSnapshot(ctx, q.s.Store), now)
		if bad != nil {
			continue
		}
		if pr, ok := PendingReview(st, env.Flow); ok {
			pr.Artifacts = review.Artifacts{}
			out[at[i]], keep[at[i]] = pr, true
		}
	}
	kept := make([]review.PendingReview, 0, len(out))
	for i, r := range out {
		if keep[i] {
			kept = append(kept, r)
		}
		kept = append(kept, library[i]...)
	}
	return kept, nil
}
