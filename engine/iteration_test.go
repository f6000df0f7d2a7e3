package engine

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

var extNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// extSpec parses an inline spec and returns the named flow; the test fails on
// any diagnostic error.
func extSpec(t *testing.T, src, flow string) (*specs.Spec, *specs.Flow) {
	t.Helper()
	sp, diags := specs.Parse("", []byte(src), exprlang.Compile)
	if diags.HasErrors() || sp == nil {
		t.Fatalf("spec does not parse: %v", diags)
	}
	f := sp.Flows[flow]
	if f == nil {
		t.Fatalf("no flow %q", flow)
	}
	return sp, f
}

// extState is a running flow positioned on the ordered step stepID.
func extState(t *testing.T, env transitionEnv, stepID string) *state.FlowState {
	t.Helper()
	st := &state.FlowState{FlowID: "flow-1", FlowName: env.Flow.Name, Status: state.StatusRunning, FlowStart: env.Now}
	ensureMaps(st)
	idx := stepIndex(env, stepID)
	if idx < 0 {
		t.Fatalf("unknown step %q", stepID)
	}
	st.CurrentIdx = idx
	return st
}

func extEnv(sp *specs.Spec, f *specs.Flow) transitionEnv {
	n := 0
	return transitionEnv{Spec: sp, Flow: f, Now: extNow, NewID: func() string { n++; return "child-" + string(rune('0'+n)) }}
}

// mustOK fails unless the transition returned no Go error and a non-error response.
func mustOK(t *testing.T, res transitionResult, err error) Response {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if res.Wire()["status"] == "error" {
		t.Fatalf("unexpected error response: %v", res.Wire())
	}
	return res.Wire()
}

// mustExecError fails unless the response is an execution_error whose
// message contains want, and the transition was marked unchanged.
func mustExecError(t *testing.T, res transitionResult, err error, want string) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected Go error: %v", err)
	}
	r := res.Wire()
	if r["status"] != "error" || r["error_type"] != "execution_error" || r["success"] != false {
		t.Fatalf("want execution_error, got %v", r)
	}
	if msg, _ := r["message"].(string); !strings.Contains(msg, want) {
		t.Fatalf("message %q does not contain %q", msg, want)
	}
	if !res.Unchanged {
		t.Fatalf("error result must be Unchanged")
	}
}

const iterSpecSrc = `version: "0.2"
contracts:
  Out:
    v: {type: string}
functions:
  review:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: plain
        intent: "no iteration"
      - id: loop
        intent: "iterate"
        depends_on: [plain]
        max_iterations: 3
      - id: crit
        intent: "with criterion"
        depends_on: [loop]
        max_iterations: 5
        exit_criterion: "result.v == 'done'"
      - id: gate
        function: review
        depends_on: [crit]
        on_approve: ~
        on_revise: plain
        on_kill: ~
`

func TestIterationStartErrors(t *testing.T) {
	sp, f := extSpec(t, iterSpecSrc, "main")
	env := extEnv(sp, f)
	tests := []struct {
		name  string
		at    string // current step; "" = past the end
		step  string
		setup func(st *state.FlowState)
		want  string
	}{
		{name: "flow complete", at: "", step: "loop", want: "Flow is already complete"},
		{name: "not current", at: "plain", step: "loop", want: "Expected step 'plain', got 'loop'"},
		{name: "gate", at: "gate", step: "gate", want: "Step 'gate' is a gate step — cannot start iteration loop"},
		{name: "no max_iterations", at: "plain", step: "plain", want: "Step 'plain' does not have max_iterations defined"},
		{name: "active elsewhere", at: "loop", step: "loop",
			setup: func(st *state.FlowState) {
				st.ActiveIteration = &state.ActiveIteration{StepID: "crit", MaxIterations: 5}
			},
			want: "Iteration loop already active on step 'crit'"},
		{name: "pending outcome", at: "loop", step: "loop",
			setup: func(st *state.FlowState) { st.IterationOutcome["loop"] = outcomeExitMax },
			want:  "Step 'loop' already has a pending iteration outcome ('exit_max') — call stratum_step_done first"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st *state.FlowState
			if tc.at == "" {
				st = extState(t, env, "plain")
				st.CurrentIdx = len(f.Order)
			} else {
				st = extState(t, env, tc.at)
			}
			if tc.setup != nil {
				tc.setup(st)
			}
			before := stateBytes(st)
			res, err := iterationStart(st, env, tc.step)
			mustExecError(t, res, err, tc.want)
			if string(stateBytes(st)) != string(before) {
				t.Fatalf("state changed by a refused start")
			}
		})
	}
}

