package engine

import (
	"fmt"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// Iteration outcomes (the original's strings).
const (
	outcomeContinue       = "continue"
	outcomeExitSuccess    = "exit_success"
	outcomeExitStagnation = "exit_stagnation"
	outcomeExitMax        = "exit_max"
	outcomeExitAbort      = "exit_abort"
)

// stagnationWindow is the number of consecutive reports that make a loop
// stagnant: identical fingerprints, or (scored loops) reports without a new best.
const stagnationWindow = 3

// iterationStart starts an iteration loop on the current step
// (stratum_iteration_start, upstream-behavior §2.12). The step must be the
// current one, not a gate, and declare max_iterations; only one loop may be
// active in a flow, and a step whose previous loop's outcome has not been
// consumed by stratum_step_done cannot start another. Errors are
// execution_error envelopes with the original's messages and leave st
// unchanged.
func iterationStart(st *state.FlowState, env transitionEnv, stepID string) (transitionResult, error) {
	step, e := reportable(st, env, stepID, iterationStartReport)
	if e != nil {
		return refused(e), nil
	}
	if step.MaxIterations <= 0 {
		return iterationError(fmt.Sprintf("Step '%s' does not have max_iterations defined", stepID)), nil
	}
	if st.ActiveIteration != nil {
		return iterationError(fmt.Sprintf("Iteration loop already active on step '%s'", st.ActiveIteration.StepID)), nil
	}
	if o, ok := st.IterationOutcome[stepID]; ok {
		return iterationError(fmt.Sprintf(
			"Step '%s' already has a pending iteration outcome ('%s') — call stratum_step_done first", stepID, o)), nil
	}

	exitCriterion := ""
	if step.ExitCriterion != nil {
		exitCriterion = step.ExitCriterion.Source
	}
	st.ActiveIteration = &state.ActiveIteration{
		StepID:        stepID,
		Count:         0,
		MaxIterations: step.MaxIterations,
		ExitCriterion: exitCriterion,
		StartedAt:     env.Now,
		HistoryStart:  len(st.Iterations[stepID]),
	}
	// A new loop starts with no best result and an empty accumulator. Only
	// accumulating steps get an accumulator (no `accumulated` leak, README, "Deliberate differences").
	if st.IterationBest != nil {
		delete(st.IterationBest, stepID)
	}
	if st.IterationAccumulator != nil {
		delete(st.IterationAccumulator, stepID)
	}
	if step.Accumulate != nil {
		if st.IterationAccumulator == nil {
			st.IterationAccumulator = map[string]*state.Accumulator{}
		}
		st.IterationAccumulator[stepID] = &state.Accumulator{Items: []any{}, Keys: []string{}}
	}

	// exit_criterion is null when the step has none, as the original.
	out := &iterationStarted{FlowID: st.FlowID, StepID: stepID, MaxIterations: step.MaxIterations, ExitCriterion: exitCriterion}
	return transitionResult{
		Outcome: out,
		Events: []Event{iterationEvent(st, env, stepID, IterationReport{
			Action:        "start",
			MaxIterations: step.MaxIterations,
		})},
	}, nil
}

// iterationReport records one iteration result of the active loop
// (stratum_iteration_report, upstream-behavior §2.12). Per report: the count
// is incremented; score_expr is evaluated (numbers only, booleans are not
// scores) and the best result tracked (strictly greater wins, ties keep the
// earlier); accumulate/accumulate_key extract and deduplicate items; then
// exit_criterion is evaluated with `result` and the iteration locals. The
// outcome is, in order of precedence, exit_success (criterion met),
// exit_stagnation, exit_max (count reached max_iterations) or continue.
//
// Stagnation is fingerprint-based (this result's canonical JSON equals the
// previous two reports' in the step's history of the current round) for
// loops without score_expr and accumulate, and score-based (no new best for
// the last 3 reports) for scored loops without exit_criterion. On exit the
// outcome is kept until stratum_step_done consumes it and the loop ends.
//
// The step need not be current any more (as in the original).
func iterationReport(st *state.FlowState, env transitionEnv, stepID string, result any) (transitionResult, error) {
	if e := flowNotRunning(st); e != nil {
		return refused(e), nil
	}
	ai := st.ActiveIteration
	if ai == nil {
		return iterationError("No active iteration loop"), nil
	}
	if ai.StepID != stepID {
		return iterationError(fmt.Sprintf("Active iteration is on step '%s', got report for '%s'", ai.StepID, stepID)), nil
	}
	var step *specs.Step
	if env.Flow != nil {
		step = env.Flow.Step(stepID)
	}
	if step == nil {
		return iterationError(fmt.Sprintf("Step '%s' not found in flow", stepID)), nil
	}

	ai.Count++
	count := ai.Count
	history := st.Iterations[stepID]
	entry := state.IterationEntry{
		Iteration:         count,
		Round:             st.Round,
		Result:            result,
		Timestamp:         env.Now,
		ResultFingerprint: iterFingerprint(result),
	}
	best := iterScore(st, env, step, &entry)
	acc := iterAccumulateReport(st, env, step, &entry)
	entry.ExitCriterionMet = iterExitMet(env, step, history, best, acc, &entry)
	entry.Outcome = iterOutcome(step, history, best, ai.MaxIterations, entry)

	if st.Iterations == nil {
		st.Iterations = map[string][]state.IterationEntry{}
	}
	st.Iterations[stepID] = append(history, entry)
	if entry.Outcome != outcomeContinue {
		if st.IterationOutcome == nil {
			st.IterationOutcome = map[string]string{}
		}
		st.IterationOutcome[stepID] = entry.Outcome
		st.ActiveIteration = nil
	}
	out := iterReported(st, step, ai.MaxIterations, entry, best, acc)
	return transitionResult{Outcome: out, Events: []Event{iterReportEvent(st, env, stepID, entry)}}, nil
}

// iterScore evaluates the step's score_expr on the entry's result (numbers
// only, booleans are not scores) and tracks the best result (strictly
// greater wins, ties keep the earlier). It returns the loop's best so far
// (nil: none).
func iterScore(st *state.FlowState, env transitionEnv, step *specs.Step, entry *state.IterationEntry) *state.IterationBest {
	var best *state.IterationBest
	if st.IterationBest != nil {
		best = st.IterationBest[step.ID]
	}
	if step.ScoreExpr == nil {
		return best
	}
	v, err := evalValue(env.context(), step.ScoreExpr, specs.EvalEnv{Result: entry.Result, Root: env.Root})
	if err != nil {
		entry.ScoreError = err.Error()
		return best
	}
	s, ok := iterationScore(v)
	if !ok {
		entry.ScoreError = fmt.Sprintf("score_expr must return a number, got %s", iterationValueKind(v))
		return best
	}
	entry.Score = &s
	if best == nil || best.Score == nil || s > *best.Score {
		sc := s
		best = &state.IterationBest{Result: entry.Result, Score: &sc, Iteration: entry.Iteration}
		if st.IterationBest == nil {
			st.IterationBest = map[string]*state.IterationBest{}
		}
		st.IterationBest[step.ID] = best
	}
	return best
}

// iterAccumulateReport extracts and deduplicates the entry's items into the
// step's accumulator (accumulate / accumulate_key) and counts the dry
// streak; it returns the accumulator (nil: the step does not accumulate).
func iterAccumulateReport(st *state.FlowState, env transitionEnv, step *specs.Step, entry *state.IterationEntry) *state.Accumulator {
	if step.Accumulate == nil {
		return nil
	}
	if st.IterationAccumulator == nil {
		st.IterationAccumulator = map[string]*state.Accumulator{}
	}
	acc := st.IterationAccumulator[step.ID]
	if acc == nil {
		acc = &state.Accumulator{Items: []any{}, Keys: []string{}}
		st.IterationAccumulator[step.ID] = acc
	}
	newCount, err := iterAccumulate(env.context(), step, acc, entry.Result, env.Root)
	if err != nil {
		// A broken extractor freezes dry_streak: it cannot fake dryness.
		entry.AccumulateError = err.Error()
	} else if newCount == 0 {
		acc.DryStreak++
	} else {
		acc.DryStreak = 0
	}
	nc, ds := newCount, acc.DryStreak
	entry.NewCount, entry.DryStreak = &nc, &ds
	return acc
}

// iterExitMet evaluates the step's exit_criterion with `result` and the
// iteration locals; an evaluation error is recorded in the entry and is
// not an exit.
func iterExitMet(env transitionEnv, step *specs.Step, history []state.IterationEntry, best *state.IterationBest, acc *state.Accumulator, entry *state.IterationEntry) bool {
	if step.ExitCriterion == nil {
		return false
	}
	vars := map[string]any{
		"iteration":  entry.Iteration,
		"best_score": nil,
		// The scores of the step's history in this round (earlier loops
		// too, until a clear), as the original.
		"prior_scores": iterPriorScores(history),
	}
	if best != nil && best.Score != nil {
		vars["best_score"] = *best.Score
	}
	if acc != nil {
		vars["accumulator"] = iterCopyItems(acc.Items)
		vars["accumulated_count"] = len(acc.Items)
		vars["new_count"] = *entry.NewCount
		vars["dry_streak"] = acc.DryStreak
	} else {
		vars["accumulator"] = nil
		vars["accumulated_count"] = nil
		vars["new_count"] = nil
		vars["dry_streak"] = nil
	}
	met, err := evalBool(env.context(), step.ExitCriterion, specs.EvalEnv{Result: entry.Result, Vars: vars, Root: env.Root})
	if err != nil {
		entry.ExitCriterionError = err.Error()
		return false
	}
	return met
}

// iterOutcome is the report's outcome, in order of precedence:
// exit_success (criterion met), exit_stagnation, exit_max (the count
// reached max_iterations) or continue.
func iterOutcome(step *specs.Step, history []state.IterationEntry, best *state.IterationBest, maxIter int, entry state.IterationEntry) string {
	stagnant := false
	switch {
	case step.ScoreExpr == nil && step.Accumulate == nil:
		stagnant = iterFingerprintStagnant(history, entry.ResultFingerprint)
	case step.ScoreExpr != nil && step.ExitCriterion == nil:
		// No new best for the last stagnationWindow reports; a loop that has
		// scored nothing yet is not stagnant (as the original).
		stagnant = best != nil && best.Score != nil && entry.Iteration-best.Iteration >= stagnationWindow
	}
	switch {
	case entry.ExitCriterionMet:
		return outcomeExitSuccess
	case stagnant:
		return outcomeExitStagnation
	case entry.Iteration >= maxIter:
		return outcomeExitMax
	}
	return outcomeContinue
}

// iterReported is the answer to a report: the entry, and on exit the final
// result (the best one of a scored loop) and the accumulated items.
func iterReported(st *state.FlowState, step *specs.Step, maxIter int, entry state.IterationEntry, best *state.IterationBest, acc *state.Accumulator) *IterationReported {
	out := &IterationReported{
		FlowID:             st.FlowID,
		StepID:             step.ID,
		Iteration:          entry.Iteration,
		MaxIterations:      maxIter,
		ExitCriterionMet:   entry.ExitCriterionMet,
		Outcome:            entry.Outcome,
		ExitCriterionError: entry.ExitCriterionError,
		Scored:             step.ScoreExpr != nil,
		Score:              entry.Score,
		ScoreError:         entry.ScoreError,
	}
	if acc != nil {
		out.Accumulating = true
		out.NewCount = *entry.NewCount
		out.DryStreak = acc.DryStreak
		out.AccumulatedCount = len(acc.Items)
		out.AccumulateError = entry.AccumulateError
	}
	if entry.Outcome == outcomeContinue {
		return out
	}
	out.FinalResult = entry.Result
	if best != nil && best.Score != nil {
		out.FinalResult = best.Result
		sc, it := *best.Score, best.Iteration
		out.BestScore, out.BestIteration = &sc, &it
	}
	if acc != nil {
		out.Accumulated = iterCopyItems(acc.Items)
	}
	return out
}

// iterReportEvent is the iteration_report event of a report.
func iterReportEvent(st *state.FlowState, env transitionEnv, stepID string, entry state.IterationEntry) Event {
	data := IterationReport{
		Action:           "report",
		Iteration:        entry.Iteration,
		Outcome:          entry.Outcome,
		ExitCriterionMet: entry.ExitCriterionMet,
	}
	if entry.Score != nil {
		sc := *entry.Score
		data.Score = &sc
	}
	if entry.NewCount != nil {
		n, dry := *entry.NewCount, *entry.DryStreak
		data.NewCount, data.DryStreak = &n, &dry
	}
	return iterationEvent(st, env, stepID, data)
}

// iterationAbort ends the active loop early (stratum_iteration_abort): it
// appends an exit_abort entry (iteration = the count so far, result
// {aborted: true, reason}) and records exit_abort as the step's pending
// outcome. A scored step's response also carries best_result and best_score
// (null when nothing was scored).
func iterationAbort(st *state.FlowState, env transitionEnv, stepID, reason string) (transitionResult, error) {
	ai := st.ActiveIteration
	if ai == nil {
		return iterationError("No active iteration loop"), nil
	}
	if ai.StepID != stepID {
		return iterationError(fmt.Sprintf("Active iteration is on step '%s', got abort for '%s'", ai.StepID, stepID)), nil
	}
	count := ai.Count
	entry := state.IterationEntry{
		Iteration: count,
		Round:     st.Round,
		Result:    map[string]any{"aborted": true, "reason": reason},
		Outcome:   outcomeExitAbort,
		Timestamp: env.Now,
	}
	if st.Iterations == nil {
		st.Iterations = map[string][]state.IterationEntry{}
	}
	st.Iterations[stepID] = append(st.Iterations[stepID], entry)
	if st.IterationOutcome == nil {
		st.IterationOutcome = map[string]string{}
	}
	st.IterationOutcome[stepID] = outcomeExitAbort
	st.ActiveIteration = nil

	out := &iterationAborted{FlowID: st.FlowID, StepID: stepID, Iteration: count, Reason: reason}
	if env.Flow != nil {
		if step := env.Flow.Step(stepID); step != nil && step.ScoreExpr != nil {
			out.Scored = true
			if best := st.IterationBest[stepID]; best != nil && best.Score != nil {
				sc := *best.Score
				out.BestResult, out.BestScore = best.Result, &sc
			}
		}
	}
	return transitionResult{Outcome: out, Events: []Event{iterationEvent(st, env, stepID, IterationReport{
		Action:    "abort",
		Iteration: count,
		Reason:    reason,
	})}}, nil
}

// iterationBestResult returns the best result of a scored iteration loop on
// the step, which stratum_step_done substitutes for the submitted result
// (upstream-behavior §2.6). ok is false when nothing was scored.
func iterationBestResult(st *state.FlowState, stepID string) (any, bool) {
	if st.IterationBest == nil {
		return nil, false
	}
	b := st.IterationBest[stepID]
	if b == nil || b.Score == nil {
		return nil, false
	}
	return b.Result, true
}

// mergeAccumulated returns the result with the step's deduplicated
// accumulator merged in as `accumulated` (the items) and `accumulated_count`.
// Only steps that declare accumulate get the keys, and only dict results that
// had an accumulator (a loop ran); every other result is returned unchanged
// (the original leaked `accumulated: []` into every iterated step; README,
// "Deliberate differences"). The input map is not modified.
func mergeAccumulated(st *state.FlowState, step *specs.Step, result any) any {
	if step == nil || step.Accumulate == nil || st.IterationAccumulator == nil {
		return result
	}
	acc := st.IterationAccumulator[step.ID]
	if acc == nil {
		return result
	}
	m, ok := result.(map[string]any)
	if !ok {
		return result
	}
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	out["accumulated"] = iterCopyItems(acc.Items)
	out["accumulated_count"] = len(acc.Items)
	return out
}

// clearStepIteration forgets the step's iteration outcome, best result and
// accumulator, and ends an active loop on that step, so a new loop may start
// (a failed step_done attempt, upstream-behavior §2.6 step 8).
func clearStepIteration(st *state.FlowState, stepID string) {
	delete(st.IterationOutcome, stepID)
	delete(st.IterationBest, stepID)
	delete(st.IterationAccumulator, stepID)
	if st.ActiveIteration != nil && st.ActiveIteration.StepID == stepID {
		st.ActiveIteration = nil
	}
}

// consumeIterationOutcome consumes the step's pending iteration outcome on a
// successful step_done, and drops its best result and accumulator (already
// merged into the output), as the original. A loop still active on the step
// ends too (the step is done, and a dangling loop would block every later
// loop in the flow). The history stays for the audit.
func consumeIterationOutcome(st *state.FlowState, stepID string) {
	delete(st.IterationOutcome, stepID)
	delete(st.IterationBest, stepID)
	delete(st.IterationAccumulator, stepID)
	if st.ActiveIteration != nil && st.ActiveIteration.StepID == stepID {
		st.ActiveIteration = nil
	}
}

// flowNotRunning refuses iteration calls on a flow that failed (retries
// exhausted) or ran out of budget: the original deleted such flows, we keep
// them for the audit but accept no more reports.
func flowNotRunning(st *state.FlowState) *Error {
	switch st.Status {
	case state.StatusFailed, state.StatusBudgetExhausted:
		return refusal(ErrTypeFlowNotRunning, "Flow '%s' is %s and accepts no more reports", st.FlowID, st.Status)
	}
	return nil
}

// iterationError is an execution_error response that leaves the state as it was.
func iterationError(msg string) transitionResult {
	return refused(execErrorf("%s", msg))
}

func iterationEvent(st *state.FlowState, env transitionEnv, stepID string, data IterationReport) Event {
	return event(st, env, stepID, data)
}
