package engine

// Conformance with the original server (upstream-behavior §2.10–§2.19) and
// the deliberate differences of README, "Deliberate differences from the original": gate validation order and
// texts, record shapes, policy records, iteration payloads, checkpoints,
// child flows, parallel_done, audit, the persisted field names.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// recordWire is a record as it is persisted and traced.
func recordWire(t *testing.T, r state.Record) map[string]any {
	t.Helper()
	return wire(t, Response{"r": r})["r"].(map[string]any)
}

// The original's record keys (dataclasses.asdict), plus ours: at (always
// set by the engine) and, on gate records, channel and reviewer when known.
var (
	keysStepRecord   = []string{"type", "step_id", "round", "round_start_step_id", "function_name", "attempts", "duration_ms", "agent", "step_mode", "child_flow_id", "at"}
	keysGateRecord   = []string{"type", "step_id", "round", "round_start_step_id", "outcome", "rationale", "resolved_by", "duration_ms", "at"}
	keysPolicyRecord = []string{"type", "step_id", "round", "round_start_step_id", "effective_policy", "resolved_outcome", "rationale", "at"}
)

const specConfGate = `version: "0.2"
functions:
  ask:
    mode: gate
    timeout: 30
flows:
  main:
    input: {}
    max_rounds: 1
    steps:
      - id: work
        intent: "work"
      - id: review
        function: ask
        depends_on: [work]
        on_approve: ~
        on_revise: work
        on_kill: ~
`

// §2.10: validation order (flow complete → not a gate → outcome →
// resolved_by → step id), the texts with sorted allowed values, and that a
// refused decision changes nothing.
func TestConformanceGateErrors(t *testing.T) {
	all := func(d *review.Decision) { d.Outcome = "nah"; d.ResolvedBy = "bot"; d.StepID = "zzz" }
	f, _ := plan(t, specConfGate, "main", nil)
	r := f.resolve("review", review.Approve, all)
	keysExactly(t, r, "status", "error_type", "message")
	expect(t, r, map[string]any{"error_type": "not_a_gate_step", "message": "Step 'work' is not a gate step"})

	f.stepDone("work", map[string]any{"v": 1})
	cases := []struct {
		mutate   func(*review.Decision)
		typ, msg string
	}{
		{all, "invalid_outcome", "outcome must be one of ['approve', 'kill', 'revise'], got 'nah'"},
		{func(d *review.Decision) { d.Outcome = "it's" }, "invalid_outcome", `outcome must be one of ['approve', 'kill', 'revise'], got "it's"`},
		{func(d *review.Decision) { d.ResolvedBy = "bot"; d.StepID = "zzz" }, "invalid_resolved_by",
			"resolved_by must be one of ['agent', 'human', 'system'], got 'bot'"},
		{func(d *review.Decision) { d.StepID = "zzz" }, "wrong_step", "Expected gate step 'review', got 'zzz'"},
	}
	for _, c := range cases {
		before := showV(f.st)
		r := f.resolve("review", review.Approve, c.mutate)
		keysExactly(t, r, "status", "error_type", "message")
		expect(t, r, map[string]any{"status": "error", "error_type": c.typ, "message": c.msg})
		if showV(f.st) != before {
			t.Errorf("%s: a refused decision changed the state", c.typ)
		}
	}

	// max_rounds: 1 allows exactly one revise; the second is refused with
	// the round, its GateRecord stays in the active trace and the gate stays.
	r = f.resolve("review", review.Revise)
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "work"})
	if len(f.st.Rounds) != 1 || recordTypesOf(f.st.Rounds[0]) != "step:work gate:review" || f.st.Round != 1 ||
		f.st.RoundStartStepID == nil || *f.st.RoundStartStepID != "work" || len(f.st.Records) != 0 {
		t.Fatalf("revise archive: rounds %v round %d start %v records %v", f.st.Rounds, f.st.Round, f.st.RoundStartStepID, f.st.Records)
	}
	f.stepDone("work", map[string]any{"v": 2})
	r = f.resolve("review", review.Revise)
	keysExactly(t, r, "status", "error_type", "message", "round")
	expect(t, r, map[string]any{"error_type": "max_rounds_exceeded", "message": "Maximum rounds (1) exceeded", "round": 1})
	if got := recordTypes(f.st.Records); got != "step:work gate:review" {
		t.Errorf("records after refused revise %s", got)
	}
	rec := recordWire(t, f.st.Records[1])
	keysExactly(t, rec, append(append([]string(nil), keysGateRecord...), "channel", "reviewer")...)
	expect(t, rec, map[string]any{"type": "gate", "outcome": "revise", "round": 1, "round_start_step_id": "work", "resolved_by": "human"})
	r = f.do(resumeFlow)
	expect(t, r, map[string]any{"status": "await_gate", "step_id": "review"})

	// kill with null on_kill: {status, flow_id, trace, total_duration_ms}.
	r = f.resolve("review", review.Kill)
	keysExactly(t, r, keysKilled...)
	expect(t, r, map[string]any{"status": "killed", "flow_id": f.st.FlowID})
	r = f.resolve("review", review.Approve)
	keysExactly(t, r, "status", "error_type", "message")
	expect(t, r, map[string]any{"error_type": "flow_already_complete", "message": "Flow is already complete"})
}

