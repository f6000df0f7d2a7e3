package engine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

const ckptSpecSrc = `version: "0.2"
functions:
  review:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: a
        intent: "first"
      - id: g
        function: review
        depends_on: [a]
        policy: flag
        on_approve: b
        on_revise: a
        on_kill: ~
      - id: b
        intent: "second"
        depends_on: [g]
      - id: c
        intent: "third"
        depends_on: [b]
`

func TestCommit(t *testing.T) {
	sp, f := extSpec(t, ckptSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "b")
	st.StepOutputs["a"] = map[string]any{"x": 1.0}

	res, err := commitCheckpoint(st, env, "  first  ")
	r := mustOK(t, res, err)
	want := Response{"status": "committed", "flow_id": "flow-1", "label": "first", "step_number": 3,
		"current_step_id": "b", "checkpoints": []string{"first"}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %v, want %v", r, want)
	}
	cp := st.Checkpoints["first"]
	if cp == nil || cp.Label != "first" || cp.CurrentIdx != 2 || !cp.CreatedAt.Equal(extNow) {
		t.Fatalf("checkpoint %+v", cp)
	}
	if len(res.Events) != 1 || res.Events[0].Type != EventCheckpoint || res.Events[0].Data.(Checkpoint).Label != "first" {
		t.Fatalf("events %+v", res.Events)
	}

	// The snapshot is a deep copy.
	st.StepOutputs["a"].(map[string]any)["x"] = 2.0
	if cp.StepOutputs["a"].(map[string]any)["x"] != 1.0 {
		t.Fatalf("snapshot shares step outputs with the state")
	}

	// Same label overwrites; labels are listed sorted.
	st.CurrentIdx = 3
	okFn(t)(commitCheckpoint(st, env, "zeta"))
	r = okFn(t)(commitCheckpoint(st, env, "first"))
	if !reflect.DeepEqual(r["checkpoints"], []string{"first", "zeta"}) || st.Checkpoints["first"].CurrentIdx != 3 {
		t.Fatalf("overwrite: %v %+v", r, st.Checkpoints["first"])
	}

	// Past the end: step_number = current_idx+1, no current step.
	st.CurrentIdx = len(f.Order)
	st.Status = state.StatusComplete
	r = okFn(t)(commitCheckpoint(st, env, "end"))
	if r["step_number"] != len(f.Order)+1 || r["current_step_id"] != nil {
		t.Fatalf("commit when complete: %v", r)
	}

	for _, bad := range []string{"", "   ", "\t\n"} {
		res, err := commitCheckpoint(st, env, bad)
		if err != nil || res.Wire()["status"] != "error" || res.Wire()["error_type"] != "invalid_label" || !res.Unchanged {
			t.Fatalf("label %q: %v %v", bad, res.Wire(), err)
		}
		if _, ok := res.Wire()["success"]; ok {
			t.Fatalf("invalid_label is a hand-built envelope without success: %v", res.Wire())
		}
	}
}

func TestCommitSnapshotsExactFields(t *testing.T) {
	sp, f := extSpec(t, ckptSpecSrc, "main")
	env := extEnv(sp, f)
	st := fullState(t, env)
	okFn(t)(commitCheckpoint(st, env, "cp"))
	cp := st.Checkpoints["cp"]
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"label", "step_outputs", "attempts", "records", "current_idx", "round", "rounds",
		"round_start_step_id", "terminal_status", "iterations", "archived_iterations", "active_iteration",
		"iteration_outcome", "iteration_best", "iteration_accumulator", "active_child_flow_id", "child_audits", "created_at"}
	if len(m) != len(want) {
		t.Fatalf("checkpoint has keys %v", m)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Fatalf("checkpoint lacks %s", k)
		}
	}
	// Every captured field equals the state's.
	if !reflect.DeepEqual(cp.StepOutputs, st.StepOutputs) || !reflect.DeepEqual(cp.Attempts, st.Attempts) ||
		!reflect.DeepEqual(cp.Records, st.Records) || !reflect.DeepEqual(cp.Rounds, st.Rounds) ||
		!reflect.DeepEqual(cp.Iterations, st.Iterations) || !reflect.DeepEqual(cp.ArchivedIterations, st.ArchivedIterations) ||
		!reflect.DeepEqual(cp.ActiveIteration, st.ActiveIteration) || !reflect.DeepEqual(cp.IterationOutcome, st.IterationOutcome) ||
		!reflect.DeepEqual(cp.IterationBest, st.IterationBest) || !reflect.DeepEqual(cp.IterationAccumulator, st.IterationAccumulator) ||
		!reflect.DeepEqual(cp.ChildAudits, st.ChildAudits) || *cp.RoundStartStepID != *st.RoundStartStepID ||
		*cp.TerminalStatus != *st.TerminalStatus || *cp.ActiveChildFlowID != *st.ActiveChildFlowID ||
		cp.Round != st.Round || cp.CurrentIdx != st.CurrentIdx {
		t.Fatalf("snapshot differs from the state")
	}
	// Pointers are not shared.
	if cp.RoundStartStepID == st.RoundStartStepID || cp.ActiveIteration == st.ActiveIteration ||
		cp.IterationBest["b"] == st.IterationBest["b"] || cp.IterationAccumulator["b"] == st.IterationAccumulator["b"] {
		t.Fatalf("snapshot shares pointers with the state")
	}
}

