package engine

import (
	"errors"
	"fmt"
	"sort"

	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// ErrorType is the original's error_type of an error envelope, or ours.
type ErrorType string

// Error types of the hand-built error envelopes (upstream-behavior §2.3) and
// ours.
const (
	ErrTypeExecution         ErrorType = "execution_error"
	ErrTypeFlowNotFound      ErrorType = "flow_not_found"
	ErrTypeGateStepRequires  ErrorType = "gate_step_requires_gate_resolve"
	ErrTypeRetriesExhausted  ErrorType = "retries_exhausted"
	ErrTypeInvalidOutcome    ErrorType = "invalid_outcome"
	ErrTypeInvalidResolvedBy ErrorType = "invalid_resolved_by"
	ErrTypeFlowComplete      ErrorType = "flow_already_complete"
	ErrTypeWrongStep         ErrorType = "wrong_step"
	ErrTypeNotAGateStep      ErrorType = "not_a_gate_step"
	ErrTypeStepNotFound      ErrorType = "step_not_found"
	ErrTypeMissingOnRevise   ErrorType = "missing_on_revise"
	ErrTypeMaxRoundsExceeded ErrorType = "max_rounds_exceeded"
	ErrTypeParallelComplete  ErrorType = "flow_complete"
	ErrTypeStepMismatch      ErrorType = "step_mismatch"
	ErrTypeNotAJudgeStep     ErrorType = "not_a_judge_step"
	ErrTypeWrongStepType     ErrorType = "wrong_step_type"
	ErrTypeFanoutServerOnly  ErrorType = "fanout_server_dispatched_only"
	ErrTypeInvalidLabel      ErrorType = "invalid_label"
	ErrTypeCheckpointUnknown ErrorType = "checkpoint_not_found"
	ErrTypeGateRequiresHuman ErrorType = "gate_requires_human"    // ours: approver human refuses the mcp channel
	ErrTypeStaleRound        ErrorType = "stale_round"            // ours: a decision for another round of the gate
	ErrTypeRationaleRequired ErrorType = "rationale_required"     // ours: a revise or kill without a rationale (review.Check)
	ErrTypeFlowOwned         ErrorType = "flow_owned"             // ours: a live runner lease owns the flow
	ErrTypeHumanGatePending  ErrorType = "human_gate_pending"     // ours: the call would end, skip or orphan a pending approver: human gate
	ErrTypeFlowNotRunning    ErrorType = "flow_not_running"       // ours: the flow failed or ran out of budget
	ErrTypeInvalidInput      ErrorType = "invalid_input"          // ours: plan inputs do not match the flow's input params
	ErrTypeOutputContract    ErrorType = "output_contract_failed" // ours: the flow's output does not fit its output: contract
	ErrTypeInternal          ErrorType = "internal_error"
	// ErrTypeAmbiguousFlowID is ours: a flow id prefix that more than one
	// flow id starts with (ids.go). Its envelope carries candidates: the
	// matching ids.
	ErrTypeAmbiguousFlowID ErrorType = "ambiguous_flow_id"
	// Ours, of library flows (library.go):
	// ErrTypeLibraryFlow: a spec transition (resume, step_done, revert …)
	// on a flow a Go program drives.
	ErrTypeLibraryFlow ErrorType = "library_flow"
	// ErrTypeInvalidReviewValue: a decision's value is not one of the
	// review's options or does not fit its type; the review stays open.
	ErrTypeInvalidReviewValue ErrorType = "invalid_review_value"
	// ErrTypeReviewClosed: the review was already decided, timed out or
	// withdrawn (errors.Is review.ErrAlreadyDecided).
	ErrTypeReviewClosed ErrorType = "review_closed"
	// ErrTypeFlowStalled: a decision on a review of a Go program's flow
	// whose program has exited (its lease expired): nothing would act on
	// it, so nothing is recorded; `stratum kill` ends the flow.
	ErrTypeFlowStalled ErrorType = "flow_stalled"
)

// Error is an answer the original gives as an error envelope {status:
// "error", error_type, message, …}. Most are refusals that change nothing
// (a report for the wrong step, a decision on a gate that moved on); two are
// answered after the transition was committed: retries_exhausted (the flow
// ended failed) and max_rounds_exceeded (the revise decision was recorded,
// the gate stays current) — see Committed.
//
// Errors match the review sentinels with errors.Is: a decision on a gate
// that is no longer waiting (flow_already_complete, not_a_gate_step,
// wrong_step) is review.ErrAlreadyDecided, a decision for another round
// review.ErrStaleRound, one refused for its channel (gate_requires_human)
// review.ErrNotAllowed, and a revise or kill without a rationale
// (rationale_required) review.ErrRationaleRequired.
type Error struct {
	Type    ErrorType
	Message string
	// Translated marks the original's translated exceptions
	// (execution_error, the ir_* spec errors, internal_error): their
	// envelope carries success:false; the hand-built ones do not.
	Translated bool

	// The envelope's extra keys; which ones a type carries is fixed by Wire.
	FlowID     string   // retries_exhausted, flow_owned
	StepID     string   // retries_exhausted
	StepMode   string   // retries_exhausted
	Agent      string   // retries_exhausted ("" = null)
	Violations []string // retries_exhausted
	// BouncedTasks: retries_exhausted of a fan-out step (nil: not one).
	BouncedTasks []any
	Round        int      // stale_round, max_rounds_exceeded: the gate's current round
	Owner        string   // flow_owned: the live lease's id
	Problems     []string // invalid_input
	Available    []string // checkpoint_not_found: the flow's checkpoint labels
	GateFlowID   string   // human_gate_pending: the flow waiting at the human gate
	GateStepID   string   // human_gate_pending: the gate's step
	Candidates   []string // ambiguous_flow_id: every flow id the prefix matches
	// Spec errors (Type is the first diagnostic's ir_* error type).
	Path        string
	Suggestion  string
	Diagnostics specs.Diagnostics
}

// Error is the envelope's message (the error_type is e.Type).
func (e *Error) Error() string { return e.Message }

// Committed reports whether the transition that answered e was written:
// the flow ended failed (retries_exhausted, output_contract_failed) or the
// decision was recorded (max_rounds_exceeded).
func (e *Error) Committed() bool {
	return e.Type == ErrTypeRetriesExhausted || e.Type == ErrTypeMaxRoundsExceeded || e.Type == ErrTypeOutputContract
}

// Failed reports whether e ended the flow failed: its retries ran out, or
// its output did not fit the flow's output contract.
func (e *Error) Failed() bool {
	return e.Type == ErrTypeRetriesExhausted || e.Type == ErrTypeOutputContract
}

// Is matches the review sentinels (see Error).
func (e *Error) Is(target error) bool {
	switch target {
	case review.ErrAlreadyDecided:
		return e.Type == ErrTypeFlowComplete || e.Type == ErrTypeNotAGateStep || e.Type == ErrTypeWrongStep || e.Type == ErrTypeReviewClosed
	case review.ErrStaleRound:
		return e.Type == ErrTypeStaleRound
	case review.ErrNotAllowed:
		return e.Type == ErrTypeGateRequiresHuman
	case review.ErrRationaleRequired:
		return e.Type == ErrTypeRationaleRequired
	}
	return false
}

// AsError returns the *Error in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// refusal is a hand-built error envelope (no success key).
func refusal(t ErrorType, format string, args ...any) *Error {
	return &Error{Type: t, Message: fmt.Sprintf(format, args...)}
}

// execErrorf is the original's translated MCPExecutionError
// {status:"error", success:false, error_type:"execution_error", message}.
// Returned as a transition's Go error it aborts the transition (nothing is
// written); as Result.Err it is a refusal.
func execErrorf(format string, args ...any) *Error {
	return &Error{Type: ErrTypeExecution, Message: fmt.Sprintf(format, args...), Translated: true}
}

// internalError is the original's translated unexpected exception; the
// message never carries details.
func internalError() *Error {
	return &Error{Type: ErrTypeInternal, Message: "An unexpected error occurred.", Translated: true}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
