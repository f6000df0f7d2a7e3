package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/review"
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
// gate objects (QueryFlows, QueryFlow, QueryGates, GateAnswer) are written
// at the end of this file.
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
	return Response{"status": string(StatusBudgetExhausted), "flow_id": b.FlowID, "step_id": nullable(b.StepID), "reason": b.Reason}
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

func (a *auditReport) wire() Response {
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
	}
	if a.Gate != nil {
		r["gate"] = a.Gate
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
func (a *auditReport) MarshalJSON() ([]byte, error)         { return json.Marshal(a.wire()) }

// The CLI's JSON contract: `stratum query` and `stratum gate` print these
// objects, the original's "stratum-mcp query" forms. They are written here,
// beside Wire, so the JSON stratum prints is written in one file; a gate's
// next status is the outcome's WireStatus.

// schemaVersion is the "_schema_version" of the CLI's JSON contract.
const schemaVersion = "1"

// The `stratum query` objects are the original's ("stratum-mcp query",
// _query_flows/_query_flow/_query_gates): `query flows` and `query gates`
// print a JSON list of objects, `query flow ID` one flat object, each with
// "_schema_version" and the original's keys; our own fields ride along in
// each object. Their renderers are the types below.

// FlowEntry is one element of `stratum query flows`: the original's keys
// (_schema_version, flow_id, flow_name, status, current_step_id, round,
// step_count, completed_steps, terminal_status) and the rest of the flow's
// summary (step_number, total_steps, driver, parent_flow_id, gate, owner,
// created_at, updated_at, version).
type FlowEntry struct {
	SchemaVersion string `json:"_schema_version"`
	FlowSummary
	// CurrentStepID is the summary's current step, null once the flow has
	// finished. It shadows the embedded summary's omitempty field of the
	// same JSON name (the shallower field wins).
	CurrentStepID *string `json:"current_step_id"`
	StepCount     int     `json:"step_count"`
	// CompletedSteps is the cursor (the original's current_idx).
	CompletedSteps int `json:"completed_steps"`
	// TerminalStatus is "killed" for a killed flow, else null (summaries do
	// not carry the state's terminal_status; while a kill's cleanup step runs
	// the flow is still running and this is null until it ends).
	TerminalStatus *string `json:"terminal_status"`
	// Stalled is ours: true when nothing drives the flow any more
	// (FlowSummary.Stalled: a runner's flow whose lease was released or
	// expired; `stratum run --resume ID` continues it). Absent otherwise, so
	// status stays the original's.
	Stalled bool `json:"stalled,omitempty"`
}

// QueryFlows is `stratum query flows`: one FlowEntry per summary, in the
// given order (never null: no flows is []); now decides which are stalled.
func QueryFlows(list []FlowSummary, now time.Time) []FlowEntry {
	out := make([]FlowEntry, 0, len(list))
	for _, sum := range list {
		completed := sum.StepNumber
		if sum.Status.Active() {
			completed-- // StepNumber is the cursor + 1 while the flow runs
		}
		var terminal *string
		if sum.Status == StatusKilled {
			terminal = strPtr(string(StatusKilled))
		}
		out = append(out, FlowEntry{
			SchemaVersion:  schemaVersion,
			FlowSummary:    sum,
			CurrentStepID:  optStr(sum.CurrentStep),
			StepCount:      sum.TotalSteps,
			CompletedSteps: completed,
			TerminalStatus: terminal,
			Stalled:        sum.Stalled(now),
		})
	}
	return out
}

// FlowView is `stratum query flow ID`: the original's keys
// (_schema_version, flow_id, flow_name, status, current_step_id,
// current_idx, round, rounds_count, step_count, terminal_status,
// step_outputs, records, rounds, ordered_steps) at the top level, with every
// other field of the persisted state beside them (raw_spec, inputs,
// attempts, checkpoints, iterations…, and ours: created_at, updated_at,
// gate, driver, owner, version…).
type FlowView struct {
	SchemaVersion string `json:"_schema_version"`
	*FlowState
	// CurrentStepID is the flow summary's current step (Summarize), null
	// once the flow has finished.
	CurrentStepID *string       `json:"current_step_id"`
	RoundsCount   int           `json:"rounds_count"`
	StepCount     int           `json:"step_count"`
	OrderedSteps  []OrderedStep `json:"ordered_steps"`
	// Stalled is ours, as in FlowEntry: true when nothing drives the flow.
	Stalled bool `json:"stalled,omitempty"`
}

// OrderedStep is one element of FlowView's ordered_steps: the step id, its
// function (null for a step without one) and mode "gate" or "step".
type OrderedStep struct {
	ID       string  `json:"id"`
	Function *string `json:"function"`
	Mode     string  `json:"mode"`
}

// QueryFlow renders a flow for `stratum query flow ID`. f.Flow nil (a spec
// that no longer parses) leaves step_count 0 and ordered_steps [].
func QueryFlow(f *FlowWithSpec, now time.Time) *FlowView {
	sum := Summarize(f.State, f.Flow)
	v := &FlowView{
		SchemaVersion: schemaVersion,
		FlowState:     f.State,
		CurrentStepID: optStr(sum.CurrentStep),
		RoundsCount:   len(f.State.Rounds),
		StepCount:     sum.TotalSteps,
		OrderedSteps:  []OrderedStep{},
		Stalled:       sum.Stalled(now),
	}
	if f.Flow != nil {
		for _, s := range f.Flow.OrderedSteps() {
			mode := "step"
			if s.IsGate() {
				mode = "gate"
			}
			v.OrderedSteps = append(v.OrderedSteps, OrderedStep{ID: s.ID, Function: optStr(s.Function), Mode: mode})
		}
	}
	return v
}

// QueryFlowNotFound is `stratum query flow ID` for an unknown flow: the
// original's {"error": {"code": "NOT_FOUND", "message": "Flow 'ID' not
// found"}}, plus our _schema_version and ok: false (as `stratum gate`).
func QueryFlowNotFound(flowID string) Response {
	return Response{"_schema_version": schemaVersion, "ok": false,
		"error": map[string]any{"code": "NOT_FOUND", "message": fmt.Sprintf("Flow '%s' not found", flowID)}}
}

// QueryFlowRefused is `stratum query flow ID` when ID cannot be resolved
// (Service.ResolveFlowID): QueryFlowNotFound for flow_not_found, else
// {"_schema_version", "ok": false, "error": {"code": error_type, "message",
// "candidates"}} (an ambiguous prefix lists the ids it matches).
func QueryFlowRefused(flowID string, e *Error) Response {
	if e == nil || e.Type == ErrTypeFlowNotFound {
		return QueryFlowNotFound(flowID)
	}
	return Response{"_schema_version": schemaVersion, "ok": false, "error": queryError(e)}
}

// GateEntry is one element of `stratum query gates`: the original's keys
// (_schema_version, flow_id, flow_name, step_id, function, on_approve,
// on_revise, on_kill, timeout — null when the spec does not say, or no
// longer parses) and ours: the flow's status, round, step_number,
// total_steps and updated_at, and the pending gate's dispatched_at,
// deadline, approver and on_timeout.
type GateEntry struct {
	SchemaVersion string  `json:"_schema_version"`
	FlowID        string  `json:"flow_id"`
	FlowName      string  `json:"flow_name"`
	StepID        string  `json:"step_id"`
	Function      *string `json:"function"`
	OnApprove     *string `json:"on_approve"`
	OnRevise      *string `json:"on_revise"`
	OnKill        *string `json:"on_kill"`
	Timeout       *int    `json:"timeout"`

	Status       FlowStatus `json:"status"`
	Round        int        `json:"round"`
	StepNumber   int        `json:"step_number"`
	TotalSteps   int        `json:"total_steps"`
	UpdatedAt    time.Time  `json:"updated_at"`
	DispatchedAt time.Time  `json:"dispatched_at"`
	Deadline     *time.Time `json:"deadline"`
	Approver     string     `json:"approver"`
	OnTimeout    string     `json:"on_timeout"`

	// A review of a Go program (library flows) adds what it asks and the
	// values to pick from (numbered from 1 by --option).
	Question string            `json:"question,omitempty"`
	Trigger  string            `json:"trigger,omitempty"`
	Options  []json.RawMessage `json:"options,omitempty"`
}

// QueryGates is `stratum query gates`: one GateEntry per waiting gate, in
// the given order (never null: no gates is []).
func QueryGates(gates []GateStep) []GateEntry {
	out := make([]GateEntry, 0, len(gates))
	for _, g := range gates {
		p := g.Summary
		e := GateEntry{SchemaVersion: schemaVersion, FlowID: p.FlowID, FlowName: p.FlowName,
			Status: p.Status, Round: p.Round, StepNumber: p.StepNumber, TotalSteps: p.TotalSteps, UpdatedAt: p.UpdatedAt}
		if p.Gate != nil {
			e.StepID, e.DispatchedAt, e.Deadline = p.Gate.StepID, p.Gate.DispatchedAt, p.Gate.Deadline
			e.Approver, e.OnTimeout = p.Gate.Approver, p.Gate.OnTimeout
		}
		if r := g.Review; r != nil {
			e.Question, e.Trigger, e.Options = r.Question, r.Trigger, r.Options
		}
		if s := g.Step; s != nil {
			e.Function = optStr(s.Function)
			e.OnApprove, e.OnRevise, e.OnKill = optStr(s.OnApprove), optStr(s.OnRevise), optStr(s.OnKill)
			if s.Fn != nil && s.Fn.Timeout > 0 {
				t := s.Fn.Timeout
				e.Timeout = &t
			}
		}
		out = append(out, e)
	}
	return out
}

// optStr is s, or nil (JSON null) when s is empty.
func optStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// GateVerdict classifies the answer to a gate decision made from a shell;
// the CLI maps it to its exit status.
type GateVerdict int

// Gate verdicts.
const (
	// GateResolved: the decision was recorded (a max_rounds_exceeded answer
	// included: it is committed).
	GateResolved GateVerdict = iota
	// GateNotFound: no flow with that id.
	GateNotFound
	// GateConflict: the gate was already decided or is in another round
	// (review.ErrAlreadyDecided, review.ErrStaleRound), or STEP is not the
	// gate waiting.
	GateConflict
	// GateRefused: any other error envelope.
	GateRefused
)

// GateAnswer is `stratum gate VERB FLOW STEP`'s JSON: {_schema_version,
// ok, flow_id, step_id, outcome} plus result (the flow's next status) when
// the decision was recorded, else error {code, message} (and conflict: true
// for a GateConflict). next and err are GateResolve's answer; err must be
// nil or carry a *Error (a store failure has no JSON answer).
func GateAnswer(flowID, stepID string, outcome review.Outcome, next Outcome, err error) (Response, GateVerdict) {
	r := Response{"_schema_version": schemaVersion, "flow_id": flowID, "step_id": stepID, "outcome": string(outcome)}
	e := AsError(err)
	switch {
	case err == nil:
		r["ok"] = true
		r["result"] = next.WireStatus()
		return r, GateResolved
	case e == nil:
		e = internalError()
	case e.Committed(): // max_rounds_exceeded: the decision was recorded
		r["ok"] = true
		r["result"] = string(e.Type)
		return r, GateResolved
	case e.Type == ErrTypeFlowNotFound:
		r["ok"] = false
		r["error"] = map[string]any{"code": "NOT_FOUND", "message": e.Message}
		return r, GateNotFound
	case errors.Is(e, review.ErrAlreadyDecided), errors.Is(e, review.ErrStaleRound):
		r["ok"] = false
		r["conflict"] = true
		r["error"] = map[string]any{"code": string(e.Type), "message": e.Message}
		return r, GateConflict
	}
	r["ok"] = false
	r["error"] = queryError(e)
	return r, GateRefused
}

// queryError is the "error" object of `stratum gate` and `stratum query
// flow` for an envelope: its error_type as code, its message, and for
// ambiguous_flow_id the candidates.
func queryError(e *Error) map[string]any {
	m := map[string]any{"code": string(e.Type), "message": e.Message}
	if e.Type == ErrTypeAmbiguousFlowID {
		m["candidates"] = e.Candidates
	}
	return m
}