func TestIterationStartResponse(t *testing.T) {
	sp, f := extSpec(t, iterSpecSrc, "main")
	env := extEnv(sp, f)
	for _, tc := range []struct {
		step string
		ec   any
		max  int
	}{{"loop", nil, 3}, {"crit", "result.v == 'done'", 5}} {
		st := extState(t, env, tc.step)
		res, err := iterationStart(st, env, tc.step)
		r := mustOK(t, res, err)
		want := Response{"status": "iteration_started", "flow_id": "flow-1", "step_id": tc.step,
			"max_iterations": tc.max, "exit_criterion": tc.ec, "iteration": 0}
		if !reflect.DeepEqual(r, want) {
			t.Fatalf("got %v, want %v", r, want)
		}
		if st.ActiveIteration == nil || st.ActiveIteration.StepID != tc.step || st.ActiveIteration.Count != 0 ||
			!st.ActiveIteration.StartedAt.Equal(extNow) {
			t.Fatalf("active iteration not recorded: %+v", st.ActiveIteration)
		}
		if len(res.Events) != 1 || res.Events[0].Type != EventIterationReport || res.Events[0].FlowID != "flow-1" {
			t.Fatalf("events: %+v", res.Events)
		}
		if _, ok := st.IterationAccumulator[tc.step]; ok {
			t.Fatalf("a non-accumulating step must not get an accumulator")
		}
	}
}

func TestIterationReportErrors(t *testing.T) {
	sp, f := extSpec(t, iterSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "loop")
	res, err := iterationReport(st, env, "loop", map[string]any{"v": "x"})
	mustExecError(t, res, err, "No active iteration loop")
	res, err = iterationAbort(st, env, "loop", "why")
	mustExecError(t, res, err, "No active iteration loop")

	okFn(t)(iterationStart(st, env, "loop"))
	res, err = iterationReport(st, env, "crit", map[string]any{"v": "x"})
	mustExecError(t, res, err, "Active iteration is on step 'loop', got report for 'crit'")
	res, err = iterationAbort(st, env, "crit", "why")
	mustExecError(t, res, err, "Active iteration is on step 'loop', got abort for 'crit'")
}

// okFn adapts mustOK to a transition's two results: okFn(t)(Commit(…)).
func okFn(t *testing.T) func(transitionResult, error) Response {
	return func(res transitionResult, err error) Response {
		t.Helper()
		return mustOK(t, res, err)
	}
}

// report runs one IterationReport and returns its response.
func report(t *testing.T, st *state.FlowState, env transitionEnv, step string, result any) Response {
	t.Helper()
	return okFn(t)(iterationReport(st, env, step, result))
}

