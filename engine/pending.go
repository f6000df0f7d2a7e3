package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratum-go/stratum/review"
)

// PendingReviewOf describes the gate a flow waits on as a reviewer sees it
// (README, "Gates, deadlines and who may decide"); ok is false when the flow is not waiting at a gate.
//
// Question is the gate function's intent (or a default). Artifacts carries
// the flow inputs, the outputs of the steps so far and the decisions of
// earlier rounds (round, outcome, rationale, reviewer).
func PendingReviewOf(st *FlowState, env Env) (review.PendingReview, bool) {
	if st.Status != StatusAwaitingGate || st.Gate == nil || pastEnd(st, env) {
		return review.PendingReview{}, false
	}
	step := currentStep(st, env)
	if step == nil || !step.IsGate() || step.ID != st.Gate.StepID {
		return review.PendingReview{}, false
	}
	question := ""
	if step.Fn != nil {
		question = step.Fn.Intent
	}
	if question == "" {
		question = fmt.Sprintf("Approve step '%s' of flow '%s'?", step.ID, st.FlowName)
	}
	var earlier []review.PriorDecision
	for _, round := range st.Rounds {
		for _, r := range round {
			if r.Type == RecordGate {
				earlier = append(earlier, review.PriorDecision{Round: r.Round, StepID: r.StepID,
					Outcome: review.Outcome(r.Outcome), Rationale: r.Rationale, Reviewer: r.Reviewer})
			}
		}
	}
	outputs := make(map[string]any, len(st.StepOutputs))
	for k, v := range st.StepOutputs {
		outputs[k] = v
	}
	outcomes := []review.Outcome{review.Approve, review.Revise, review.Kill}
	if step.OnRevise == "" {
		outcomes = []review.Outcome{review.Approve, review.Kill}
	}
	var deadline = st.Gate.Deadline
	if deadline != nil {
		d := *deadline
		deadline = &d
	}
	return review.PendingReview{
		ReviewID:  review.ID(st.FlowID, step.ID, st.Gate.Round),
		FlowID:    st.FlowID,
		FlowName:  st.FlowName,
		StepID:    step.ID,
		Round:     st.Gate.Round,
		Question:  question,
		Artifacts: review.Artifacts{Inputs: st.Inputs, StepOutputs: outputs, PreviousDecisions: earlier},
		Outcomes:  outcomes,
		Approver:  review.Approver(orStr(st.Gate.Approver, string(review.AnyApprover))),
		OpenedAt:  st.Gate.DispatchedAt,
		Deadline:  deadline,
		OnTimeout: review.Outcome(orStr(st.Gate.OnTimeout, string(review.Kill))),
	}, true
}

// PendingReviews returns the review of every flow waiting at a gate (every
// open review of a Go program's flow, library.go). Flows
// whose stored spec no longer parses are skipped. The states are read in one
// View; their specs are parsed after it.
func (s *Service) PendingReviews(ctx context.Context) ([]review.PendingReview, error) {
	var states []*FlowState
	err := s.Store.View(ctx, func(tx Tx) error {
		states = nil
		gates, err := s.listing(tx.PendingGates())
		if err != nil {
			return err
		}
		for _, g := range gates {
			st, err := tx.Get(g.FlowID)
			if errors.Is(err, ErrNotFound) || s.noteDamagedErr(err) {
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
	now := s.now()
	for _, st := range states {
		if st.IsLibrary() {
			out = append(out, libraryPendingReviews(st)...)
			continue
		}
		env, bad := s.env(ctx, st, newSnapshot(ctx, s.Store), now)
		if bad != nil {
			continue
		}
		if pr, ok := PendingReviewOf(st, env); ok {
			out = append(out, pr)
		}
	}
	return out, nil
}
