package clijson

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

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
	state.FlowSummary
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
	// (state.FlowSummary.Stalled: a runner's flow whose lease was released or
	// expired; `stratum run --resume ID` continues it). Absent otherwise, so
	// status stays the original's.
	Stalled bool `json:"stalled,omitempty"`
	// Review shadows the summary's gate review (its question), which the
	// original's objects do not have: always nil, so never written.
	Review *state.GateReview `json:"review,omitempty"`
}

// Flows is `stratum query flows`: one FlowEntry per summary, in the
// given order (never null: no flows is []); now decides which are stalled.
func Flows(list []state.FlowSummary, now time.Time) []FlowEntry {
	out := make([]FlowEntry, 0, len(list))
	for _, sum := range list {
		out = append(out, flowEntry(sum, now))
	}
	return out
}

// flowEntry is one summary's FlowEntry, for Flows and WriteFlows.
func flowEntry(sum state.FlowSummary, now time.Time) FlowEntry {
	completed := sum.StepNumber
	if sum.Status.Active() {
		completed-- // StepNumber is the cursor + 1 while the flow runs
	}
	var terminal *string
	if sum.Status == state.StatusKilled {
		terminal = optStr(string(state.StatusKilled))
	}
	return FlowEntry{
		SchemaVersion:  schemaVersion,
		FlowSummary:    sum,
		CurrentStepID:  optStr(sum.CurrentStep),
		StepCount:      sum.TotalSteps,
		CompletedSteps: completed,
		TerminalStatus: terminal,
		Stalled:        sum.Stalled(now),
	}
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
	*state.FlowState
	// CurrentStepID is the flow summary's current step (engine.Summarize), null
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

// Flow renders a flow for `stratum query flow ID`. f.Flow nil (a spec
// that no longer parses) leaves step_count 0 and ordered_steps [].
func Flow(f *engine.FlowWithSpec, now time.Time) *FlowView {
	sum := engine.Summarize(f.State, f.Flow)
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

// FlowNotFound is `stratum query flow ID` for an unknown flow: the
// original's {"error": {"code": "NOT_FOUND", "message": "Flow 'ID' not
// found"}}, plus our _schema_version and ok: false (as `stratum gate`).
func FlowNotFound(flowID string) engine.Response {
	return engine.Response{"_schema_version": schemaVersion, "ok": false,
		"error": map[string]any{"code": "NOT_FOUND", "message": fmt.Sprintf("Flow '%s' not found", flowID)}}
}

// FlowRefused is `stratum query flow ID` when ID cannot be resolved
// (Query.ResolveFlowID): FlowNotFound for flow_not_found, else
// {"_schema_version", "ok": false, "error": {"code": error_type, "message",
// "candidates"}} (an ambiguous prefix lists the ids it matches).
func FlowRefused(flowID string, e *engine.Error) engine.Response {
	if e == nil || e.Type == engine.ErrTypeFlowNotFound {
		return FlowNotFound(flowID)
	}
	return engine.Response{"_schema_version": schemaVersion, "ok": false, "error": queryError(e)}
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

	Status       state.FlowStatus `json:"status"`
	Round        int              `json:"round"`
	StepNumber   int              `json:"step_number"`
	TotalSteps   int              `json:"total_steps"`
	UpdatedAt    time.Time        `json:"updated_at"`
	DispatchedAt time.Time        `json:"dispatched_at"`
	Deadline     *time.Time       `json:"deadline"`
	Approver     string           `json:"approver"`
	OnTimeout    string           `json:"on_timeout"`

	// A review of a Go program (library flows) adds what it asks and the
	// values to pick from (numbered from 1 by --option).
	Question string            `json:"question,omitempty"`
	Trigger  string            `json:"trigger,omitempty"`
	Options  []json.RawMessage `json:"options,omitempty"`
}

// Gates is `stratum query gates`: one GateEntry per waiting gate, in
// the given order (never null: no gates is []).
func Gates(gates []engine.GateStep) []GateEntry {
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
// for a GateConflict). next and err are the decision's answer (review.Service.Decide); err must be
// nil or carry a *engine.Error (a store failure has no JSON answer).
func GateAnswer(flowID, stepID string, outcome review.Outcome, next engine.Outcome, err error) (engine.Response, GateVerdict) {
	r := engine.Response{"_schema_version": schemaVersion, "flow_id": flowID, "step_id": stepID, "outcome": string(outcome)}
	e := engine.AsError(err)
	switch {
	case err == nil:
		r["ok"] = true
		r["result"] = next.WireStatus()
		return r, GateResolved
	case e == nil: // not an envelope: the engine's internal error
		w := engine.Wire(nil, err)
		r["ok"] = false
		r["error"] = map[string]any{"code": w["error_type"], "message": w["message"]}
		return r, GateRefused
	case e.Committed(): // max_rounds_exceeded: the decision was recorded
		r["ok"] = true
		r["result"] = string(e.Type)
		return r, GateResolved
	case e.Type == engine.ErrTypeFlowNotFound:
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
func queryError(e *engine.Error) map[string]any {
	m := map[string]any{"code": string(e.Type), "message": e.Message}
	if e.Type == engine.ErrTypeAmbiguousFlowID {
		m["candidates"] = e.Candidates
	}
	return m
}