func TestIterationOutcomes(t *testing.T) {
	sp, f := extSpec(t, iterSpecSrc, "main")
	env := extEnv(sp, f)
	type rep struct {
		result  any
		outcome string
		met     bool
	}
	tests := []struct {
		name    string
		step    string
		reports []rep
	}{
		{"three identical results stagnate before max", "loop", []rep{
			{map[string]any{"v": "a"}, outcomeContinue, false},
			{map[string]any{"v": "a"}, outcomeContinue, false},
			{map[string]any{"v": "a"}, outcomeExitStagnation, false},
		}},
		{"different results reach max", "loop", []rep{
			{map[string]any{"v": "a"}, outcomeContinue, false},
			{map[string]any{"v": "b"}, outcomeContinue, false},
			{map[string]any{"v": "a"}, outcomeExitMax, false},
		}},
		{"key order does not change the fingerprint", "loop", []rep{
			{map[string]any{"a": 1.0, "b": 2.0}, outcomeContinue, false},
			{map[string]any{"b": 2.0, "a": 1.0}, outcomeContinue, false},
			{map[string]any{"a": 1.0, "b": 2.0}, outcomeExitStagnation, false},
		}},
		{"criterion met", "crit", []rep{
			{map[string]any{"v": "wip"}, outcomeContinue, false},
			{map[string]any{"v": "done"}, outcomeExitSuccess, true},
		}},
		{"criterion met at once", "crit", []rep{
			{map[string]any{"v": "done", "x": 1.0}, outcomeExitSuccess, true},
		}},
		{"success beats max", "crit", []rep{
			{map[string]any{"v": "1"}, outcomeContinue, false},
			{map[string]any{"v": "2"}, outcomeContinue, false},
			{map[string]any{"v": "3"}, outcomeContinue, false},
			{map[string]any{"v": "4"}, outcomeContinue, false},
			{map[string]any{"v": "done"}, outcomeExitSuccess, true},
		}},
		{"stagnation beats max", "crit", []rep{
			{map[string]any{"v": "1"}, outcomeContinue, false},
			{map[string]any{"v": "2"}, outcomeContinue, false},
			{map[string]any{"v": "x"}, outcomeContinue, false},
			{map[string]any{"v": "x"}, outcomeContinue, false},
			{map[string]any{"v": "x"}, outcomeExitStagnation, false},
		}},
		{"stagnation with criterion not met", "crit", []rep{
			{map[string]any{"v": "wip"}, outcomeContinue, false},
			{map[string]any{"v": "wip"}, outcomeContinue, false},
			{map[string]any{"v": "wip"}, outcomeExitStagnation, false},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := extState(t, env, tc.step)
			okFn(t)(iterationStart(st, env, tc.step))
			for i, r := range tc.reports {
				res, err := iterationReport(st, env, tc.step, r.result)
				resp := mustOK(t, res, err)
				if resp["outcome"] != r.outcome || resp["exit_criterion_met"] != r.met || resp["iteration"] != i+1 {
					t.Fatalf("report %d: got %v, want outcome %s met %v", i+1, resp, r.outcome, r.met)
				}
				wantStatus := "iteration_continue"
				if r.outcome != outcomeContinue {
					wantStatus = "iteration_exit"
					if !reflect.DeepEqual(resp["final_result"], r.result) {
						t.Fatalf("final_result %v, want %v", resp["final_result"], r.result)
					}
					if st.ActiveIteration != nil || st.IterationOutcome[tc.step] != r.outcome {
						t.Fatalf("exit must end the loop and record the outcome: %+v %v", st.ActiveIteration, st.IterationOutcome)
					}
				} else if _, ok := resp["final_result"]; ok {
					t.Fatalf("continue must not carry final_result")
				}
				if resp["status"] != wantStatus {
					t.Fatalf("status %v, want %s", resp["status"], wantStatus)
				}
				if _, leak := resp["accumulated"]; leak {
					t.Fatalf("non-accumulating step leaks accumulated: %v", resp)
				}
				if len(res.Events) != 1 || res.Events[0].Type != EventIterationReport || res.Events[0].Data.(IterationReport).Outcome != r.outcome {
					t.Fatalf("events: %+v", res.Events)
				}
			}
			h := st.Iterations[tc.step]
			if len(h) != len(tc.reports) {
				t.Fatalf("history has %d entries, want %d", len(h), len(tc.reports))
			}
			for i, e := range h {
				if e.Iteration != i+1 || e.Round != 0 || len(e.ResultFingerprint) != 64 || e.Outcome != tc.reports[i].outcome ||
					!e.Timestamp.Equal(extNow) || e.Result == nil {
					t.Fatalf("entry %d: %+v", i, e)
				}
			}
		})
	}
}

