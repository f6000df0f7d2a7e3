package engine

import (
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// reportRules are the refusals of one kind of report into a flow's current
// step. Every report asks the same question in the same shape (reportable);
// what differs is the original's wording for each tool — its error types,
// messages and the order of two checks — which the conformance tests pin.
type reportRules struct {
	// finished refuses a report into a flow with no step to report into
	// (finished, failed, past its end); nil when there is one.
	finished func(st *state.FlowState, env transitionEnv) *Error
	// wrongStep refuses a report naming another step than the current one.
	wrongStep func(current, got string) *Error
	// wrongKind refuses a report into a step of a kind the call cannot
	// report (a gate for step_done; anything but parallel_dispatch for
	// parallel_done); nil when the kind is fine.
	wrongKind func(step *specs.Step) *Error
	// kindFirst judges the step's kind before its id (step_done and a
	// failed attempt: a report into a gate is told to use gate_resolve
	// whatever step it names).
	kindFirst bool
	// what names the call in a human_gate_pending refusal (no way around
	// a human: a flow: step whose child waits at a human gate cannot be
	// ended by it); "" for calls that cannot end a flow: step.
	what string
}

// reportable is the prologue of every report into the flow's current step
// (step_done, a failed attempt, skip_step, iteration_start, parallel_done,
// a parallel task's state): it answers the current step when stepID may be
// reported, else the refusal, in r's words. It changes nothing.
func reportable(st *state.FlowState, env transitionEnv, stepID string, r reportRules) (*specs.Step, *Error) {
	if e := r.finished(st, env); e != nil {
		return nil, e
	}
	step := currentStep(st, env)
	if step == nil {
		return nil, execErrorf("Flow is already complete")
	}
	if r.kindFirst {
		if e := kindRefusal(r, step); e != nil {
			return nil, e
		}
	}
	if stepID != step.ID {
		return nil, r.wrongStep(step.ID, stepID)
	}
	if !r.kindFirst {
		if e := kindRefusal(r, step); e != nil {
			return nil, e
		}
	}
	if r.what != "" && step.Kind == specs.KindFlow {
		if g := humanGateBelow(st, env); g != nil {
			return nil, humanGatePending(st, g, r.what+" of step '"+step.ID+"'", env.cmd())
		}
	}
	return step, nil
}

func kindRefusal(r reportRules, step *specs.Step) *Error {
	if r.wrongKind == nil {
		return nil
	}
	return r.wrongKind(step)
}

// The rules of each report.
var (
	stepDoneReport = reportRules{
		finished: finishedRefusal, wrongStep: expectedStep, wrongKind: gateStepRequires, kindFirst: true, what: "step_done",
	}
	attemptFailedReport = reportRules{
		finished: finishedRefusal, wrongStep: expectedStep, wrongKind: gateStepRequires, kindFirst: true, what: "a failed attempt",
	}
	skipReport = reportRules{
		finished: finishedRefusal, wrongStep: expectedStep, what: "skip_step",
		wrongKind: func(step *specs.Step) *Error {
			if step.IsGate() {
				return execErrorf("Step '%s' is a gate step — use stratum_gate_resolve to resolve it", step.ID)
			}
			return nil
		},
	}
	iterationStartReport = reportRules{
		finished: func(st *state.FlowState, env transitionEnv) *Error {
			if env.Flow == nil || st.CurrentIdx < 0 || pastEnd(st, env) {
				return execErrorf("Flow is already complete")
			}
			return flowNotRunning(st)
		},
		wrongStep: expectedStep,
		wrongKind: func(step *specs.Step) *Error {
			if step.IsGate() {
				return execErrorf("Step '%s' is a gate step — cannot start iteration loop", step.ID)
			}
			return nil
		},
	}
	parallelDoneReport = reportRules{
		finished: parallelFinished, wrongStep: stepMismatch,
		wrongKind: notParallel(" Use stratum_step_done for non-parallel steps."),
	}
	parallelTaskReport = reportRules{
		finished: parallelFinished, wrongStep: stepMismatch, wrongKind: notParallel(""),
	}
)

// finishedRefusal refuses a report into a flow that has no current step.
func finishedRefusal(st *state.FlowState, env transitionEnv) *Error {
	switch {
	case st.Status == state.StatusFailed:
		return execErrorf("Flow has failed (retries exhausted); revert to a checkpoint or plan a new flow")
	case st.Status == state.StatusBudgetExhausted:
		return execErrorf("Flow budget exhausted")
	case pastEnd(st, env) || st.Status == state.StatusComplete || st.Status == state.StatusKilled:
		return execErrorf("Flow is already complete")
	}
	return nil
}

// expectedStep is the original's execution_error for a report naming
// another step.
func expectedStep(current, got string) *Error {
	return execErrorf("Expected step '%s', got '%s'", current, got)
}

// gateStepRequires refuses a report into a gate step.
func gateStepRequires(step *specs.Step) *Error {
	if !step.IsGate() {
		return nil
	}
	return refusal(ErrTypeGateStepRequires, "Step '%s' is a gate step. Use stratum_gate_resolve to resolve it.", step.ID)
}

// parallelFinished is the parallel tools' refusal of a finished flow.
func parallelFinished(st *state.FlowState, env transitionEnv) *Error {
	if pastEnd(st, env) || isFinished(st) {
		return refusal(ErrTypeParallelComplete, "Flow is already complete")
	}
	return nil
}

func stepMismatch(current, got string) *Error {
	return refusal(ErrTypeStepMismatch, "Expected step '%s', got '%s'", current, got)
}

// notParallel refuses a parallel report into a step of another kind; hint
// follows the message.
func notParallel(hint string) func(*specs.Step) *Error {
	return func(step *specs.Step) *Error {
		if step.FansOut() {
			return nil
		}
		return refusal(ErrTypeWrongStepType, "Step '%s' is a %s step, not parallel_dispatch.%s", step.ID, step.StepMode(), hint)
	}
}