// fullState is a state with every checkpointed field set.
func fullState(t *testing.T, env transitionEnv) *state.FlowState {
	t.Helper()
	st := extState(t, env, "b")
	score := 0.7
	one := 1
	st.Inputs = map[string]any{"topic": "x"}
	st.StepOutputs = map[string]any{"a": map[string]any{"v": []any{1.0, "two"}}}
	st.Attempts = map[string]int{"a": 1}
	st.Records = []state.Record{{Type: state.RecordStep, StepID: "a", Attempts: 1, RoundStartStepID: strPtr("a")}}
	st.Round = 1
	st.Rounds = [][]state.Record{{{Type: state.RecordGate, StepID: "g", Outcome: "revise"}}}
	st.RoundStartStepID = strPtr("a")
	st.TerminalStatus = strPtr("killed")
	st.Iterations = map[string][]state.IterationEntry{"b": {{Iteration: 1, Result: map[string]any{"q": 1.0}, Score: &score, NewCount: &one, DryStreak: &one}}}
	st.ArchivedIterations = []map[string][]state.IterationEntry{{"b": {{Iteration: 1, Outcome: outcomeExitMax}}}}
	st.ActiveIteration = &state.ActiveIteration{StepID: "b", Count: 1, MaxIterations: 3}
	st.IterationOutcome = map[string]string{"b": outcomeContinue}
	st.IterationBest = map[string]*state.IterationBest{"b": {Result: map[string]any{"q": 1.0}, Score: &score, Iteration: 1}}
	st.IterationAccumulator = map[string]*state.Accumulator{"b": {Items: []any{"i"}, Keys: []string{`"i"`}, DryStreak: 1}}
	st.ActiveChildFlowID = strPtr("child-9")
	st.ChildAudits = map[string][]json.RawMessage{"b": {json.RawMessage(`{"flow_id":"c"}`)}}
	st.DispatchedAt = map[string]time.Time{"b": extNow}
	return st
}

func TestRevertRestores(t *testing.T) {
	sp, f := extSpec(t, ckptSpecSrc, "main")
	env := extEnv(sp, f)
	st := fullState(t, env)
	st.TerminalStatus = nil
	st.ActiveChildFlowID = nil
	okFn(t)(commitCheckpoint(st, env, "cp"))
	snap := st.Checkpoints["cp"]
	snapJSON, _ := json.Marshal(snap)

	// Move on: change every field, the inputs, and add a checkpoint.
	st.StepOutputs["b"] = map[string]any{"done": true}
	st.StepOutputs["a"].(map[string]any)["v"] = "changed"
	st.Attempts["b"] = 2
	st.Records = append(st.Records, state.Record{Type: state.RecordStep, StepID: "b"})
	st.CurrentIdx = 3
	st.Round = 2
	st.Rounds = append(st.Rounds, []state.Record{})
	st.Iterations["c"] = []state.IterationEntry{{Iteration: 1}}
	st.ActiveIteration = nil
	st.IterationOutcome["b"] = outcomeExitMax
	st.Inputs["topic"] = "kept"
	okFn(t)(commitCheckpoint(st, env, "later"))

	later := env
	later.Now = extNow.Add(time.Minute)
	res, err := revertCheckpoint(st, later, " cp ", review.ChannelTUI)
	r := mustOK(t, res, err)
	if r["reverted_to"] != "cp" || r["status"] != dispatchExecuteStep || r["step_id"] != "b" {
		t.Fatalf("revert response %v", r)
	}
	if res.Unchanged {
		t.Fatalf("revert must be persisted")
	}
	if len(res.Events) == 0 || res.Events[0].Type != EventCheckpoint || res.Events[0].Data.(Checkpoint).Action != "revert" {
		t.Fatalf("events %+v", res.Events)
	}
	if st.CurrentIdx != 2 || st.Round != 1 || st.Attempts["b"] != 0 || len(st.Records) != 1 ||
		len(st.Rounds) != 1 || st.Iterations["c"] != nil || st.IterationOutcome["b"] != outcomeContinue ||
		st.ActiveIteration == nil || st.StepOutputs["b"] != nil ||
		!reflect.DeepEqual(st.StepOutputs["a"], map[string]any{"v": []any{1.0, "two"}}) {
		t.Fatalf("fields not restored: %+v", st)
	}
	if st.Inputs["topic"] != "kept" {
		t.Fatalf("inputs must not be restored")
	}
	if len(st.Checkpoints) != 2 || st.Checkpoints["later"] == nil {
		t.Fatalf("checkpoints must be kept: %v", st.Checkpoints)
	}
	if st.Status != state.StatusRunning {
		t.Fatalf("status %s", st.Status)
	}
	// Reverting must not alias the checkpoint: changing the state leaves it intact.
	st.StepOutputs["a"].(map[string]any)["v"] = "again"
	st.IterationAccumulator["b"].Items[0] = "mutated"
	if b, _ := json.Marshal(st.Checkpoints["cp"]); string(b) != string(snapJSON) {
		t.Fatalf("checkpoint changed after revert:\n%s\n%s", b, snapJSON)
	}
}