func TestIterationExitCriterionError(t *testing.T) {
	sp, f := extSpec(t, iterSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "crit")
	okFn(t)(iterationStart(st, env, "crit"))
	// `result.v` on a result without v raises: not met, error reported.
	r := report(t, st, env, "crit", map[string]any{"other": 1.0})
	if r["exit_criterion_met"] != false || r["outcome"] != outcomeContinue {
		t.Fatalf("got %v", r)
	}
	if msg, _ := r["exit_criterion_error"].(string); msg == "" {
		t.Fatalf("missing exit_criterion_error: %v", r)
	}
	if st.Iterations["crit"][0].ExitCriterionError == "" {
		t.Fatalf("entry lacks the error")
	}
	r = report(t, st, env, "crit", map[string]any{"v": "wip"})
	if _, ok := r["exit_criterion_error"]; ok {
		t.Fatalf("error key on a clean evaluation: %v", r)
	}
}

func TestIterationStagnationUsesRoundHistory(t *testing.T) {
	sp, f := extSpec(t, strings.Replace(iterSpecSrc, "max_iterations: 3", "max_iterations: 2", 1), "main")
	env := extEnv(sp, f)
	st := extState(t, env, "loop")
	same := map[string]any{"v": "same"}
	okFn(t)(iterationStart(st, env, "loop"))
	report(t, st, env, "loop", same)
	if r := report(t, st, env, "loop", same); r["outcome"] != outcomeExitMax {
		t.Fatalf("second report: %v", r)
	}
	// A failed step_done clears the outcome; a new loop still sees the
	// earlier reports of this round.
	clearStepIteration(st, "loop")
	okFn(t)(iterationStart(st, env, "loop"))
	if r := report(t, st, env, "loop", same); r["outcome"] != outcomeExitStagnation || r["iteration"] != 1 {
		t.Fatalf("third identical report across loops: %v", r)
	}
}

func TestIterationAbortBreaksStagnation(t *testing.T) {
	sp, f := extSpec(t, strings.Replace(iterSpecSrc, "max_iterations: 3", "max_iterations: 9", 1), "main")
	env := extEnv(sp, f)
	st := extState(t, env, "loop")
	same := map[string]any{"v": "same"}
	okFn(t)(iterationStart(st, env, "loop"))
	report(t, st, env, "loop", same)
	report(t, st, env, "loop", same)
	res, err := iterationAbort(st, env, "loop", "giving up")
	r := mustOK(t, res, err)
	want := Response{"status": "iteration_aborted", "flow_id": "flow-1", "step_id": "loop", "iteration": 2, "reason": "giving up"}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("abort response %v, want %v", r, want)
	}
	h := st.Iterations["loop"]
	last := h[len(h)-1]
	if last.Outcome != outcomeExitAbort || last.Iteration != 2 || last.ExitCriterionMet ||
		!reflect.DeepEqual(last.Result, map[string]any{"aborted": true, "reason": "giving up"}) {
		t.Fatalf("abort entry %+v", last)
	}
	if st.IterationOutcome["loop"] != outcomeExitAbort || st.ActiveIteration != nil {
		t.Fatalf("abort must record exit_abort and end the loop")
	}
	if len(res.Events) != 1 || res.Events[0].Data.(IterationReport).Action != "abort" {
		t.Fatalf("events %+v", res.Events)
	}
	consumeIterationOutcome(st, "loop")
	okFn(t)(iterationStart(st, env, "loop"))
	if r := report(t, st, env, "loop", same); r["outcome"] != outcomeContinue {
		t.Fatalf("the abort entry must break the fingerprint chain: %v", r)
	}
}

const scoreSpecSrc = `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: tune
        intent: "tune"
        max_iterations: 6
        score_expr: "result.score"
      - id: tunec
        intent: "tune with criterion"
        max_iterations: 4
        score_expr: "result.score"
        exit_criterion: "best_score >= 0.9 and iteration >= 1 and len(prior_scores) >= 0"
      - id: seen
        intent: "sees locals"
        max_iterations: 5
        score_expr: "result.score"
        exit_criterion: "len(prior_scores) >= 2 and iteration == 3"
`

