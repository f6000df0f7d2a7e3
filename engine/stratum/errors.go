package stratum

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// NOTE(core): every error type of §10 lives here, ReviewTimeoutError and
// ReviewRejectedError included, so that all of them share one Is method;
// the review half returns them.

// ErrStratum matches every error of the library: errors.Is(err,
// ErrStratum) is true for each error type below.
var ErrStratum = errors.New("stratum")

// ErrParallelValidation is returned when a parallel result fails the
// caller's validation; it matches ErrStratum.
var ErrParallelValidation error = &parallelValidation{}

// parallelValidation is the type of ErrParallelValidation.
type parallelValidation struct{}

// Error implements error.
func (*parallelValidation) Error() string { return "stratum: parallel validation failed" }

// Is makes ErrParallelValidation match ErrStratum.
func (*parallelValidation) Is(target error) bool { return target == ErrStratum }

// CompileError is a definition the library refuses: a type cycle, a
// type JSON cannot carry, a malformed stratum tag, Quorum without AgreeOn
// or Threshold, an AgreeOn that is not a field of Out, an opaque input
// interpolated into the intent or context.
type CompileError struct {
	// Function is the name given to NewInfer ("" for SchemaFor).
	Function string
	// Message says what is wrong.
	Message string
}

// Error describes the CompileError.
func (e *CompileError) Error() string { return prefix(e.Function) + e.Message }

// Is makes the error match ErrStratum.
func (e *CompileError) Is(target error) bool { return target == ErrStratum }

// PreconditionError is a failed Given: no request was made.
type PreconditionError struct {
	Function string
	// Violations are the descriptions of the failed preconditions.
	Violations []string
}

// Error describes the PreconditionError.
func (e *PreconditionError) Error() string {
	return prefix(e.Function) + "precondition failed: " + strings.Join(e.Violations, "; ")
}

// Is makes the error match ErrStratum.
func (e *PreconditionError) Is(target error) bool { return target == ErrStratum }

// PostconditionError ends a call whose attempts all failed, the last one
// on its postconditions.
type PostconditionError struct {
	Function string
	// Attempts holds each attempt's violations, in order (the last entry
	// is the last attempt's failed ensures).
	Attempts [][]string
}

// Error describes the PostconditionError.
func (e *PostconditionError) Error() string {
	return fmt.Sprintf("%spostcondition failed after %d attempts: %s", prefix(e.Function), len(e.Attempts), lastJoined(e.Attempts))
}

// Is makes the error match ErrStratum.
func (e *PostconditionError) Is(target error) bool { return target == ErrStratum }

// ParseError ends a call whose last attempt's answer did not parse, fit
// the schema, or decode into Out.
type ParseError struct {
	Function string
	// Attempts holds each attempt's violations, in order.
	Attempts [][]string
}

// Error describes the ParseError.
func (e *ParseError) Error() string {
	return fmt.Sprintf("%sno parseable answer after %d attempts: %s", prefix(e.Function), len(e.Attempts), lastJoined(e.Attempts))
}

// Is makes the error match ErrStratum.
func (e *ParseError) Is(target error) bool { return target == ErrStratum }

// BudgetError is an exhausted envelope: the deadline passed (before or
// during a request) or the USD or token budget was spent before a
// request. It is never retried.
type BudgetError struct {
	Function string
	// Reason is the axis that ran out: "time", "usd" or "tokens".
	Reason string
	// Envelope names the budget that ran out: "the call" (the Spec's
	// Budget) or "flow NAME" (an enclosing Flow's).
	Envelope string
	// Limit is that budget's limit and Spent what was spent of it, on the
	// Reason's axis only (Time, USD or Tokens; the other fields are zero).
	// Time spent waiting for a person is not counted.
	Limit, Spent Budget
	// Message details it: the axis, what was spent of the limit, and the
	// envelope.
	Message string
}

// Error describes the BudgetError.
func (e *BudgetError) Error() string { return prefix(e.Function) + "budget exhausted: " + e.Message }

// describe is the Message made from the fields.
func (e *BudgetError) describe() string {
	var s string
	switch e.Reason {
	case "time":
		s = fmt.Sprintf("time: %s spent of %s", e.Spent.Time.Round(time.Millisecond), e.Limit.Time)
	case "usd":
		s = fmt.Sprintf("usd: $%.6f spent of $%.6f", e.Spent.USD, e.Limit.USD)
	case "tokens":
		s = fmt.Sprintf("tokens: %d spent of %d", e.Spent.Tokens, e.Limit.Tokens)
	default:
		s = e.Reason
	}
	if e.Envelope != "" {
		s += " (" + e.Envelope + ")"
	}
	return s
}

// Is makes the error match ErrStratum.
func (e *BudgetError) Is(target error) bool { return target == ErrStratum }

// ProviderError is a failure of the model's provider, not of its answer:
// it could not be reached (connection refused, DNS, TLS), it refused the
// request (an HTTP 4xx: a bad key, an unknown model), its answer was larger
// than the library reads (refused once, the paid request never re-sent),
// or its transport retries (429, 5xx, timeouts) ran out. The transport
// retried what could be retried, briefly for an unreachable provider; the
// Call makes no further attempt.
type ProviderError struct {
	Function string
	// Provider is the provider's name ("openai"), Model the
	// "provider/model" called.
	Provider, Model string
	// Status is the HTTP status of the provider's last answer (0 when none
	// came: unreachable, a connection reset, a timeout).
	Status int
	// Retryable says whether the same request may succeed later (a
	// provider down or overloaded), as opposed to one that will fail again
	// (a name that does not resolve, a certificate, a 4xx, an answer too
	// large).
	Retryable bool
	// Err is the provider's error.
	Err error
}