func recordTypesOf(rs []state.Record) string { return recordTypes(rs) }

// §2.10 timeouts: a timeout kill is {status:"killed", flow_id, reason,
// trace, total_duration_ms} with a GateRecord (rationale "timeout",
// resolved_by system); no_timeout carries message or remaining_seconds only.
// README, "Deliberate differences": the deadline is persisted (a resume or a reload does not reset
// the clock).
func TestConformanceTimeouts(t *testing.T) {
	f, _ := plan(t, specConfGate, "main", nil)
	r := f.do(checkTimeouts)
	keysExactly(t, r, "status", "message")
	f.stepDone("work", map[string]any{})
	f.later(20 * time.Second)
	f.do(resumeFlow) // would re-stamp the clock in the original
	r = f.do(checkTimeouts)
	keysExactly(t, r, "status", "remaining_seconds")
	expect(t, r, map[string]any{"status": "no_timeout", "remaining_seconds": 10})
	f.later(10 * time.Second)
	r = f.do(checkTimeouts)
	keysExactly(t, r, append(append([]string(nil), keysKilled...), "reason")...)
	expect(t, r, map[string]any{"status": "killed", "reason": "timeout"})
	g := recordWire(t, f.st.Records[len(f.st.Records)-1])
	expect(t, g, map[string]any{"type": "gate", "outcome": "kill", "rationale": "timeout", "resolved_by": "system", "duration_ms": 30000})
	// A check after the deadline fired reports the kill, not no_timeout
	// (ours: the original has no background sweep; see firedTimeout).
	f.later(time.Hour)
	again := f.do(checkTimeouts)
	keysExactly(t, again, append(append([]string(nil), keysKilled...), "reason")...)
	if show(again) != show(r) {
		t.Errorf("second check %s, want the first answer %s", show(again), show(r))
	}
}

// §2.11: flag/skip gates auto-approve with a PolicyRecord (never a
// GateRecord) of exactly the original's keys; a chain resolves in one call
// and an on_approve cycle is broken by the visited set (the gate is
// surfaced). README, "Deliberate differences": revert applies the policy loop.
func TestConformancePolicy(t *testing.T) {
	src := `version: "0.2"
functions:
  g:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: a
        intent: "a"
      - id: p
        function: g
        policy: flag
        depends_on: [a]
        on_approve: ~
        on_revise: a
        on_kill: ~
`
	f, _ := plan(t, src, "main", nil)
	f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return commitCheckpoint(st, env, "before")
	})
	r := f.stepDone("a", map[string]any{"x": 1})
	keysExactly(t, r, keysCompletion...)
	expect(t, r, map[string]any{"status": "complete", "output": map[string]any{"x": 1}})
	p := recordWire(t, f.st.Records[1])
	keysExactly(t, p, keysPolicyRecord...)
	expect(t, p, map[string]any{"type": "policy", "step_id": "p", "effective_policy": "flag", "resolved_outcome": "approve",
		"rationale": "policy: flag — auto-approved", "round": 0, "round_start_step_id": nil})

	// Revert to before a, do a again: the policy gate resolves itself.
	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return revertCheckpoint(st, env, "before", review.ChannelTUI)
	})
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "a", "reverted_to": "before"})
	f.stepDone("a", map[string]any{"x": 2})
	// Revert to a checkpoint taken *at* the policy gate: applied on revert.
	g, _ := plan(t, src, "main", nil)
	g.st.CurrentIdx = 1 // as if committed while the policy gate was current
	g.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return commitCheckpoint(st, env, "at-gate")
	})
	g.st.CurrentIdx = 0
	r = g.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return revertCheckpoint(st, env, "at-gate", review.ChannelTUI)
	})
	keysExactly(t, r, keysCompletion...) // past the end: no reverted_to, as the original
	expect(t, r, map[string]any{"status": "complete"})
	if recordTypes(g.st.Records) != "policy:p" {
		t.Errorf("records %s", recordTypes(g.st.Records))
	}
}