func TestRevertAppliesPolicyLoop(t *testing.T) {
	sp, f := extSpec(t, ckptSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "g") // a snapshot taken on the flag gate (e.g. by an older version)
	st.StepOutputs["a"] = map[string]any{"ok": true}
	okFn(t)(commitCheckpoint(st, env, "at-gate"))
	st.CurrentIdx = stepIndex(env, "c")

	res, err := revertCheckpoint(st, env, "at-gate", review.ChannelTUI)
	r := mustOK(t, res, err)
	if r["status"] != dispatchExecuteStep || r["step_id"] != "b" || r["reverted_to"] != "at-gate" {
		t.Fatalf("a reverted-to flag gate must be auto-approved: %v", r)
	}
	last := st.Records[len(st.Records)-1]
	if last.Type != state.RecordPolicy || last.StepID != "g" || last.EffectivePolicy != "flag" {
		t.Fatalf("policy record missing: %+v", st.Records)
	}
	if st.Status != state.StatusRunning || st.Gate != nil {
		t.Fatalf("status %s gate %+v", st.Status, st.Gate)
	}
}

func TestRevertPastEnd(t *testing.T) {
	sp, f := extSpec(t, ckptSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "a")
	st.StepOutputs = map[string]any{"a": map[string]any{"n": 1.0}, "b": map[string]any{"n": 2.0}, "c": nil}
	st.CurrentIdx = len(f.Order)
	st.Status = state.StatusComplete
	okFn(t)(commitCheckpoint(st, env, "done"))
	st.CurrentIdx = 0
	st.Status = state.StatusFailed

	r := okFn(t)(revertCheckpoint(st, env, "done", review.ChannelTUI))
	// The original answers the bare completion object (no reverted_to).
	if _, has := r["reverted_to"]; has {
		t.Fatalf("past-end revert has reverted_to: %v", r)
	}
	if r["status"] != string(state.StatusComplete) ||
		!reflect.DeepEqual(r["output"], map[string]any{"n": 2.0}) {
		t.Fatalf("past-end revert: %v", r)
	}
	if st.Status != state.StatusComplete {
		t.Fatalf("status %s", st.Status)
	}
}

func TestRevertErrors(t *testing.T) {
	sp, f := extSpec(t, ckptSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "a")
	before := stateBytes(st)

	res, err := revertCheckpoint(st, env, "nope", review.ChannelTUI)
	if err != nil || res.Wire()["status"] != "error" || res.Wire()["error_type"] != "checkpoint_not_found" || !res.Unchanged {
		t.Fatalf("unknown label: %v %v", res.Wire(), err)
	}
	if !reflect.DeepEqual(res.Wire()["available"], []string{}) {
		t.Fatalf("available %v", res.Wire()["available"])
	}
	okFn(t)(commitCheckpoint(st, env, "b1"))
	okFn(t)(commitCheckpoint(st, env, "a1"))
	before = stateBytes(st)
	res, _ = revertCheckpoint(st, env, "nope", review.ChannelTUI)
	if !reflect.DeepEqual(res.Wire()["available"], []string{"a1", "b1"}) {
		t.Fatalf("available %v", res.Wire()["available"])
	}
	// The original strips the label and looks it up: a blank label is
	// checkpoint_not_found, not invalid_label (that one is commit's).
	res, _ = revertCheckpoint(st, env, "  ", review.ChannelTUI)
	if res.Wire()["error_type"] != "checkpoint_not_found" || !res.Unchanged {
		t.Fatalf("blank label: %v", res.Wire())
	}
	if string(stateBytes(st)) != string(before) {
		t.Fatalf("refused revert changed the state")
	}
}