// Error describes the ProviderError.
func (e *ProviderError) Error() string {
	if e.Err == nil {
		return prefix(e.Function) + "provider " + e.Provider + " failed"
	}
	return prefix(e.Function) + e.Err.Error()
}

// Unwrap returns the provider's error.
func (e *ProviderError) Unwrap() error { return e.Err }

// Is makes the error match ErrStratum.
func (e *ProviderError) Is(target error) bool { return target == ErrStratum }

// ConvergenceError ends a Refine loop that ran out of iterations.
type ConvergenceError struct {
	Function string
	// Iterations is the number of iterations run.
	Iterations int
	// Feedback holds each iteration's feedback, in order.
	Feedback []string
	// Outputs holds each iteration's output, in order.
	Outputs []any
}

// Error describes the ConvergenceError.
func (e *ConvergenceError) Error() string {
	last := ""
	if n := len(e.Feedback); n > 0 {
		last = ": " + e.Feedback[n-1]
	}
	return fmt.Sprintf("%sno convergence after %d iterations%s", prefix(e.Function), e.Iterations, last)
}

// Is makes the error match ErrStratum.
func (e *ConvergenceError) Is(target error) bool { return target == ErrStratum }

// ConsensusError is a quorum without enough agreement.
type ConsensusError struct {
	Function string
	// Outputs are the answers of the calls that succeeded, in the order
	// they were started.
	Outputs []any
	// Errors are the calls that failed.
	Errors []error
	// Agreeing is the size of the largest agreeing group; Threshold the
	// size required.
	Agreeing, Threshold int
}

// Error describes the ConsensusError.
func (e *ConsensusError) Error() string {
	return fmt.Sprintf("%sno consensus: %d of %d answers agree, %d required (%d calls failed)",
		prefix(e.Function), e.Agreeing, len(e.Outputs), e.Threshold, len(e.Errors))
}

// Is makes the error match ErrStratum.
func (e *ConsensusError) Is(target error) bool { return target == ErrStratum }

// StabilityError is a Probabilistic whose samples agree less than the
// threshold asks.
type StabilityError struct {
	Function string
	// Agreement is the fraction of samples equal to the modal one.
	Agreement float64
	// Threshold is the fraction required.
	Threshold float64
	// Samples are the samples drawn.
	Samples []any
}

// Error describes the StabilityError.
func (e *StabilityError) Error() string {
	return fmt.Sprintf("%sunstable: %.2f of %d samples agree, %.2f required", prefix(e.Function), e.Agreement, len(e.Samples), e.Threshold)
}

// Is makes the error match ErrStratum.
func (e *StabilityError) Is(target error) bool { return target == ErrStratum }

// ReviewTimeoutError is a review that reached its Timeout without a
// decision and without OnTimeout.
type ReviewTimeoutError struct {
	// ReviewID identifies the review.
	ReviewID string
	// Question is the review's question.
	Question string
}

// Error describes the ReviewTimeoutError.
func (e *ReviewTimeoutError) Error() string {
	return fmt.Sprintf("stratum: review %s timed out: %s", e.ReviewID, e.Question)
}

// Is makes the error match ErrStratum.
func (e *ReviewTimeoutError) Is(target error) bool { return target == ErrStratum }

// ReviewRejectedError is a review a reviewer rejected.
type ReviewRejectedError struct {
	ReviewID  string
	Reviewer  string
	Rationale string
}

// Error describes the ReviewRejectedError.
func (e *ReviewRejectedError) Error() string {
	return fmt.Sprintf("stratum: review %s rejected by %s: %s", e.ReviewID, e.Reviewer, e.Rationale)
}

// Is makes the error match ErrStratum.
func (e *ReviewRejectedError) Is(target error) bool { return target == ErrStratum }

// BranchError is the error of a parallel branch, naming it by its index
// (counted from 0) in the call's branch list. It matches ErrStratum
// whatever the branch returned, and unwraps to the branch's error.
type BranchError struct {
	Index int
	Err   error
}

// Error describes the BranchError.
func (e *BranchError) Error() string { return fmt.Sprintf("branch %d: %v", e.Index, e.Err) }

// Unwrap returns the branch's error.
func (e *BranchError) Unwrap() error { return e.Err }

// Is makes the error match ErrStratum.
func (e *BranchError) Is(target error) bool { return target == ErrStratum }

func prefix(fn string) string {
	if fn == "" {
		return "stratum: "
	}
	return "stratum: " + fn + ": "
}

func lastJoined(attempts [][]string) string {
	if len(attempts) == 0 {
		return ""
	}
	return strings.Join(attempts[len(attempts)-1], "; ")
}

// ToolLoopError ends a Call whose model still called tools after
// MaxToolRounds rounds of one attempt (it is not retried).
type ToolLoopError struct {
	Function string
	// Rounds is the number of tool rounds run.
	Rounds int
	// Calls are every tool call the model asked for in that attempt, in
	// order.
	Calls []ToolCall
}

// Error describes the ToolLoopError.
func (e *ToolLoopError) Error() string {
	return fmt.Sprintf("%sthe model still called tools after %d rounds (%d calls; raise Spec.MaxToolRounds or say when to answer)", prefix(e.Function), e.Rounds, len(e.Calls))
}

// Is makes the error match ErrStratum.
func (e *ToolLoopError) Is(target error) bool { return target == ErrStratum }
