package engine

import (
	"github.com/stratum-go/stratum/specs"
)

// skipStep is stratum_skip_step: the current (non-gate) step is skipped with
// a SkipRecord, its output set to null, and the flow advances.
func skipStep(st *FlowState, env Env, stepID, reason string) (transitionResult, error) {
	ensureMaps(st)
	if r, done := refuseFinished(st, env); done {
		return r, nil
	}
	step := currentStep(st, env)
	if stepID != step.ID {
		return refused(execErrorf("Expected step '%s', got '%s'", step.ID, stepID)), nil
	}
	if step.IsGate() {
		return refused(execErrorf("Step '%s' is a gate step — use stratum_gate_resolve to resolve it", step.ID)), nil
	}
	if r, bad := refuseBypassingChild(st, env, step, "skip_step"); bad {
		return r, nil
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