func TestIterationScoring(t *testing.T) {
	sp, f := extSpec(t, scoreSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "tune")
	okFn(t)(iterationStart(st, env, "tune"))

	r := report(t, st, env, "tune", map[string]any{"score": 0.5, "n": 1.0})
	if r["score"] != 0.5 || r["outcome"] != outcomeContinue {
		t.Fatalf("1: %v", r)
	}
	report(t, st, env, "tune", map[string]any{"score": 0.8, "n": 2.0})
	// A tie keeps the earlier best.
	report(t, st, env, "tune", map[string]any{"score": 0.8, "n": 3.0})
	b := st.IterationBest["tune"]
	if b == nil || *b.Score != 0.8 || b.Iteration != 2 {
		t.Fatalf("best after tie: %+v", b)
	}
	// A boolean is not a score.
	r = report(t, st, env, "tune", map[string]any{"score": true, "n": 4.0})
	if r["score"] != nil || r["score_error"] == nil {
		t.Fatalf("bool score accepted: %v", r)
	}
	if st.Iterations["tune"][3].Score != nil {
		t.Fatalf("bool score stored")
	}
	// No new best for 3 reports (3, 4, 5) after iteration 2 → stagnation,
	// although the results all differ.
	r = report(t, st, env, "tune", map[string]any{"score": 0.1, "n": 5.0})
	if r["outcome"] != outcomeExitStagnation || r["status"] != "iteration_exit" {
		t.Fatalf("score stagnation: %v", r)
	}
	if r["best_score"] != 0.8 || r["best_iteration"] != 2 ||
		!reflect.DeepEqual(r["final_result"], map[string]any{"score": 0.8, "n": 2.0}) {
		t.Fatalf("exit must return the best result: %v", r)
	}
	got, ok := iterationBestResult(st, "tune")
	if !ok || !reflect.DeepEqual(got, map[string]any{"score": 0.8, "n": 2.0}) {
		t.Fatalf("iterationBestResult = %v %v", got, ok)
	}
	if _, ok := iterationBestResult(st, "tunec"); ok {
		t.Fatalf("best result for a step that never scored")
	}
}

func TestIterationScoringWithCriterion(t *testing.T) {
	sp, f := extSpec(t, scoreSpecSrc, "main")
	env := extEnv(sp, f)

	// With exit_criterion, neither score nor fingerprint stagnation applies.
	st := extState(t, env, "tunec")
	okFn(t)(iterationStart(st, env, "tunec"))
	same := map[string]any{"score": 0.1}
	for i := 1; i <= 3; i++ {
		if r := report(t, st, env, "tunec", same); r["outcome"] != outcomeContinue {
			t.Fatalf("report %d: %v", i, r)
		}
	}
	r := report(t, st, env, "tunec", map[string]any{"score": 0.95})
	if r["outcome"] != outcomeExitSuccess || r["best_score"] != 0.95 || r["best_iteration"] != 4 {
		t.Fatalf("criterion on best_score: %v", r)
	}

	// prior_scores and iteration are visible to the criterion.
	st = extState(t, env, "seen")
	okFn(t)(iterationStart(st, env, "seen"))
	report(t, st, env, "seen", map[string]any{"score": 1.0})
	report(t, st, env, "seen", map[string]any{"score": 2.0})
	if r := report(t, st, env, "seen", map[string]any{"score": 3.0}); r["outcome"] != outcomeExitSuccess {
		t.Fatalf("prior_scores/iteration: %v", r)
	}
}

func TestIterationAbortScored(t *testing.T) {
	sp, f := extSpec(t, scoreSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "tune")
	okFn(t)(iterationStart(st, env, "tune"))
	r := okFn(t)(iterationAbort(st, env, "tune", "stop"))
	if v, ok := r["best_result"]; !ok || v != nil {
		t.Fatalf("best_result must be null: %v", r)
	}
	if v, ok := r["best_score"]; !ok || v != nil {
		t.Fatalf("best_score must be null: %v", r)
	}

	st = extState(t, env, "tune")
	okFn(t)(iterationStart(st, env, "tune"))
	report(t, st, env, "tune", map[string]any{"score": 0.4})
	r = okFn(t)(iterationAbort(st, env, "tune", "stop"))
	if r["best_score"] != 0.4 || !reflect.DeepEqual(r["best_result"], map[string]any{"score": 0.4}) {
		t.Fatalf("scored abort: %v", r)
	}
}

