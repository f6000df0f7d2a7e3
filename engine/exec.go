package engine

import (
	"context"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// This file is the executor port: what the in-process runner (engine/run)
// hands to whatever executes one attempt of one step (a command, an LLM call,
// an agent CLI), and what it expects back. Executors live outside the engine
// package; the runner reports their outcome into the state machine through
// Service.StepDone (success) or Service.StepAttemptFailed (an AttemptError).

// StepRequest is one attempt of one step, as the runner hands it to an
// executor. It is read-only for the executor.
type StepRequest struct {
	FlowID string
	Spec   *specs.Spec
	Flow   *specs.Flow
	Step   *specs.Step
	// Dispatch is the engine's dispatch for this attempt (what an MCP agent
	// receives from plan/step_done).
	Dispatch *StepDispatch
	// Inputs are the step's resolved inputs.
	Inputs map[string]any
	// Attempt is 1-based.
	Attempt int
	// Iteration is the 1-based iteration of an iterating step's loop (0
	// outside a loop).
	Iteration int
	// Violations are the previous attempt's violations (nil on attempt 1).
	// Only the previous attempt's, never the accumulated history.
	Violations []string
	// Dir is the spec's directory: the default working directory.
	Dir string
	// Budget is the remaining envelope for this call: the per-call budget
	// intersected with what is left of the per-flow budget.
	Budget BudgetView
	// Task is the task of a parallel_dispatch step this attempt runs (nil
	// otherwise): a command receives {"task": Task} merged with Inputs on
	// stdin and STRATUM_TASK_ID; an agent finds it in its prompt. Step is
	// then a copy whose Intent is the step's intent_template rendered for
	// the task.
	Task map[string]any
	// Worktree is the task's git worktree under isolation: worktree ("" =
	// none); Dir is inside it.
	Worktree string
}

// Intent is the intent the step's executor prompts with (stepIntent):
// the step's intent, with the reasoning certificate's instructions for a
// claude step that declares a reasoning_template.
func (r StepRequest) Intent() string { return stepIntent(r.Step) }

// TaskID is the id of the request's task ("" outside a fan-out).
func (r StepRequest) TaskID() string {
	id, _ := r.Task["id"].(string)
	return id
}

// Feedback is the revise decision this attempt redoes the step for (nil
// when none): executors put it in front of whoever does the work.
func (r StepRequest) Feedback() *ReviseFeedback {
	if r.Dispatch == nil {
		return nil
	}
	return r.Dispatch.ReviseFeedback
}

// BudgetView is the remaining budget envelope of one call. Zero values mean
// "no limit" except USD, where nil means no limit (0 is a valid limit).
type BudgetView struct {
	Deadline time.Time // zero = none
	USD      *float64  // nil = none
	Tokens   int64     // 0 = none
}

// StepOutcome is what a successful attempt produced. Output is the JSON
// result handed to StepDone (which checks schema, ensures and guardrails).
// A failed attempt (bad JSON, non-zero exit, parse failure, refusal…) is
// returned as an *AttemptError instead.
type StepOutcome struct {
	Output any
	// Usage are the tokens spent by this attempt (zero for compute).
	Usage state.Usage
	// CostUSD is nil when the cost is unknown; never 0 for an unknown model.
	CostUSD *float64
	// Trace is the seed 000 §8.1 record of an infer call (nil for compute).
	Trace *state.TraceRecord
	// CacheHit says Output came from the result cache.
	CacheHit bool
}

// AttemptError kinds.
const (
	AttemptExit      = "exit"      // a command exited non-zero
	AttemptBadJSON   = "bad_json"  // output is not valid JSON
	AttemptParse     = "parse"     // an LLM answer could not be parsed
	AttemptRefusal   = "refusal"   // the model refused
	AttemptTruncated = "truncated" // the model hit its output limit
	AttemptTimeout   = "timeout"   // the per-call deadline passed
	AttemptTransport = "transport" // transport retries ran out
	AttemptTooLarge  = "too_large" // output exceeded the executor's cap
	AttemptConfig    = "config"    // misconfiguration (no provider, unknown agent, …)
	AttemptContract  = "contract"  // an answer (LLM, command or agent) does not fit its output contract
	// AttemptTaskGraph: a decompose step's task graph is malformed
	// (engine/internal/fanout.GraphViolations).
	AttemptTaskGraph = "task_graph"
)

// AttemptError is a failed attempt: it spends an attempt exactly like a
// failed ensure (Service.StepAttemptFailed), and Violations are fed back to
// the next attempt.
type AttemptError struct {
	Violations []string
	Kind       string // one of the Attempt* constants
}

// Error joins the violations.
func (e *AttemptError) Error() string {
	if len(e.Violations) == 0 {
		return "attempt failed (" + e.Kind + ")"
	}
	return e.Kind + ": " + strings.Join(e.Violations, "; ")
}

// Executor runs one attempt of one step. It must honour ctx and
// req.Budget.Deadline. A returned *AttemptError spends an attempt; an error
// wrapping ErrBudgetExhausted ends the flow as budget_exhausted; any other
// error fails the run (it is reported, the flow state stays resumable).
type Executor interface {
	Execute(ctx context.Context, req StepRequest) (StepOutcome, error)
}
