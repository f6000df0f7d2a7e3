package engine

import (
	"context"
	"encoding/json"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// JudgeTurn is one turn of a judge step's judge, to record
// (Service.RecordJudge): the original's judge_history entries of the turn
// and its judge_outcome.
type JudgeTurn struct {
	FlowID, StepID string
	// History are the turn's entries, one per predicate and tier.
	History []state.JudgeEntry
	// Outcome is {met, predicate_results} of the turn (JSON).
	Outcome json.RawMessage
	// Verdict, when set, is the turn's verdict with its evidence, for the
	// trace: a judge_verdict event.
	Verdict *state.JudgeVerdict
	ReportOptions
}

// JudgeRecorded answers RecordJudge: the turn is in the flow.
type JudgeRecorded struct {
	FlowID, StepID string
}

// WireStatus implements Outcome.
func (j *JudgeRecorded) WireStatus() string { return "judge_recorded" }

func (j *JudgeRecorded) wire() Response {
	return Response{"status": "judge_recorded", "flow_id": j.FlowID, "step_id": j.StepID}
}

// RecordJudge records a judge turn of the flow's current step, which must
// be a judge step (else step_mismatch): its entries join judge_history and
// its outcome replaces the step's judge_outcome. The audit shows both; the
// turn's Verdict, when given, is a judge_verdict event (the TUI's trace). A
// runner's lease refuses anyone but its holder (flow_owned).
func (s *Service) RecordJudge(ctx context.Context, t JudgeTurn) (Outcome, error) {
	return s.transition(ctx, t.FlowID, &t.ReportOptions, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		if st.Status.Finished() || pastEnd(st, env) {
			return refused(refusal(ErrTypeStepMismatch, "step_id '%s' is not the current judge step (the flow has ended)", t.StepID)), nil
		}
		cur := currentStep(st, env)
		if cur == nil || cur.ID != t.StepID {
			id := ""
			if cur != nil {
				id = cur.ID
			}
			return refused(refusal(ErrTypeStepMismatch, "step_id '%s' is not the current judge step (current: %s)", t.StepID, id)), nil
		}
		if cur.Kind != specs.KindJudge {
			return refused(refusal(ErrTypeNotAJudgeStep, "step '%s' is not declared as a judge step", t.StepID)), nil
		}
		j := st.Judge.Clone()
		if j == nil {
			j = &state.JudgeProgress{History: map[string][]state.JudgeEntry{}, Outcome: map[string]json.RawMessage{}}
		}
		j.History[t.StepID] = append(j.History[t.StepID], t.History...)
		j.Outcome[t.StepID] = append(json.RawMessage(nil), t.Outcome...)
		st.Judge = j
		res := transitionResult{Outcome: &JudgeRecorded{FlowID: st.FlowID, StepID: t.StepID}}
		if t.Verdict != nil {
			res.Events = append(res.Events, event(st, env, t.StepID, JudgeVerdict{Judge: t.Verdict}))
		}
		return res, nil
	})
}
