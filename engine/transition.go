package engine

import (
	"context"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// transitionEnv is everything a transition needs besides the flow state. It carries no
// I/O: the clock reading, the id generator and the expression file root are
// given, so transitions are deterministic in tests.
type transitionEnv struct {
	// Ctx is the request's context (nil = never done): every expression
	// evaluation stops soon after it is done. The Service then discards the
	// transition (nothing is written), so a verdict reached on a cancelled
	// evaluation never counts.
	Ctx   context.Context
	Spec  *specs.Spec
	Flow  *specs.Flow // the flow of the state being transitioned
	Now   time.Time
	NewID func() string // flow ids for child flows
	// Root confines the file_exists / file_contains builtins.
	Root string
	// Children gives read access to child flows (flow: steps): the
	// Service's snapshot (reads the commit re-checks); nil when the caller
	// has none (pure tests).
	Children childLoader
	// Cmd is how the commands a refusal advises start (the Service's
	// Invocation; "stratum" when empty).
	Cmd string
	// Cache reads the result cache an agent-driven flow's cacheable steps
	// are answered from (resultcache.go); nil: none (pure tests, or the
	// Service's NoResultCache).
	Cache cacheReader
}

// cmd is how a command a refusal advises starts: env.Cmd, else "stratum".
func (env transitionEnv) cmd() string {
	if env.Cmd == "" {
		return "stratum"
	}
	return env.Cmd
}

// childLoader reads a child flow state: a private copy the transition may
// mutate.
type childLoader interface {
	Get(flowID string) (*state.FlowState, error)
}

// context is env.Ctx, or context.Background when it is nil.
func (env transitionEnv) context() context.Context {
	if env.Ctx == nil {
		return context.Background()
	}
	return env.Ctx
}

// transitionResult is what a transition produced besides mutating the state.
type transitionResult struct {
	// Outcome is the answer; Err, when set, replaces it: a refusal (with
	// Unchanged) or an error the original answers after committing
	// (Error.Committed).
	Outcome Outcome
	Err     *Error
	Events  []Event
	// Put are other flow states to create or replace in the same transaction
	// (child flows created by a flow: step).
	Put []*state.FlowState
	// Delete are other flow ids to delete in the same transaction.
	Delete []string
	// Cache are result-cache entries to write in the same transaction
	// (StepReport.Cache).
	Cache []CacheEntry
	// Unchanged says the transition did not modify the state (an error
	// response such as wrong_step, or a read); the service then skips the write.
	Unchanged bool
}

// Wire renders the result's answer (see Wire).
func (r transitionResult) Wire() Response {
	if r.Err != nil {
		return r.Err.wire()
	}
	return Wire(r.Outcome, nil)
}

// refused is a Result that answers e and changes nothing.
func refused(e *Error) transitionResult { return transitionResult{Err: e, Unchanged: true} }

// answer is a Result that answers o and changes nothing.
func answer(o Outcome) transitionResult { return transitionResult{Outcome: o, Unchanged: true} }
