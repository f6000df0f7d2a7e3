package engine

import (
	"testing"

	"github.com/stratum-go/stratum/engine/state"
)

// TestReportable: the one prologue of the reports into the current step
// answers each call's refusal in its own words and order (the original's
// per tool), and the step when it may be reported.
func TestReportable(t *testing.T) {
	const src = `version: "0.3"
functions:
  g:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: work
        intent: "W"
        max_iterations: 3
      - id: review
        function: g
        depends_on: [work]
        on_approve: ~
        on_revise: work
        on_kill: ~
`
	f, _ := plan(t, src, "main", nil)
	atWork := f.st.Clone()
	atGate := f.st.Clone()
	atGate.CurrentIdx = 1
	past := f.st.Clone()
	past.CurrentIdx = 2
	failed := f.st.Clone()
	failed.Status = state.StatusFailed

	cases := []struct {
		name   string
		st     *state.FlowState
		rules  reportRules
		stepID string
		typ    ErrorType // "" = reportable
		msg    string
	}{
		// A report into a gate is told to use gate_resolve whatever it names.
		{"step_done at a gate", atGate, stepDoneReport, "other", ErrTypeGateStepRequires, "Step 'review' is a gate step. Use stratum_gate_resolve to resolve it."},
		{"failed attempt at a gate", atGate, attemptFailedReport, "review", ErrTypeGateStepRequires, ""},
		// skip and iteration_start judge the step id first.
		{"skip of another step at a gate", atGate, skipReport, "other", ErrTypeExecution, "Expected step 'review', got 'other'"},
		{"skip of a gate", atGate, skipReport, "review", ErrTypeExecution, "Step 'review' is a gate step — use stratum_gate_resolve to resolve it"},
		{"iteration at a gate", atGate, iterationStartReport, "review", ErrTypeExecution, "Step 'review' is a gate step — cannot start iteration loop"},
		{"parallel_done at a gate", atGate, parallelDoneReport, "review", ErrTypeWrongStepType,
			"Step 'review' is a function step, not parallel_dispatch. Use stratum_step_done for non-parallel steps."},
		{"parallel task at another step", atGate, parallelTaskReport, "other", ErrTypeStepMismatch, "Expected step 'review', got 'other'"},
		{"parallel task at a gate", atGate, parallelTaskReport, "review", ErrTypeWrongStepType, "Step 'review' is a function step, not parallel_dispatch."},
		// A finished flow, in each call's words.
		{"step_done past the end", past, stepDoneReport, "work", ErrTypeExecution, "Flow is already complete"},
		{"step_done of a failed flow", failed, stepDoneReport, "work", ErrTypeExecution, "Flow has failed (retries exhausted); revert to a checkpoint or plan a new flow"},
		{"iteration of a failed flow", failed, iterationStartReport, "work", ErrTypeFlowNotRunning, ""},
		{"parallel_done past the end", past, parallelDoneReport, "work", ErrTypeParallelComplete, "Flow is already complete"},
		// Reportable.
		{"step_done", atWork, stepDoneReport, "work", "", ""},
		{"skip", atWork, skipReport, "work", "", ""},
		{"iteration", atWork, iterationStartReport, "work", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			step, e := reportable(c.st, f.env, c.stepID, c.rules)
			switch {
			case c.typ == "" && (e != nil || step == nil || step.ID != c.stepID):
				t.Fatalf("got %v, %v; want step %s", step, e, c.stepID)
			case c.typ == "":
			case e == nil || e.Type != c.typ || (c.msg != "" && e.Message != c.msg) || step != nil:
				t.Fatalf("got %v, %v; want %s %q", step, e, c.typ, c.msg)
			}
		})
	}
}