// §2.12: iteration payloads have exactly the original's keys (for a loop
// without score_expr/accumulate); three identical reports stagnate before
// max_iterations 3; an abort entry is {iteration, round, result:{aborted,
// reason}, exit_criterion_met:false, outcome:"exit_abort", timestamp}.
// README, "Deliberate differences": a non-accumulating step's output gets no accumulated keys.
func TestConformanceIterations(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: loop
        intent: "iterate"
        max_iterations: 3
      - id: next
        intent: "next"
        depends_on: [loop]
`
	f, _ := plan(t, src, "main", nil)
	start := func() map[string]any {
		return f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return iterationStart(st, env, "loop")
		})
	}
	report := func(v any) map[string]any {
		return f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return iterationReport(st, env, "loop", map[string]any{"v": v})
		})
	}
	r := start()
	keysExactly(t, r, "status", "flow_id", "step_id", "max_iterations", "exit_criterion", "iteration")
	expect(t, r, map[string]any{"status": "iteration_started", "exit_criterion": nil, "iteration": 0, "max_iterations": 3})
	keysContinue := []string{"status", "flow_id", "step_id", "iteration", "max_iterations", "exit_criterion_met", "outcome"}
	for i := 1; i <= 2; i++ {
		r = report("same")
		keysExactly(t, r, keysContinue...)
		expect(t, r, map[string]any{"status": "iteration_continue", "iteration": i, "outcome": "continue", "exit_criterion_met": false})
	}
	r = report("same")
	keysExactly(t, r, append(append([]string(nil), keysContinue...), "final_result")...)
	expect(t, r, map[string]any{"status": "iteration_exit", "outcome": "exit_stagnation", "final_result": map[string]any{"v": "same"}})
	r = start()
	expect(t, r, map[string]any{"error_type": "execution_error",
		"message": "Step 'loop' already has a pending iteration outcome ('exit_stagnation') — call stratum_step_done first"})

	// The outcome is consumed by step_done; the output has no accumulated keys.
	r = f.stepDone("loop", map[string]any{"v": "final"})
	expect(t, r, map[string]any{"step_id": "next"})
	if showV(f.st.StepOutputs["loop"]) != `{"v":"final"}` {
		t.Errorf("output leaks iteration state: %s", showV(f.st.StepOutputs["loop"]))
	}
	entry := wire(t, Response{"e": f.st.Iterations["loop"][0]})["e"].(map[string]any)
	keysExactly(t, entry, "iteration", "round", "result", "result_fingerprint", "exit_criterion_met", "outcome", "timestamp")

	// Abort.
	g, _ := plan(t, src, "main", nil)
	g.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return iterationStart(st, env, "loop")
	})
	g.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return iterationReport(st, env, "loop", map[string]any{"v": 1})
	})
	r = g.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return iterationAbort(st, env, "loop", "enough")
	})
	keysExactly(t, r, "status", "flow_id", "step_id", "iteration", "reason")
	expect(t, r, map[string]any{"status": "iteration_aborted", "iteration": 1, "reason": "enough"})
	ab := wire(t, Response{"e": g.st.Iterations["loop"][1]})["e"].(map[string]any)
	keysExactly(t, ab, "iteration", "round", "result", "exit_criterion_met", "outcome", "timestamp")
	expect(t, ab, map[string]any{"iteration": 1, "result": map[string]any{"aborted": true, "reason": "enough"},
		"exit_criterion_met": false, "outcome": "exit_abort"})
}

// §2.13: commit/revert payloads and texts.
func TestConformanceCheckpoints(t *testing.T) {
	f, _ := plan(t, specConfGate, "main", nil)
	commit := func(l string) map[string]any {
		return f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return commitCheckpoint(st, env, l)
		})
	}
	revert := func(l string) map[string]any {
		return f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return revertCheckpoint(st, env, l, review.ChannelTUI)
		})
	}
	r := commit("  start ")
	keysExactly(t, r, "status", "flow_id", "label", "step_number", "current_step_id", "checkpoints")
	expect(t, r, map[string]any{"status": "committed", "label": "start", "step_number": 1, "current_step_id": "work",
		"checkpoints": []any{"start"}})
	r = commit(" ")
	keysExactly(t, r, "status", "error_type", "message")
	expect(t, r, map[string]any{"error_type": "invalid_label", "message": "label must be a non-empty string"})
	for _, l := range []string{"nope", "  "} {
		r = revert(l)
		keysExactly(t, r, "status", "error_type", "message", "available")
		expect(t, r, map[string]any{"error_type": "checkpoint_not_found",
			"message": "No checkpoint '" + strings.TrimSpace(l) + "' on flow '" + f.st.FlowID + "'", "available": []any{"start"}})
	}
	f.stepDone("work", map[string]any{"v": 1})
	f.resolve("review", review.Approve)
	r = commit("end")
	expect(t, r, map[string]any{"step_number": 3, "current_step_id": nil})
	r = revert("start")
	keysExactly(t, r, append(append([]string(nil), keysInline...), "reverted_to")...)
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "work", "reverted_to": "start"})
	// Ours (issue 14): the decision the revert undid stays in the trace,
	// marked reverted; the original dropped it.
	if f.st.Status != state.StatusRunning || len(f.st.Records) != 1 || !f.st.Records[0].Reverted || f.st.Records[0].Type != state.RecordGate {
		t.Errorf("after revert: status %q records %v", f.st.Status, f.st.Records)
	}
}

// §2.14: a flow: step dispatches execute_flow with the child's own
// dispatch; the parent's StepRecord carries child_flow_id and step_mode
// "flow"; the child's audit is appended to child_audits[step].
func TestConformanceChildFlow(t *testing.T) {
	f, r := plan(t, specChild, "main", map[string]any{"x": "hi"})
	childID := r["child_flow_id"].(string)
	c := f.child(childID)
	cr := c.stepDone("c1", map[string]any{"done": true})
	f.save(c)
	keysExactly(t, cr, keysCompletion...)
	r = f.stepDone("sub", cr)
	expect(t, r, map[string]any{"step_id": "after", "inputs": map[string]any{"v": true}})
	rec := recordWire(t, f.st.Records[0])
	keysExactly(t, rec, keysStepRecord...)
	expect(t, rec, map[string]any{"type": "step", "step_mode": "flow", "child_flow_id": childID, "function_name": "", "attempts": 1})
	if len(f.st.ChildAudits["sub"]) != 1 {
		t.Fatalf("child_audits %v", f.st.ChildAudits)
	}
	var snap map[string]any
	if err := json.Unmarshal(f.st.ChildAudits["sub"][0], &snap); err != nil {
		t.Fatal(err)
	}
	expect(t, snap, map[string]any{"flow_id": childID, "flow_name": "child", "status": "complete", "steps_completed": 1})
}

// §2.15: parallel_done's refusals carry the original's error types and texts.
func TestConformanceParallelErrors(t *testing.T) {
	src := strings.Replace(specParallel, "REQ", "all", 1)
	f, _ := plan(t, src, "main", nil)
	pd := func(id string) map[string]any {
		return f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return parallelDone(st, env, id, nil, "clean")
		})
	}
	r := pd("run")
	keysExactly(t, r, "status", "error_type", "message")
	expect(t, r, map[string]any{"error_type": "step_mismatch", "message": "Expected step 'split', got 'run'"})
	f.stepDone("split", map[string]any{"tasks": []any{}})
	r = pd("run") // no tasks: require all is satisfied
	expect(t, r, map[string]any{"status": "complete"})
	out := r["output"].(map[string]any)
	keysExactly(t, out, "tasks", "merge_status", "completed", "failed", "outcome")
	r = pd("run")
	expect(t, r, map[string]any{"error_type": "flow_complete", "message": "Flow is already complete"})
}

// §2.17: the audit snapshot's keys (the original's — with its later
// cache_hits and budget_state — plus ours: created_at, updated_at,
// flow_status, and gate while one is pending), rounds always
// present, iteration results stripped; README, "Deliberate differences": a completed flow is kept
// and can be audited and resumed.
func TestConformanceAudit(t *testing.T) {
	f, _ := plan(t, specConfGate, "main", nil)
	keysAudit := []string{"flow_id", "flow_name", "status", "steps_completed", "total_steps", "trace", "round", "rounds",
		"iterations", "archived_iterations", "child_audits", "total_duration_ms", "created_at", "updated_at", "flow_status",
		"cache_hits", "budget_state"}
	a := wire(t, auditFlow(f.st, f.env))
	keysExactly(t, a, keysAudit...)
	expect(t, a, map[string]any{"cache_hits": 0, "budget_state": nil, "status": "in_progress", "steps_completed": 0, "total_steps": 2, "rounds": []any{},
		"iterations": map[string]any{}, "archived_iterations": []any{}, "child_audits": map[string]any{}, "round": 0})
	f.stepDone("work", map[string]any{})
	a = wire(t, auditFlow(f.st, f.env))
	keysExactly(t, a, append(append([]string(nil), keysAudit...), "gate")...)
	f.resolve("review", review.Revise)
	f.stepDone("work", map[string]any{})
	f.resolve("review", review.Approve)
	a = wire(t, auditFlow(f.st, f.env))
	expect(t, a, map[string]any{"status": "complete", "steps_completed": 2, "round": 1})
	rounds := a["rounds"].([]any)
	if len(rounds) != 1 {
		t.Fatalf("rounds %v", rounds)
	}
	keysExactly(t, rounds[0].(map[string]any), "round", "steps")
	expect(t, rounds[0].(map[string]any), map[string]any{"round": 0})
	// Kept after completion: resume answers the completion object again.
	r := f.do(resumeFlow)
	keysExactly(t, r, keysCompletion...)
	expect(t, r, map[string]any{"status": "complete"})
}

// §2.19: the persisted FlowState carries the original's field names (and
// the later iteration_accumulator) with the original's JSON kinds.
func TestConformancePersistedFieldNames(t *testing.T) {
	f, _ := plan(t, specConfGate, "main", nil)
	m := wire(t, Response{"s": f.st})["s"].(map[string]any)
	kinds := map[string]string{
		"flow_id": "string", "flow_name": "string", "raw_spec": "string", "inputs": "object", "step_outputs": "object",
		"records": "array", "attempts": "object", "current_idx": "number", "checkpoints": "object", "round": "number",
		"rounds": "array", "round_start_step_id": "null", "terminal_status": "null", "iterations": "object",
		"archived_iterations": "array", "active_iteration": "null", "iteration_outcome": "object",
		"iteration_best": "object", "parent_flow_id": "null", "parent_step_id": "null",
		"active_child_flow_id": "null", "child_audits": "object", "iteration_accumulator": "object",
	}
	for k, want := range kinds {
		v, ok := m[k]
		if !ok {
			t.Errorf("persisted state lacks %q", k)
			continue
		}
		if got := jsonKindOf(v); got != want {
			t.Errorf("%s is %s, want %s", k, got, want)
		}
	}
}

func jsonKindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

// README, "Deliberate differences" rows that concern the engine, one case each (the others are
// pinned above: revert applies the policy loop, no accumulated leak,
// completed flows kept, persisted gate deadlines).
func TestConformanceDeliberateDifferences(t *testing.T) {
	t.Run("all skipped completes", func(t *testing.T) {
		src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: a
        intent: "a"
        skip_if: "true"
      - id: b
        intent: "b"
        skip_if: "True"
`
		f, r := plan(t, src, "main", nil)
		keysExactly(t, r, keysCompletion...)
		expect(t, r, map[string]any{"status": "complete", "output": nil})
		if traceTypes(r["trace"]) != "skip:a skip:b" || f.st.Status != state.StatusComplete {
			t.Errorf("trace %s status %q", traceTypes(r["trace"]), f.st.Status)
		}
	})
	t.Run("kill with cleanup runs only the cleanup step", func(t *testing.T) {
		src := `version: "0.2"
functions:
  g:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: w
        intent: "w"
      - id: gate
        function: g
        depends_on: [w]
        on_approve: ~
        on_revise: w
        on_kill: cleanup
      - id: cleanup
        intent: "cleanup"
        depends_on: [gate]
      - id: more
        intent: "more"
        depends_on: [cleanup]
`
		f, _ := plan(t, src, "main", nil)
		f.stepDone("w", map[string]any{"w": 1})
		r := f.resolve("gate", review.Kill)
		expect(t, r, map[string]any{"status": "execute_step", "step_id": "cleanup"})
		a := wire(t, auditFlow(f.st, f.env))
		expect(t, a, map[string]any{"status": "killed", "flow_status": "running"})
		r = f.stepDone("cleanup", map[string]any{"c": 1})
		keysExactly(t, r, keysCompletion...)
		expect(t, r, map[string]any{"status": "killed", "output": map[string]any{"c": 1}})
		if _, ran := f.st.StepOutputs["more"]; ran || f.st.Status != state.StatusKilled {
			t.Errorf("more ran or status %q", f.st.Status)
		}
	})
	t.Run("output_schema on every step kind", func(t *testing.T) {
		src := `version: "0.3"
contracts:
  TaskGraph:
    tasks: {type: array}
flows:
  child:
    input: {}
    steps:
      - id: c
        intent: "c"
  main:
    input: {}
    steps:
      - id: inl
        intent: "inline"
        retries: 2
        output_schema: {type: object, required: [a]}
      - id: dec
        type: decompose
        agent: claude
        intent: "split"
        output_contract: TaskGraph
        output_schema: {type: object, required: [tasks]}
        depends_on: [inl]
      - id: sub
        flow: child
        output_schema: {type: object, required: [z]}
        depends_on: [dec]
`
		f, _ := plan(t, src, "main", nil)
		for _, c := range []struct {
			step   string
			bad    any
			good   any
			status string
		}{
			{"inl", map[string]any{}, map[string]any{"a": 1}, "schema_failed"},
			{"dec", map[string]any{"x": 1}, map[string]any{"tasks": []any{}}, "schema_failed"},
		} {
			r := f.stepDone(c.step, c.bad)
			expect(t, r, map[string]any{"status": c.status, "step_id": c.step})
			if vs := strs(r["violations"]); len(vs) != 1 || !strings.HasPrefix(vs[0], "output_schema violation: ") {
				t.Errorf("%s violations %q", c.step, vs)
			}
			f.stepDone(c.step, c.good)
		}
		// A flow step has one attempt: a schema failure exhausts it.
		r := f.stepDone("sub", map[string]any{"status": "complete", "output": map[string]any{"y": 1}})
		expect(t, r, map[string]any{"status": "error", "error_type": "retries_exhausted", "step_mode": "flow"})
		if vs := strs(r["violations"]); len(vs) != 1 || !strings.HasPrefix(vs[0], "output_schema violation: ") {
			t.Errorf("flow step violations %q", vs)
		}
	})
}

