package engine

import (
	"encoding/json"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// Payload is what an event carries besides its flow, step and time: one
// struct type per event kind (FlowCreated for flow_created, StepDone for
// step_done, …), named like the kind's EventType constant without its
// Event prefix. A reader switches on the concrete type:
//
//	switch p := ev.Data.(type) {
//	case engine.StepFailed:
//		… p.Violations …
//	case engine.GateResolved:
//		… p.Outcome …
//	}
//
// Data is nil on an event that carries nothing. The interface is sealed
// (its encoding method is unexported): every payload is declared in this
// package, beside its encoding (payload_codec.go), so the keys it writes
// to the log follow from its type.
//
// Adding an event kind: declare its EventType, a struct with json tags
// (fields in key order, alphabetical), its Kind and appendData methods,
// its decoder in payloadDecoders, and emit it with event(st, env, stepID,
// payload). TestPayloadsEncodeTheirTags and TestEveryPayloadIsDecoded
// check the rest.
type Payload interface {
	// Kind is the event type that carries this payload.
	Kind() EventType
	// appendData writes the payload's keys to w, in key order, and
	// returns w (a value, so writing allocates nothing).
	appendData(w dataWriter) dataWriter
}

// FlowCreated is the payload of flow_created: a flow planned from a spec,
// a child flow started by its parent's step, or a Go program's flow.
type FlowCreated struct {
	// Driver is who drives the flow (agent, runner, library).
	Driver string `json:"driver,omitempty"`
	// FlowName is the flow's name.
	FlowName string `json:"flow_name,omitempty"`
	// ParentFlowID and ParentStepID are a child flow's parent and the
	// step that started it.
	ParentFlowID string `json:"parent_flow_id,omitempty"`
	ParentStepID string `json:"parent_step_id,omitempty"`
	// SpecFile is where the spec came from ("" unknown).
	SpecFile string `json:"spec_file,omitempty"`
}

// StepDispatched is the payload of step_dispatched.
type StepDispatched struct {
	// StepMode is the dispatched step's mode.
	StepMode string `json:"step_mode,omitempty"`
}

// StepDone is the payload of step_done.
type StepDone struct {
	// Attempts is the attempt the step succeeded at (0 when the result
	// came from the result cache).
	Attempts int `json:"attempts,omitempty"`
	// CacheHit is true when the step's result came from the result cache
	// and it was not dispatched.
	CacheHit bool `json:"cache_hit,omitempty"`
}

// StepFailed is the payload of step_failed: a failed attempt.
type StepFailed struct {
	// Attempt is the failed attempt.
	Attempt int `json:"attempt,omitempty"`
	// Exhausted is true on the step's last attempt.
	Exhausted bool `json:"exhausted,omitempty"`
	// Status is the check that failed (a CheckFailure).
	Status string `json:"status,omitempty"`
	// Violations are the attempt's violations.
	Violations []string `json:"violations,omitempty"`
}

// StepSkipped is the payload of step_skipped.
type StepSkipped struct {
	// Reason is why the step was skipped.
	Reason string `json:"reason,omitempty"`
}

// GateOpened is the payload of gate_opened: a gate of a spec's flow, or a
// review a Go program opened.
type GateOpened struct {
	// Approver is who may resolve the gate (any, human…).
	Approver string `json:"approver,omitempty"`
	// Deadline is the gate's deadline (nil: none), in UTC.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Policy is the gate's policy when it could not approve the gate, and
	// PolicyFailed why (the gate waits for a reviewer: policy_fallback).
	Policy       string `json:"policy,omitempty"`
	PolicyFailed string `json:"policy_failed,omitempty"`
	// Round is the round the gate opened in.
	Round int `json:"round,omitempty"`
}

// GateResolved is the payload of gate_resolved: the whole decision, so a
// waiter acts on it without reading the flow (Event.GateDecision; a Go
// program's review: ReviewNews).
type GateResolved struct {
	// Channel is how the gate was resolved (tui, mcp, policy…).
	Channel string `json:"channel,omitempty"`
	// MaxRoundsExceeded is true on a revise that max_rounds refused (the
	// gate waits on in its round).
	MaxRoundsExceeded bool `json:"max_rounds_exceeded,omitempty"`
	// Option is the option (1-based) a Go program's review was approved
	// with, when one was picked.
	Option int `json:"option,omitempty"`
	// Outcome is the decision (approve, revise, kill; withdrawn for a Go
	// program's review nobody decided).
	Outcome string `json:"outcome,omitempty"`
	// Policy is the gate's own policy when it resolved the gate.
	Policy string `json:"policy,omitempty"`
	// Rationale is the decision's rationale.
	Rationale string `json:"rationale,omitempty"`
	// ResolvedBy is who resolved the gate (human, agent, system).
	ResolvedBy string `json:"resolved_by,omitempty"`
	// ReviewStatus is how a Go program's review was closed (approved,
	// rejected, timed_out, withdrawn); "" on a spec's gate, and on a
	// review's decision an older build logged.
	ReviewStatus string `json:"review_status,omitempty"`
	// Reviewer names the person who resolved the gate, when known.
	Reviewer string `json:"reviewer,omitempty"`
	// ReviseTarget is the step a revise sends the flow back to.
	ReviseTarget string `json:"revise_target,omitempty"`
	// Round is the round the gate was resolved in.
	Round int `json:"round,omitempty"`
	// Value is the value a Go program's review was decided with (JSON;
	// nil when none was: a rejection, a timeout without OnTimeout).
	Value json.RawMessage `json:"value,omitempty"`
}

// Checkpoint is the payload of checkpoint: a commit or a revert.
type Checkpoint struct {
	// Action is commit or revert.
	Action string `json:"action,omitempty"`
	// Channel is how a revert came in (tui, mcp…).
	Channel string `json:"channel,omitempty"`
	// Label is the checkpoint's label.
	Label string `json:"label,omitempty"`
	// StepNumber is the checkpoint's step number (1-based).
	StepNumber int `json:"step_number,omitempty"`
}

// IterationReport is the payload of iteration_report: a loop started
// (Action start), an iteration reported (report) or the loop aborted
// (abort).
type IterationReport struct {
	// Action is start, report or abort.
	Action string `json:"action,omitempty"`
	// DryStreak is the run of reports that added nothing new (set with
	// NewCount).
	DryStreak *int `json:"dry_streak,omitempty"`
	// ExitCriterionMet is a report's exit criterion.
	ExitCriterionMet bool `json:"exit_criterion_met,omitempty"`
	// Iteration is the iteration reported or aborted at.
	Iteration int `json:"iteration,omitempty"`
	// MaxIterations is a started loop's bound.
	MaxIterations int `json:"max_iterations,omitempty"`
	// NewCount is how many new items a report accumulated (nil: the step
	// accumulates nothing).
	NewCount *int `json:"new_count,omitempty"`
	// Outcome is a report's outcome (continue, exit_success…).
	Outcome string `json:"outcome,omitempty"`
	// Reason is why the loop was aborted.
	Reason string `json:"reason,omitempty"`
	// Score is a report's score (nil: not scored).
	Score *float64 `json:"score,omitempty"`
}

// FlowFinished is the payload of flow_finished.
type FlowFinished struct {
	// Channel, Rationale and Reviewer are how, why and by whom a flow was
	// killed from outside.
	Channel   string `json:"channel,omitempty"`
	Rationale string `json:"rationale,omitempty"`
	// Reason is why the flow finished early (budget exhaustion, an
	// abandoned child).
	Reason   string `json:"reason,omitempty"`
	Reviewer string `json:"reviewer,omitempty"`
	// Status is the flow's final status.
	Status string `json:"status,omitempty"`
}

// Trace is the payload of trace: one executor call the runner or a Go
// program recorded.
type Trace struct {
	// Attempt is the attempt the call was for (a Go program's call: how
	// many attempts it took).
	Attempt int `json:"attempt,omitempty"`
	// CacheHit is true on a call served from the result cache.
	CacheHit bool `json:"cache_hit,omitempty"`
	// ChildFlowID is, on a call booked to an ancestor's ledger, the child
	// flow that made it.
	ChildFlowID string `json:"child_flow_id,omitempty"`
	// CostUSD is the call's cost (nil: unknown).
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// DurationMS is the call's time.
	DurationMS int64 `json:"duration_ms,omitempty"`
	// ErrorKind is a failed call's kind of failure (one of the Attempt*
	// constants); it comes with Violations.
	ErrorKind string `json:"error_kind,omitempty"`
	// Executor is the call's executor (infer, command, agent…).
	Executor string `json:"executor,omitempty"`
	// TaskID is the fan-out task the call ran for.
	TaskID string `json:"task_id,omitempty"`
	// Tokens is the call's token count.
	Tokens int64 `json:"tokens,omitempty"`
	// Trace is the call's trace record, when the runner kept one (infer
	// calls): which function and model ran and what it returned.
	Trace *state.TraceRecord `json:"trace,omitempty"`
	// Violations are a failed call's violations.
	Violations []string `json:"violations,omitempty"`
}

// ParallelTask is the payload of parallel_task: a task of a
// parallel_dispatch step changing state.
type ParallelTask struct {
	// Branch is the task's branch, once it has one.
	Branch string `json:"branch,omitempty"`
	// DurationMS is the task's run time.
	DurationMS int64 `json:"duration_ms,omitempty"`
	// Error is why the task failed.
	Error string `json:"error,omitempty"`
	// Runs is how many times the task has run.
	Runs int `json:"runs,omitempty"`
	// State is the task's state (the Task* constants).
	State string `json:"state,omitempty"`
	// TaskID is the task.
	TaskID string `json:"task_id,omitempty"`
	// Violations are a failed task's violations.
	Violations []string `json:"violations,omitempty"`
	// Worktree is the task's worktree, once it has one.
	Worktree string `json:"worktree,omitempty"`
}

// JudgeVerdict is the payload of judge_verdict: a judge turn recorded on
// a judge step.
type JudgeVerdict struct {
	// Judge is the turn's verdict with each predicate's evidence.
	Judge *state.JudgeVerdict `json:"judge,omitempty"`
}

// Kind is flow_created.
func (FlowCreated) Kind() EventType { return EventFlowCreated }

// Kind is step_dispatched.
func (StepDispatched) Kind() EventType { return EventStepDispatched }

// Kind is step_done.
func (StepDone) Kind() EventType { return EventStepDone }

// Kind is step_failed.
func (StepFailed) Kind() EventType { return EventStepFailed }

// Kind is step_skipped.
func (StepSkipped) Kind() EventType { return EventStepSkipped }

// Kind is gate_opened.
func (GateOpened) Kind() EventType { return EventGateOpened }

// Kind is gate_resolved.
func (GateResolved) Kind() EventType { return EventGateResolved }

// Kind is checkpoint.
func (Checkpoint) Kind() EventType { return EventCheckpoint }

// Kind is iteration_report.
func (IterationReport) Kind() EventType { return EventIterationReport }

// Kind is flow_finished.
func (FlowFinished) Kind() EventType { return EventFlowFinished }

// Kind is trace.
func (Trace) Kind() EventType { return EventTrace }

// Kind is parallel_task.
func (ParallelTask) Kind() EventType { return EventParallelTask }

// Kind is judge_verdict.
func (JudgeVerdict) Kind() EventType { return EventJudgeVerdict }

// The keys each payload writes, in key order. A key marked always is
// written even when zero: the keys its transition always sets (the log has
// always held them so); any other is written when set.

func (p FlowCreated) appendData(w dataWriter) dataWriter {
	child := p.ParentFlowID != ""
	w.str("driver", p.Driver, !child)
	w.str("flow_name", p.FlowName, true)
	w.str("parent_flow_id", p.ParentFlowID, child)
	w.str("parent_step_id", p.ParentStepID, child)
	w.str("spec_file", p.SpecFile, !child)
	return w
}

func (p StepDispatched) appendData(w dataWriter) dataWriter {
	w.str("step_mode", p.StepMode, true)
	return w
}

func (p StepDone) appendData(w dataWriter) dataWriter {
	w.int("attempts", int64(p.Attempts), true)
	w.bool("cache_hit", p.CacheHit, false)
	return w
}

func (p StepFailed) appendData(w dataWriter) dataWriter {
	w.int("attempt", int64(p.Attempt), true)
	w.bool("exhausted", p.Exhausted, true)
	w.str("status", p.Status, true)
	w.list("violations", p.Violations, true)
	return w
}

func (p StepSkipped) appendData(w dataWriter) dataWriter {
	w.str("reason", p.Reason, true)
	return w
}

func (p GateOpened) appendData(w dataWriter) dataWriter {
	w.str("approver", p.Approver, true)
	w.deadline("deadline", p.Deadline)
	w.str("policy", p.Policy, false)
	w.str("policy_failed", p.PolicyFailed, false)
	w.int("round", int64(p.Round), true)
	return w
}

func (p GateResolved) appendData(w dataWriter) dataWriter {
	// A gate's own policy writes no resolver; a revise that sends the flow
	// back writes its target.
	byPolicy := p.Policy != ""
	revised := !byPolicy && p.Outcome == "revise" && !p.MaxRoundsExceeded
	w.str("channel", p.Channel, true)
	w.bool("max_rounds_exceeded", p.MaxRoundsExceeded, false)
	w.int("option", int64(p.Option), false)
	w.str("outcome", p.Outcome, true)
	w.str("policy", p.Policy, byPolicy)
	w.str("rationale", p.Rationale, true)
	w.str("resolved_by", p.ResolvedBy, !byPolicy)
	w.str("review_status", p.ReviewStatus, false)
	w.str("reviewer", p.Reviewer, !byPolicy)
	w.str("revise_target", p.ReviseTarget, revised)
	w.int("round", int64(p.Round), true)
	w.value("value", p.Value, p.Value == nil)
	return w
}

func (p Checkpoint) appendData(w dataWriter) dataWriter {
	w.str("action", p.Action, true)
	w.str("channel", p.Channel, false)
	w.str("label", p.Label, true)
	w.int("step_number", int64(p.StepNumber), true)
	return w
}

func (p IterationReport) appendData(w dataWriter) dataWriter {
	start, report, abort := p.Action == "start", p.Action == "report", p.Action == "abort"
	w.str("action", p.Action, start || report || abort)
	w.intPtr("dry_streak", p.DryStreak)
	w.bool("exit_criterion_met", p.ExitCriterionMet, report)
	w.int("iteration", int64(p.Iteration), report || abort)
	w.int("max_iterations", int64(p.MaxIterations), start)
	w.intPtr("new_count", p.NewCount)
	w.str("outcome", p.Outcome, report)
	w.str("reason", p.Reason, abort)
	w.float("score", p.Score)
	return w
}

func (p FlowFinished) appendData(w dataWriter) dataWriter {
	w.str("channel", p.Channel, false)
	w.str("rationale", p.Rationale, false)
	w.str("reason", p.Reason, false)
	w.str("reviewer", p.Reviewer, false)
	w.str("status", p.Status, true)
	return w
}

func (p Trace) appendData(w dataWriter) dataWriter {
	failed := p.ErrorKind != ""
	w.int("attempt", int64(p.Attempt), true)
	w.bool("cache_hit", p.CacheHit, false)
	w.str("child_flow_id", p.ChildFlowID, false)
	w.float("cost_usd", p.CostUSD)
	w.int("duration_ms", p.DurationMS, true)
	w.str("error_kind", p.ErrorKind, false)
	w.str("executor", p.Executor, false)
	w.str("task_id", p.TaskID, false)
	w.int("tokens", p.Tokens, false)
	w.trace("trace", p.Trace)
	w.list("violations", p.Violations, failed)
	return w
}

func (p ParallelTask) appendData(w dataWriter) dataWriter {
	w.str("branch", p.Branch, false)
	w.int("duration_ms", p.DurationMS, true)
	w.str("error", p.Error, false)
	w.int("runs", int64(p.Runs), true)
	w.str("state", p.State, true)
	w.str("task_id", p.TaskID, true)
	w.list("violations", p.Violations, false)
	w.str("worktree", p.Worktree, false)
	return w
}

func (p JudgeVerdict) appendData(w dataWriter) dataWriter {
	w.value("judge", p.Judge, p.Judge == nil)
	return w
}