const accSpecSrc = `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: hunt
        intent: "hunt"
        max_iterations: 10
        accumulate: "result.findings"
        accumulate_key: "item.id"
        exit_criterion: "dry_streak >= 2"
      - id: whole
        intent: "no key"
        max_iterations: 3
        accumulate: "result.findings"
      - id: counted
        intent: "count"
        max_iterations: 10
        accumulate: "result.findings"
        exit_criterion: "accumulated_count >= 3 and new_count == 1 and len(accumulator) == 3"
`

func TestIterationAccumulateWithKey(t *testing.T) {
	sp, f := extSpec(t, accSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "hunt")
	okFn(t)(iterationStart(st, env, "hunt"))
	if a := st.IterationAccumulator["hunt"]; a == nil || len(a.Items) != 0 {
		t.Fatalf("accumulating step starts with an empty accumulator: %+v", a)
	}
	item := func(id, note string) map[string]any { return map[string]any{"id": id, "note": note} }
	steps := []struct {
		findings   []any
		newCount   int
		dryStreak  int
		count      int
		outcome    string
		wantAccErr bool
	}{
		{[]any{item("a", "1"), item("b", "1")}, 2, 0, 2, outcomeContinue, false},
		// Same ids with other notes are duplicates.
		{[]any{item("a", "2"), item("c", "1")}, 1, 0, 3, outcomeContinue, false},
		{[]any{item("b", "9")}, 0, 1, 3, outcomeContinue, false},
		// An extraction error adds nothing and freezes the dry streak.
		{nil, 0, 1, 3, outcomeContinue, true},
		// An item whose key fails falls back to the whole item; twice the
		// same whole item is one.
		{[]any{map[string]any{"nokey": 1.0}, map[string]any{"nokey": 1.0}}, 1, 0, 4, outcomeContinue, false},
		{[]any{}, 0, 1, 4, outcomeContinue, false},
		{[]any{item("a", "x")}, 0, 2, 4, outcomeExitSuccess, false},
	}
	for i, s := range steps {
		var result map[string]any
		if s.findings == nil {
			result = map[string]any{"other": true}
		} else {
			result = map[string]any{"findings": s.findings}
		}
		r := report(t, st, env, "hunt", result)
		if r["new_count"] != s.newCount || r["dry_streak"] != s.dryStreak || r["accumulated_count"] != s.count || r["outcome"] != s.outcome {
			t.Fatalf("report %d: %v", i+1, r)
		}
		_, hasErr := r["accumulate_error"]
		if hasErr != s.wantAccErr {
			t.Fatalf("report %d: accumulate_error presence %v: %v", i+1, hasErr, r)
		}
		e := st.Iterations["hunt"][i]
		if e.NewCount == nil || *e.NewCount != s.newCount || e.DryStreak == nil || *e.DryStreak != s.dryStreak ||
			(e.AccumulateError != "") != s.wantAccErr {
			t.Fatalf("entry %d: %+v", i+1, e)
		}
	}
	acc := st.IterationAccumulator["hunt"]
	ids := []any{}
	for _, it := range acc.Items {
		ids = append(ids, it.(map[string]any)["id"])
	}
	if !reflect.DeepEqual(ids, []any{"a", "b", "c", nil}) {
		t.Fatalf("accumulated ids %v", ids)
	}
	// First occurrence wins.
	if acc.Items[0].(map[string]any)["note"] != "1" {
		t.Fatalf("first occurrence must be kept: %v", acc.Items[0])
	}
}