// §2.6 (c): the reasoning certificate of claude steps with a
// reasoning_template: the intent gets the original's instruction block, and
// after guardrails, before ensure, a missing section or an uncited
// conclusion fails the attempt as ensure_failed.
func TestConformanceReasoningCertificate(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: think
        intent: "Find the bug."
        retries: 5
        ensure: ["result.ok == True"]
        reasoning_template:
          require_citations: true
          sections:
            - {id: premises, label: Premises, description: "What you observed."}
            - {id: conclusion, label: Conclusion, description: "What follows."}
      - id: codex
        intent: "plain"
        agent: codex
        depends_on: [think]
        reasoning_template:
          sections:
            - {id: premises, label: Premises, description: "x"}
`
	f, r := plan(t, src, "main", nil)
	wantIntent := "Find the bug.\n\n---\n\nYou MUST structure your response with these sections:\n\n" +
		"## Premises\nWhat you observed.\nFormat each fact as: [P1] <fact, citing file:line>, [P2] ..., etc.\n\n" +
		"## Conclusion\nWhat follows.\nReference premises by their [P<n>] ID.\n"
	if r["intent"] != wantIntent {
		t.Fatalf("intent\n%q\nwant\n%q", r["intent"], wantIntent)
	}
	cases := []struct {
		artifact string
		ok       bool
		want     []string
	}{
		{"nothing", true, []string{"certificate missing section: Premises", "certificate missing section: Conclusion"}},
		{"## Premises\n[P1] x", false, []string{"certificate missing section: Conclusion"}}, // before ensure
		{"## Premises\n[P1] a\n## Conclusion\nso", true, []string{"certificate violation: conclusion contains no premise citations [P<n>]"}},
		{"## Premises\n[P1] a\n## Conclusion\nby [P1]", false, []string{"ensure 'result.ok == True' failed"}},
	}
	for _, c := range cases {
		r = f.stepDone("think", map[string]any{"artifact": c.artifact, "ok": c.ok})
		expect(t, r, map[string]any{"status": "ensure_failed", "violations": c.want})
	}
	g, _ := plan(t, src, "main", nil)
	r = g.stepDone("think", map[string]any{"artifact": "## Premises\n[P1] a\n## Conclusion\nby [P1]", "ok": true})
	expect(t, r, map[string]any{"step_id": "codex", "intent": "plain"}) // no block for a non-claude agent
	r = g.stepDone("codex", map[string]any{})
	expect(t, r, map[string]any{"status": "complete"})
}

// §2.6 / §2.12: a scored loop's best result replaces the submitted one on
// step_done, and the best is dropped on success (iteration_best.pop).
func TestConformanceBestResultSubstitution(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: loop
        intent: "iterate"
        max_iterations: 3
        score_expr: "result.s"
      - id: next
        intent: "next"
        depends_on: [loop]
`
	f, _ := plan(t, src, "main", nil)
	f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return iterationStart(st, env, "loop")
	})
	var r map[string]any
	for _, s := range []int{5, 9, 1} {
		r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return iterationReport(st, env, "loop", map[string]any{"s": s})
		})
	}
	expect(t, r, map[string]any{"outcome": "exit_max", "final_result": map[string]any{"s": 9}, "best_score": 9, "best_iteration": 2})
	f.stepDone("loop", map[string]any{"s": 0})
	if showV(f.st.StepOutputs["loop"]) != `{"s":9}` {
		t.Errorf("output %s, want the best result", showV(f.st.StepOutputs["loop"]))
	}
	if len(f.st.IterationBest) != 0 {
		t.Errorf("iteration_best kept after success: %s", showV(f.st.IterationBest))
	}
}

