package engine

import (
	"context"

	"github.com/stratum-go/stratum/engine/state"
)

// StepReport is a step's result, reported to StepDone (stratum_step_done).
// The optional fields are parts of the same report that are committed with
// it, in one store transaction: the call that produced the result (its
// spend and trace) and the result-cache entry it fills.
type StepReport struct {
	// FlowID and StepID name the flow and the step reported on.
	FlowID, StepID string
	// Result is the step's result, checked (output schema, guardrails,
	// ensure) before it is accepted.
	Result any
	// Call, when set, is the call of the attempt that produced Result,
	// recorded (RecordCall) before the result is checked: its spend and
	// its report are committed together, so no spend is lost or counted
	// twice across a crash.
	Call *CallRecord
	// Cache, when set, is written into the result cache when the result
	// is accepted (the step recorded done), so a cached step costs one
	// durable commit, not two.
	Cache *CacheEntry
	// FromCache, when set, says Result was served from the result cache
	// under this key (`stratum run`'s session or global cache): the step's
	// record carries cache_hit and cache_key, like a step the engine
	// answered from the cache for an agent.
	FromCache string
	// Usage, when set, is what an agent reports it spent on the attempt:
	// charged to the flow's budget ledger once the report is taken (also
	// when the result fails its checks), and the flow ends
	// budget_exhausted when that spends its budget.
	Usage *Usage
	// ReportOptions carries the caller's lease and channel.
	ReportOptions
}

// CacheEntry is a result-cache entry: the value a step's accepted result
// is cached as, under its key.
type CacheEntry struct {
	Key   string
	Value []byte
}

// AttemptFailure is a step attempt that produced no acceptable result (a
// command that exited non-zero, an answer that could not be parsed, a
// refusal…), reported to StepAttemptFailed.
type AttemptFailure struct {
	// FlowID and StepID name the flow and the step reported on.
	FlowID, StepID string
	// Violations say why the attempt failed; they are fed back to the
	// retry ("attempt failed" when empty).
	Violations []string
	// Call, when set, is the failed attempt's call, recorded in the same
	// transaction (as StepReport.Call).
	Call *CallRecord
	// ReportOptions carries the caller's lease and channel.
	ReportOptions
}

// ParallelReport is the results of a parallel_dispatch step's tasks,
// reported to ParallelDone (stratum_parallel_done).
type ParallelReport struct {
	// FlowID and StepID name the flow and the parallel step.
	FlowID, StepID string
	// TaskResults are the tasks' results, one object per task.
	TaskResults []any
	// MergeStatus is "clean" / "conflict" or {status, bounced_tasks}.
	MergeStatus any
	// Details, when set, follow a merge or require violation (which task
	// conflicted in which file, why each task failed), so the retry is
	// told more than the original's one-line verdict.
	Details []string
	// Executed: stratum ran the tasks itself (stratum run,
	// stratum_parallel_start), so the skipped lanes of a fanned-out
	// pipeline are its own decisions; an agent's report of such a pipeline
	// is refused, as in the original.
	Executed bool
	// ReportOptions carries the caller's lease and channel.
	ReportOptions
}

// StepDone is stratum_step_done: it checks r.Result (output schema →
// guardrails → ensure), retries with the violations, routes on_fail on
// exhaustion, or stores the output and answers the next dispatch. r.Call
// and r.Cache are committed in the same transaction.
func (s *Service) StepDone(ctx context.Context, r StepReport) (Outcome, error) {
	return s.transition(ctx, r.FlowID, &r.ReportOptions, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		res, err := withCall(st, env, r.Call, func() (transitionResult, error) { return stepDone(st, env, r.StepID, r.Result) })
		if err == nil && stepAccepted(res, r.StepID) {
			if r.Cache != nil {
				res.Cache = append(res.Cache, *r.Cache)
			}
			if r.FromCache != "" {
				markCacheHit(st, r.StepID, r.FromCache)
			}
		}
		if err != nil {
			return res, err
		}
		return chargeUsage(st, env, r.StepID, r.Usage, res)
	})
}

// StepAttemptFailed counts a failed attempt of f.StepID like a failed
// ensure in StepDone and answers the same responses (the dispatch again
// with the violations while attempts remain; on exhaustion on_fail routing
// or retries_exhausted). Lease-checked like StepDone; f.Call is committed
// in the same transaction.
func (s *Service) StepAttemptFailed(ctx context.Context, f AttemptFailure) (Outcome, error) {
	return s.transition(ctx, f.FlowID, &f.ReportOptions, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return withCall(st, env, f.Call, func() (transitionResult, error) {
			return stepAttemptFailed(st, env, f.StepID, f.Violations)
		})
	})
}

// ParallelDone is stratum_parallel_done: it builds the aggregate of the
// tasks' results and checks it like a step's result (a merge conflict or
// an unsatisfied require fails the attempt, followed by r.Details).
func (s *Service) ParallelDone(ctx context.Context, r ParallelReport) (Outcome, error) {
	return s.transition(ctx, r.FlowID, &r.ReportOptions, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDoneDetailed(st, env, r)
	})
}

// withCall runs RecordCall (when c is set) and then fn in the same
// transition, so a call's spend and the report of its result are committed
// together (one store write per attempt, and no spend lost or counted twice
// across a crash). The answer is fn's.
func withCall(st *state.FlowState, env transitionEnv, c *CallRecord, fn func() (transitionResult, error)) (transitionResult, error) {
	var pre transitionResult
	if c != nil {
		r, err := recordCall(st, env, *c)
		if err != nil {
			return transitionResult{}, err
		}
		pre = r
	}
	res, err := fn()
	if err != nil {
		return transitionResult{}, err
	}
	out := mergeResults(pre, res)
	out.Unchanged = c == nil && res.Unchanged
	return out, nil
}

// stepAccepted reports whether res records stepID done.
func stepAccepted(res transitionResult, stepID string) bool {
	for _, e := range res.Events {
		if e.Type == EventStepDone && e.StepID == stepID {
			return true
		}
	}
	return false
}