func TestIterationAccumulateWholeItem(t *testing.T) {
	sp, f := extSpec(t, accSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "whole")
	okFn(t)(iterationStart(st, env, "whole"))
	same := map[string]any{"findings": []any{"x", map[string]any{"k": 1.0, "j": 2.0}}}
	// Identical results do not stagnate an accumulating loop.
	r := report(t, st, env, "whole", same)
	if r["new_count"] != 2 {
		t.Fatalf("1: %v", r)
	}
	report(t, st, env, "whole", map[string]any{"findings": []any{map[string]any{"j": 2.0, "k": 1.0}, "x", "y"}})
	r = report(t, st, env, "whole", same)
	if r["outcome"] != outcomeExitMax {
		t.Fatalf("accumulating loop must not stagnate on fingerprints: %v", r)
	}
	// (compared as JSON: the expression runtime may hand back integral numbers as ints)
	if r["accumulated_count"] != 3 || string(mustJSON(t, r["accumulated"])) != `["x",{"j":2,"k":1},"y"]` {
		t.Fatalf("exit accumulated: %v", r)
	}
	if _, ok := r["best_score"]; ok {
		t.Fatalf("unscored loop reports best_score: %v", r)
	}

	// mergeAccumulated puts the deduped set into the step's output.
	in := map[string]any{"summary": "s"}
	out := mergeAccumulated(st, f.Step("whole"), in)
	m, ok := out.(map[string]any)
	if !ok || m["accumulated_count"] != 3 || len(m["accumulated"].([]any)) != 3 || m["summary"] != "s" {
		t.Fatalf("merged %v", out)
	}
	if _, touched := in["accumulated"]; touched {
		t.Fatalf("mergeAccumulated modified its input")
	}
	if got := mergeAccumulated(st, f.Step("whole"), "text"); got != "text" {
		t.Fatalf("non-dict result changed: %v", got)
	}
}

func TestIterationAccumulatorLocals(t *testing.T) {
	sp, f := extSpec(t, accSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "counted")
	okFn(t)(iterationStart(st, env, "counted"))
	report(t, st, env, "counted", map[string]any{"findings": []any{1.0, 2.0}})
	if r := report(t, st, env, "counted", map[string]any{"findings": []any{2.0, 3.0}}); r["outcome"] != outcomeExitSuccess {
		t.Fatalf("accumulator locals: %v", r)
	}
}

func TestNoAccumulatedLeak(t *testing.T) {
	sp, f := extSpec(t, iterSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "loop")
	okFn(t)(iterationStart(st, env, "loop"))
	report(t, st, env, "loop", map[string]any{"v": "a"})
	report(t, st, env, "loop", map[string]any{"v": "b"})
	r := report(t, st, env, "loop", map[string]any{"v": "c"})
	for _, k := range []string{"accumulated", "accumulated_count", "new_count", "dry_streak", "best_score"} {
		if _, ok := r[k]; ok {
			t.Fatalf("non-accumulating, unscored step reports %s: %v", k, r)
		}
	}
	in := map[string]any{"v": "c"}
	out := mergeAccumulated(st, f.Step("loop"), in)
	if !reflect.DeepEqual(out, map[string]any{"v": "c"}) {
		t.Fatalf("accumulated leaked into a non-accumulating step: %v", out)
	}
	// Even a stray accumulator (e.g. from an old state) is ignored for a
	// step that does not declare accumulate.
	st.IterationAccumulator["loop"] = &state.Accumulator{Items: []any{}, Keys: []string{}}
	if out := mergeAccumulated(st, f.Step("loop"), in); !reflect.DeepEqual(out, map[string]any{"v": "c"}) {
		t.Fatalf("leak from a stray accumulator: %v", out)
	}
}