// §2.15: per-task certificates (task_reasoning_template, claude agents): a
// complete task whose result lacks a section counts as failed, and the
// failure's violations end with "task '<id>' cert: …".
func TestConformanceParallelTaskCertificate(t *testing.T) {
	src := strings.Replace(specParallel, "        require: REQ\n",
		"        require: all\n        task_reasoning_template:\n          sections:\n            - {id: plan, label: Plan, description: \"p\"}\n", 1)
	f, _ := plan(t, src, "main", nil)
	f.stepDone("split", map[string]any{"tasks": []any{map[string]any{"id": "t1"}, map[string]any{"id": "t2"}}})
	in := []any{
		map[string]any{"task_id": "t1", "status": "complete", "result": map[string]any{"artifact": "## Plan\nok"}},
		map[string]any{"task_id": "t2", "status": "complete", "result": map[string]any{"artifact": "none"}},
	}
	r := f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDone(st, env, "run", in, "clean")
	})
	expect(t, r, map[string]any{"status": "ensure_failed", "violations": []any{
		"require='all' not satisfied: 1 completed, 1 failed", "task 't2' cert: certificate missing section: Plan"}})
	if in[1].(map[string]any)["status"] != "complete" {
		t.Error("the caller's task map was modified")
	}
}

// §2.12: stagnation and prior_scores against the original's history rules:
// the history is the step's in this round, across loops, until a clear
// (on_fail/next pops it); a scored loop that has scored nothing does not
// stagnate.
func TestConformanceIterationHistory(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: loop
        intent: "iterate"
        max_iterations: 5
        ensure: ["result.ok == True"]
        retries: 3
      - id: back
        intent: "back"
        depends_on: [loop]
        next: loop
      - id: scored
        intent: "scored"
        max_iterations: 4
        score_expr: "result.s"
        depends_on: [back]
`
	f, _ := plan(t, src, "main", nil)
	start := func(id string) {
		f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return iterationStart(st, env, id)
		})
	}
	report := func(id string, v map[string]any) map[string]any {
		return f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return iterationReport(st, env, id, v)
		})
	}
	start("loop")
	report("loop", map[string]any{"v": 3})
	report("loop", map[string]any{"v": 3})
	r := report("loop", map[string]any{"v": 3})
	expect(t, r, map[string]any{"outcome": "exit_stagnation", "iteration": 3})
	// A failed step_done clears the outcome; the history stays, so a new loop
	// whose first report repeats the last two of the round stagnates at once.
	f.stepDone("loop", map[string]any{"ok": false})
	start("loop")
	r = report("loop", map[string]any{"v": 3})
	expect(t, r, map[string]any{"outcome": "exit_stagnation", "iteration": 1})
	f.stepDone("loop", map[string]any{"ok": true})
	// back → next: loop clears loop's history: three repeats of the old
	// value are needed again before stagnation.
	f.stepDone("back", map[string]any{})
	if _, kept := f.st.Iterations["loop"]; kept {
		t.Fatalf("history of a cleared step kept: %s", showV(f.st.Iterations["loop"]))
	}
	start("loop")
	r = report("loop", map[string]any{"v": 3})
	expect(t, r, map[string]any{"outcome": "continue"})

	// A scored loop whose score_expr never yields a number runs to exit_max.
	g, _ := plan(t, src, "main", nil)
	g.st.CurrentIdx = 2
	g.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return iterationStart(st, env, "scored")
	})
	for i := 1; i <= 4; i++ {
		r = g.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return iterationReport(st, env, "scored", map[string]any{"s": "not a number"})
		})
	}
	expect(t, r, map[string]any{"outcome": "exit_max", "iteration": 4})
}

// §2.12 accumulate: on success the deduplicated set is merged into the
// output (after the checks) and the accumulator is dropped, as the original.
func TestConformanceAccumulatorMergedAndDropped(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: hunt
        intent: "hunt"
        max_iterations: 3
        accumulate: "result.found"
        output_schema: {type: object, additionalProperties: false, properties: {ok: {type: boolean}}}
`
	f, _ := plan(t, src, "main", nil)
	f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return iterationStart(st, env, "hunt")
	})
	r := f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return iterationReport(st, env, "hunt", map[string]any{"found": []any{"a", "b", "a"}})
	})
	expect(t, r, map[string]any{"new_count": 2, "dry_streak": 0})
	// The schema forbids extra keys: the merge happens after validation.
	r = f.stepDone("hunt", map[string]any{"ok": true})
	expect(t, r, map[string]any{"status": "complete", "output": map[string]any{"ok": true, "accumulated": []any{"a", "b"}, "accumulated_count": 2}})
	if len(f.st.IterationAccumulator) != 0 {
		t.Errorf("accumulator kept after success: %s", showV(f.st.IterationAccumulator))
	}
}
