package engine

import (
	"encoding/json"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// Response is the wire form of an answer: a JSON object with the original
// server's exact keys. Only Wire builds it; the MCP server and the CLI print
// it, nothing inside stratum reads it back.
type Response map[string]any

// Wire renders a transition's answer as the original server's JSON object:
// the outcome's own keys, or the envelope of a *Error in err's chain. Any
// other error (a store failure) renders as the internal_error envelope,
// which never carries details. Wire(nil, nil) is nil.
//
// This is the one place the wire format is written: the MCP tools and the
// CLI's JSON output both print what it returns. The CLI's own query and
// gate objects are engine/clijson's.
func Wire(out Outcome, err error) Response {
	if err != nil {
		if e := AsError(err); e != nil {
			return e.wire()
		}
		return internalError().wire()
	}
	if out == nil {
		return nil
	}
	return out.wire()
}

// isErrorResponse reports whether r is an error envelope.
func isErrorResponse(r Response) bool {
	s, _ := r["status"].(string)
	return s == "error"
}

func (e *Error) wire() Response {
	r := Response{"status": "error", "error_type": string(e.Type), "message": e.Message}
	if e.Translated {
		r["success"] = false
	}
	switch e.Type {
	case ErrTypeRetriesExhausted:
		r["flow_id"] = e.FlowID
		r["step_id"] = e.StepID
		r["step_mode"] = e.StepMode
		r["agent"] = nullable(e.Agent)
		r["violations"] = e.Violations
		if e.BouncedTasks != nil {
			r["bounced_tasks"] = e.BouncedTasks
		}
	case ErrTypeOutputContract:
		r["flow_id"] = e.FlowID
		r["violations"] = e.Violations
	case ErrTypeFlowOwned:
		r["flow_id"] = e.FlowID
		r["owner"] = e.Owner
	case ErrTypeStaleRound, ErrTypeMaxRoundsExceeded:
		r["round"] = e.Round
	case ErrTypeInvalidInput:
		r["problems"] = e.Problems
	case ErrTypeCheckpointUnknown:
		r["available"] = e.Available
	case ErrTypeHumanGatePending:
		r["gate_flow_id"] = e.GateFlowID
		r["gate_step_id"] = e.GateStepID
	case ErrTypeAmbiguousFlowID:
		r["candidates"] = e.Candidates
	case ErrorType(specs.ParseError), ErrorType(specs.ValidationError), ErrorType(specs.SemanticError):
		r["path"] = e.Path
		r["diagnostics"] = []specs.Diagnostic(e.Diagnostics)
		if e.Suggestion != "" {
			r["suggestion"] = e.Suggestion
		}
	}
	return r
}

func (d *StepDispatch) wire() Response {
	if d.StepMode == modeJudge {
		return d.judgeWire()
	}
	r := Response{
		"status":            dispatchExecuteStep,
		"flow_id":           d.FlowID,
		"step_number":       d.StepNumber,
		"total_steps":       d.TotalSteps,
		"step_id":           d.StepID,
		"step_mode":         d.StepMode,
		"agent":             nullable(d.Agent),
		"inputs":            d.Inputs,
		"output_contract":   nullable(d.OutputContract),
		"output_fields":     d.OutputFields,
		"ensure":            d.Ensure,
		"retries_remaining": d.RetriesRemaining,
	}
	switch d.StepMode {
	case modeFunction:
		r["function"] = d.Function
		r["mode"] = d.Mode
		r["intent"] = d.Intent
	case modeInline:
		r["intent"] = d.Intent
		r["model"] = nullable(d.Model)
	default: // decompose
		r["intent"] = d.Intent
	}
	if d.ReviseFeedback != nil {
		r["revise_feedback"] = d.ReviseFeedback
	}
	return d.apply(r)
}

func (d *ParallelDispatch) wire() Response {
	r := Response{
		"status":            dispatchParallel,
		"flow_id":           d.FlowID,
		"step_number":       d.StepNumber,
		"total_steps":       d.TotalSteps,
		"step_id":           d.StepID,
		"step_mode":         d.StepMode,
		"tasks":             d.Tasks,
		"agent":             nullable(d.Agent),
		"max_concurrent":    d.MaxConcurrent,
		"isolation":         d.Isolation,
		"require":           d.Require,
		"merge":             d.Merge,
		"intent_template":   d.IntentTemplate,
		"ensure":            d.Ensure,
		"retries_remaining": d.RetriesRemaining,
	}
	if d.PreMergeVerify != nil {
		r["pre_merge_verify"] = d.PreMergeVerify
	}
	if d.Pipeline {
		r["intent_template"] = nil
		r["pipeline"] = true
		r["stages"] = d.Stages
	}
	if d.ReviseFeedback != nil {
		r["revise_feedback"] = d.ReviseFeedback
	}
	return d.apply(r)
}

func (d *GateDispatch) wire() Response {
	var timeout, deadline any
	if d.Timeout > 0 {
		timeout = d.Timeout
	}
	if d.Deadline != nil {
		deadline = d.Deadline.UTC().Format(time.RFC3339Nano)
	}
	return d.apply(Response{
		"status":      dispatchAwaitGate,
		"flow_id":     d.FlowID,
		"step_number": d.StepNumber,
		"total_steps": d.TotalSteps,
		"step_id":     d.StepID,
		"step_mode":   modeFunction,
		"function":    d.Function,
		"agent":       nullable(d.Agent),
		"on_approve":  nullable(d.OnApprove),
		"on_revise":   nullable(d.OnRevise),
		"on_kill":     nullable(d.OnKill),
		"timeout":     timeout,
		"deadline":    deadline,
		"approver":    string(d.Approver),
	})
}

func (d *ChildDispatch) wire() Response {
	return d.apply(Response{
		"status":          dispatchExecuteFlow,
		"parent_flow_id":  d.ParentFlowID,
		"parent_step_id":  d.ParentStepID,
		"child_flow_id":   d.ChildFlowID,
		"child_flow_name": d.ChildFlowName,
		"child_step":      Wire(d.Child, nil),
		"step_number":     d.StepNumber,
		"total_steps":     d.TotalSteps,
	})
}

func (c *Completion) wire() Response {
	r := Response{
		"status":            string(c.Status),
		"flow_id":           c.FlowID,
		"trace":             c.Trace,
		"total_duration_ms": c.TotalDurationMS,
	}
	if c.HasOutput {
		r["output"] = c.Output
	}
	return c.apply(r)
}

func (s *Stopped) wire() Response {
	return Response{"status": string(s.Status), "flow_id": s.FlowID}
}

func (b *BudgetExhausted) wire() Response {
	return Response{"status": string(state.StatusBudgetExhausted), "flow_id": b.FlowID, "step_id": nullable(b.StepID), "reason": b.Reason,
		"output": b.Output, "trace": b.Trace, "total_duration_ms": b.TotalDurationMS, "budget_state": b.BudgetState}
}

func (c *callRecorded) wire() Response {
	return Response{"status": "recorded", "flow_id": c.FlowID, "budget_state": c.Budget}
}

func (n *notTimedOut) wire() Response {
	if n.Remaining != nil {
		return Response{"status": "no_timeout", "remaining_seconds": *n.Remaining}
	}
	return Response{"status": "no_timeout", "message": n.Message}
}

func (c *checkpointCommitted) wire() Response {
	return Response{
		"status":          "committed",
		"flow_id":         c.FlowID,
		"label":           c.Label,
		"step_number":     c.StepNumber,
		"current_step_id": nullable(c.CurrentStepID),
		"checkpoints":     c.Checkpoints,
	}
}

func (i *iterationStarted) wire() Response {
	return Response{
		"status":         "iteration_started",
		"flow_id":        i.FlowID,
		"step_id":        i.StepID,
		"max_iterations": i.MaxIterations,
		"exit_criterion": nullable(i.ExitCriterion),
		"iteration":      0,
	}
}

func (i *IterationReported) wire() Response {
	r := Response{
		"status":             i.WireStatus(),
		"flow_id":            i.FlowID,
		"step_id":            i.StepID,
		"iteration":          i.Iteration,
		"max_iterations":     i.MaxIterations,
		"exit_criterion_met": i.ExitCriterionMet,
		"outcome":            i.Outcome,
	}
	if i.ExitCriterionError != "" {
		r["exit_criterion_error"] = i.ExitCriterionError
	}
	if i.Scored {
		if i.Score != nil {
			r["score"] = *i.Score
		} else {
			r["score"] = nil
		}
		if i.ScoreError != "" {
			r["score_error"] = i.ScoreError
		}
	}
	if i.Accumulating {
		r["new_count"] = i.NewCount
		r["dry_streak"] = i.DryStreak
		r["accumulated_count"] = i.AccumulatedCount
		if i.AccumulateError != "" {
			r["accumulate_error"] = i.AccumulateError
		}
	}
	if i.Exited() {
		r["final_result"] = i.FinalResult
		if i.Scored {
			r["best_score"], r["best_iteration"] = optFloat(i.BestScore), optInt(i.BestIteration)
		}
		if i.Accumulating {
			r["accumulated"] = i.Accumulated
			r["accumulated_count"] = i.AccumulatedCount
		}
	}
	return r
}

func (i *iterationAborted) wire() Response {
	r := Response{
		"status":    "iteration_aborted",
		"flow_id":   i.FlowID,
		"step_id":   i.StepID,
		"iteration": i.Iteration,
		"reason":    i.Reason,
	}
	if i.Scored {
		r["best_result"] = i.BestResult
		r["best_score"] = optFloat(i.BestScore)
	}
	return r
}

func (a *AuditReport) wire() Response {
	rounds := make([]map[string]any, len(a.Rounds))
	for i, rd := range a.Rounds {
		rounds[i] = map[string]any{"round": rd.Round, "steps": rd.Steps}
	}
	r := Response{
		"flow_id":             a.FlowID,
		"flow_name":           a.FlowName,
		"status":              a.Status,
		"steps_completed":     a.StepsCompleted,
		"total_steps":         a.TotalSteps,
		"trace":               a.Trace,
		"round":               a.Round,
		"rounds":              rounds,
		"iterations":          a.Iterations,
		"archived_iterations": a.ArchivedIterations,
		"child_audits":        a.ChildAudits,
		"total_duration_ms":   a.TotalDurationMS,
		"created_at":          a.CreatedAt,
		"updated_at":          a.UpdatedAt,
		"flow_status":         string(a.FlowStatus),
		"cache_hits":          a.CacheHits,
		"budget_state":        a.BudgetState,
	}
	if a.Gate != nil {
		r["gate"] = a.Gate
	}
	if a.Calls != nil {
		r["calls"] = a.Calls
	}
	if a.Judge != nil {
		r["judge_history"] = a.Judge.History
		r["judge_outcome"] = a.Judge.Outcome
	}
	return r
}

// optFloat renders a missing number as null.
func optFloat(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func optInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// MarshalJSON renders the wire form, so json.Marshal of any outcome (or
// *Error) gives what a client receives.
func (e *Error) MarshalJSON() ([]byte, error)               { return json.Marshal(e.wire()) }
func (d *StepDispatch) MarshalJSON() ([]byte, error)        { return json.Marshal(d.wire()) }
func (d *ParallelDispatch) MarshalJSON() ([]byte, error)    { return json.Marshal(d.wire()) }
func (d *GateDispatch) MarshalJSON() ([]byte, error)        { return json.Marshal(d.wire()) }
func (d *ChildDispatch) MarshalJSON() ([]byte, error)       { return json.Marshal(d.wire()) }
func (c *Completion) MarshalJSON() ([]byte, error)          { return json.Marshal(c.wire()) }
func (s *Stopped) MarshalJSON() ([]byte, error)             { return json.Marshal(s.wire()) }
func (b *BudgetExhausted) MarshalJSON() ([]byte, error)     { return json.Marshal(b.wire()) }
func (c *callRecorded) MarshalJSON() ([]byte, error)        { return json.Marshal(c.wire()) }
func (n *notTimedOut) MarshalJSON() ([]byte, error)         { return json.Marshal(n.wire()) }
func (c *checkpointCommitted) MarshalJSON() ([]byte, error) { return json.Marshal(c.wire()) }
func (i *iterationStarted) MarshalJSON() ([]byte, error)    { return json.Marshal(i.wire()) }
func (i *IterationReported) MarshalJSON() ([]byte, error)   { return json.Marshal(i.wire()) }
func (i *iterationAborted) MarshalJSON() ([]byte, error)    { return json.Marshal(i.wire()) }
func (a *AuditReport) MarshalJSON() ([]byte, error)         { return a.appendWire(nil) }

// judgeWire is the original's dispatch of a judge step.
func (d *StepDispatch) judgeWire() Response {
	var preds []map[string]any
	var stakes string
	var budget any
	if j := d.Judge; j != nil {
		preds = make([]map[string]any, len(j.Predicates))
		for i, p := range j.Predicates {
			preds[i] = p.Raw
		}
		stakes = j.Stakes
		if j.Budget != nil && j.Budget.Raw != nil {
			budget = j.Budget.Raw
		}
	}
	r := Response{
		"status":            dispatchExecuteStep,
		"flow_id":           d.FlowID,
		"step_number":       d.StepNumber,
		"total_steps":       d.TotalSteps,
		"step_id":           d.StepID,
		"step_mode":         d.StepMode,
		"agent":             nullable(d.Agent),
		"predicates":        preds,
		"stakes":            stakes,
		"budget":            budget,
		"ensure":            d.Ensure,
		"retries_remaining": d.RetriesRemaining,
	}
	if d.ReviseFeedback != nil {
		r["revise_feedback"] = d.ReviseFeedback
	}
	return d.apply(r)
}