func TestClearAndConsumeIteration(t *testing.T) {
	sp, f := extSpec(t, scoreSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "tune")
	okFn(t)(iterationStart(st, env, "tune"))
	report(t, st, env, "tune", map[string]any{"score": 1.0})
	okFn(t)(iterationAbort(st, env, "tune", "x"))

	// Start refused while the outcome is pending.
	res, err := iterationStart(st, env, "tune")
	mustExecError(t, res, err, "pending iteration outcome ('exit_abort')")

	// consume: outcome gone, history kept.
	consumeIterationOutcome(st, "tune")
	if _, ok := st.IterationOutcome["tune"]; ok {
		t.Fatalf("outcome not consumed")
	}
	if len(st.Iterations["tune"]) != 2 {
		t.Fatalf("history lost")
	}

	// clear: outcome, best, accumulator and an active loop on the step go.
	okFn(t)(iterationStart(st, env, "tune"))
	report(t, st, env, "tune", map[string]any{"score": 2.0})
	st.IterationOutcome["tune"] = outcomeExitMax
	st.IterationAccumulator["tune"] = &state.Accumulator{}
	st.IterationOutcome["other"] = outcomeExitMax
	clearStepIteration(st, "tune")
	if st.ActiveIteration != nil || st.IterationOutcome["tune"] != "" || st.IterationBest["tune"] != nil || st.IterationAccumulator["tune"] != nil {
		t.Fatalf("clearStepIteration left state: %+v %v %v %v", st.ActiveIteration, st.IterationOutcome, st.IterationBest, st.IterationAccumulator)
	}
	if st.IterationOutcome["other"] != outcomeExitMax {
		t.Fatalf("clearStepIteration touched another step")
	}
	if _, ok := iterationBestResult(st, "tune"); ok {
		t.Fatalf("best survives a clear")
	}
	// An active loop on another step is not ended by clearing this one.
	st.ActiveIteration = &state.ActiveIteration{StepID: "tunec"}
	clearStepIteration(st, "tune")
	consumeIterationOutcome(st, "tune")
	if st.ActiveIteration == nil {
		t.Fatalf("loop on another step ended")
	}
	// Works on a state with nil maps (as decoded from an old record).
	clearStepIteration(&state.FlowState{}, "x")
	consumeIterationOutcome(&state.FlowState{}, "x")
}

func TestIterationStatePersists(t *testing.T) {
	// The iteration state survives a JSON round trip (what the store does
	// between transitions) and the loop continues where it was.
	sp, f := extSpec(t, accSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "hunt")
	okFn(t)(iterationStart(st, env, "hunt"))
	report(t, st, env, "hunt", map[string]any{"findings": []any{map[string]any{"id": "a"}}})
	var back state.FlowState
	if err := json.Unmarshal(stateBytes(st), &back); err != nil {
		t.Fatal(err)
	}
	r := report(t, &back, env, "hunt", map[string]any{"findings": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}})
	if r["iteration"] != 2 || r["new_count"] != 1 || r["accumulated_count"] != 2 {
		t.Fatalf("after round trip: %v", r)
	}
}

// TestIterationReportEvent: a report's iteration_report event carries what
// its entry recorded (iteration, outcome, whether the criterion was met,
// the new items and the dry streak).
func TestIterationReportEvent(t *testing.T) {
	sp, f := extSpec(t, accSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "hunt")
	okFn(t)(iterationStart(st, env, "hunt"))
	results := []map[string]any{
		{"findings": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}},
		{"findings": []any{map[string]any{"id": "a"}}},
		{"findings": []any{}},
	}
	want := []Payload{
		IterationReport{Action: "report", Iteration: 1, Outcome: outcomeContinue, NewCount: ptrTo(2), DryStreak: ptrTo(0)},
		IterationReport{Action: "report", Iteration: 2, Outcome: outcomeContinue, NewCount: ptrTo(0), DryStreak: ptrTo(1)},
		IterationReport{Action: "report", Iteration: 3, Outcome: outcomeExitSuccess, ExitCriterionMet: true, NewCount: ptrTo(0), DryStreak: ptrTo(2)},
	}
	for i, r := range results {
		res, err := iterationReport(st, env, "hunt", r)
		mustOK(t, res, err)
		if len(res.Events) != 1 || res.Events[0].Type != EventIterationReport || res.Events[0].StepID != "hunt" {
			t.Fatalf("report %d: events %+v", i+1, res.Events)
		}
		if got := res.Events[0].Data; !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("report %d: event detail %+v, want %+v", i+1, got, want[i])
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
