package engine

import (
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// skipStep is stratum_skip_step: the current (non-gate) step is skipped with
// a SkipRecord, its output set to null, and the flow advances.
func skipStep(st *state.FlowState, env transitionEnv, stepID, reason string) (transitionResult, error) {
	ensureMaps(st)
	step, e := reportable(st, env, stepID, skipReport)
	if e != nil {
		return refused(e), nil
	}
	var res transitionResult
	if step.Kind == specs.KindFlow {
		snapshotChildAudit(st, env, step.ID, &res)
	}
	clearStepIteration(st, step.ID)
	skipCurrent(st, env, step, reason, &res)
	nr, err := currentDispatch(st, env)
	if err != nil {
		return transitionResult{}, err
	}
	return mergeResults(res, nr), nil
}
