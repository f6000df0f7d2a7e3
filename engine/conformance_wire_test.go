package engine

// Conformance with the original server's wire contract (upstream-behavior
// §2.3–§2.9): exact key sets of every dispatch mode and payload, and the
// message texts agents and scripts match on. The expected values are taken
// from the original's source (stratum-mcp executor.py / server.py).

import (
	"sort"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs/py"
)

// keysExactly fails unless got has exactly the keys want.
func keysExactly(t *testing.T, got map[string]any, want ...string) {
	t.Helper()
	var have []string
	for k := range got {
		have = append(have, k)
	}
	sort.Strings(have)
	w := append([]string(nil), want...)
	sort.Strings(w)
	if strings.Join(have, ",") != strings.Join(w, ",") {
		t.Errorf("keys\n got  %v\n want %v\nin %s", have, w, show(got))
	}
}

// The original's dispatch keys per mode (§2.3).
var (
	keysExecuteCommon = []string{"status", "flow_id", "step_number", "total_steps", "step_id", "step_mode",
		"agent", "inputs", "output_contract", "output_fields", "ensure", "retries_remaining"}
	keysFunction  = append(append([]string(nil), keysExecuteCommon...), "function", "mode", "intent")
	keysInline    = append(append([]string(nil), keysExecuteCommon...), "intent", "model")
	keysDecompose = append(append([]string(nil), keysExecuteCommon...), "intent")
	keysParallel  = []string{"status", "flow_id", "step_number", "total_steps", "step_id", "step_mode", "tasks",
		"agent", "max_concurrent", "isolation", "require", "merge", "intent_template", "ensure", "retries_remaining"}
	// await_gate: the original's keys plus ours, deadline (the persisted
	// absolute deadline, null without a timeout) and approver (human|any).
	keysAwaitGate = []string{"status", "flow_id", "step_number", "total_steps", "step_id", "step_mode",
		"function", "agent", "on_approve", "on_revise", "on_kill", "timeout", "deadline", "approver"}
	// execute_flow has no top-level flow_id.
	keysExecuteFlow = []string{"status", "parent_flow_id", "parent_step_id", "child_flow_id", "child_flow_name",
		"child_step", "step_number", "total_steps"}
	keysCompletion = []string{"status", "flow_id", "output", "trace", "total_duration_ms"}
	keysKilled     = []string{"status", "flow_id", "trace", "total_duration_ms"}
	keysExhausted  = []string{"status", "error_type", "flow_id", "step_id", "step_mode", "agent", "message", "violations"}
)

const specAllModes = `version: "0.3"
contracts:
  Out:
    n: {type: integer}
  TaskGraph:
    tasks: {type: array}
functions:
  work:
    mode: infer
    intent: "Do the work"
    input: {}
    output: Out
  ask:
    mode: gate
flows:
  child:
    input: {}
    steps:
      - id: c1
        intent: "child work"
  main:
    input: {}
    steps:
      - id: fn
        function: work
      - id: inl
        intent: "inline"
        depends_on: [fn]
      - id: dec
        type: decompose
        agent: claude
        intent: "split"
        output_contract: TaskGraph
        depends_on: [inl]
      - id: par
        type: parallel_dispatch
        agent: claude
        source: "$.steps.dec.output.tasks"
        intent_template: "do {id}"
        depends_on: [dec]
      - id: sub
        flow: child
        depends_on: [par]
      - id: gate
        function: ask
        depends_on: [sub]
        on_approve: ~
        on_revise: fn
        on_kill: ~
`

// §2.3 and §2.7: every dispatch mode has exactly the original's keys, and
// the default retries (function 3, inline 1, decompose and parallel 2,
// flow 1).
func TestConformanceDispatchKeySets(t *testing.T) {
	f, r := plan(t, specAllModes, "main", nil)
	tasks := []any{map[string]any{"id": "t1"}}

	keysExactly(t, r, keysFunction...)
	expect(t, r, map[string]any{"status": "execute_step", "step_mode": "function", "mode": "infer", "retries_remaining": 3,
		"intent": "Do the work", "function": "work", "output_contract": "Out", "output_fields": map[string]any{"n": "integer"}})

	r = f.stepDone("fn", map[string]any{"n": 1})
	keysExactly(t, r, keysInline...)
	expect(t, r, map[string]any{"step_mode": "inline", "retries_remaining": 1, "model": nil, "agent": nil,
		"output_contract": nil, "output_fields": map[string]any{}, "ensure": []any{}})

	r = f.stepDone("inl", map[string]any{})
	keysExactly(t, r, keysDecompose...)
	expect(t, r, map[string]any{"step_mode": "decompose", "retries_remaining": 2, "agent": "claude"})

	r = f.stepDone("dec", map[string]any{"tasks": tasks})
	keysExactly(t, r, keysParallel...)
	expect(t, r, map[string]any{"status": "parallel_dispatch", "step_mode": "parallel_dispatch", "retries_remaining": 2,
		"tasks": tasks, "max_concurrent": 3, "isolation": "worktree", "require": "all", "merge": "sequential_apply"})

	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDone(st, env, "par", []any{map[string]any{"task_id": "t1", "status": "complete", "result": map[string]any{}}}, "clean")
	})
	keysExactly(t, r, keysExecuteFlow...)
	expect(t, r, map[string]any{"status": "execute_flow", "parent_flow_id": f.st.FlowID, "parent_step_id": "sub",
		"child_flow_name": "child", "step_number": 5, "total_steps": 6})
	child := r["child_step"].(map[string]any)
	keysExactly(t, child, keysInline...)
	expect(t, child, map[string]any{"flow_id": r["child_flow_id"], "step_id": "c1", "total_steps": 1})

	// A flow step has one attempt (not configurable).
	if got := maxRetries(f.env.Flow.Step("sub")); got != 1 {
		t.Errorf("flow step retries = %d, want 1", got)
	}

	r = f.stepDone("sub", map[string]any{"status": "complete", "output": map[string]any{"child": true}})
	keysExactly(t, r, keysAwaitGate...)
	expect(t, r, map[string]any{"status": "await_gate", "step_mode": "function", "function": "ask", "on_approve": nil,
		"on_revise": "fn", "on_kill": nil, "timeout": nil, "deadline": nil, "approver": "any", "step_number": 6})

	r = f.resolve("gate", "approve")
	keysExactly(t, r, keysCompletion...)
	// The output of the last ordered step with a non-null output (the gate
	// writes none): the child's unwrapped output.
	expect(t, r, map[string]any{"status": "complete", "output": map[string]any{"child": true}})
}

const specFailures = `version: "0.2"
functions:
  work:
    mode: infer
    intent: "work"
    input: {}
    output: Any
    ensure: ["result.n > 2"]
    retries: 2
contracts:
  Any:
    n: {type: integer}
flows:
  main:
    input: {}
    steps:
      - id: w
        function: work
        agent: codex
      - id: r
        intent: "routed"
        retries: 1
        ensure: ["result.ok == True"]
        on_fail: fix
        depends_on: [w]
      - id: fix
        intent: "fix"
        depends_on: [r]
`

// §2.3 / §2.6: a failed attempt is the same step's dispatch with the status
// overwritten and violations added; on_fail adds routed_from and violations
// to the recovery step's dispatch; retries_exhausted is a hand-built error
// (no success key) with flow_id, step_id, step_mode, agent, violations.
func TestConformanceFailureShapes(t *testing.T) {
	f, first := plan(t, specFailures, "main", nil)
	r := f.stepDone("w", map[string]any{"n": 1})
	keysExactly(t, r, append(append([]string(nil), keysFunction...), "violations")...)
	expect(t, r, map[string]any{"status": "ensure_failed", "step_id": "w", "retries_remaining": 1,
		"violations": []any{"ensure 'result.n > 2' failed"}, "step_number": first["step_number"]})

	r = f.stepDone("w", map[string]any{"n": 1})
	keysExactly(t, r, keysExhausted...)
	expect(t, r, map[string]any{"status": "error", "error_type": "retries_exhausted", "flow_id": f.st.FlowID,
		"step_id": "w", "step_mode": "function", "agent": "codex", "message": "Step 'w' exhausted all retries",
		"violations": []any{"ensure 'result.n > 2' failed"}})
	// The exhausted attempt is recorded.
	if recordTypes(f.st.Records) != "step:w" || f.st.Records[0].Attempts != 2 {
		t.Errorf("records %s %+v", recordTypes(f.st.Records), f.st.Records)
	}

	g, _ := plan(t, specFailures, "main", nil)
	g.stepDone("w", map[string]any{"n": 3})
	r = g.stepDone("r", map[string]any{"ok": false})
	keysExactly(t, r, append(append([]string(nil), keysInline...), "routed_from", "violations")...)
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "fix", "routed_from": "r",
		"violations": []any{"ensure 'result.ok == True' failed"}})
	// The failed result is the failed step's output, readable by the recovery step.
	if showV(g.st.StepOutputs["r"]) != `{"ok":false}` {
		t.Errorf("failed output %s", showV(g.st.StepOutputs["r"]))
	}
}

// §2.4: Kahn's algorithm with a FIFO ready queue over depends_on and
// implicit $.steps edges; step_number is the 1-based position in that order.
func TestConformanceOrdering(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: x
        intent: "x"
        inputs: {v: "$.steps.z.output"}
      - id: y
        intent: "y"
      - id: z
        intent: "z"
      - id: w
        intent: "w"
        depends_on: [y]
`
	f, r := plan(t, src, "main", nil)
	var got []string
	for r["status"] == "execute_step" {
		got = append(got, r["step_id"].(string))
		expect(t, r, map[string]any{"step_number": len(got), "total_steps": 4})
		r = f.stepDone(r["step_id"].(string), map[string]any{"id": r["step_id"]})
	}
	// ready [y, z] → y frees w (queued after z) → z frees x → w → x.
	if strings.Join(got, ",") != "y,z,w,x" {
		t.Fatalf("order %v, want y,z,w,x", got)
	}
}

// §2.5: $-reference errors carry the original's texts, refs quoted with
// Python's repr.
func TestConformanceRefMessages(t *testing.T) {
	st := &state.FlowState{Inputs: map[string]any{}, StepProgress: state.StepProgress{StepOutputs: map[string]any{"a": map[string]any{"b": 1, "a": 2}}}}
	cases := []struct{ ref, want string }{
		{"$.input.q", "$.input.q not found in flow inputs"},
		{"$.steps.nope.output", "$.steps.nope not yet executed — check depends_on ordering"},
		{"$.steps.a.outputs", "Expected '$.steps.<id>.output[.<field>]', got '$.steps.a.outputs'"},
		{"$.steps.a.output.c", "Key 'c' not found in $.steps.a.output — available keys: ['a', 'b']"},
		{"$.steps.a.output.b.c", "Attribute 'c' not found on $.steps.a.output"},
		{"$.steps", "$.steps requires $.steps.<id>.output: '$.steps'"},
		{"$.", "Empty $ reference: '$.'"},
		{"$.it's", `Unknown $ prefix 'it's' in "$.it's"`},
		{`$.a\b`, `Unknown $ prefix 'a\b' in '$.a\\b'`},
		{"$x.y", "Unknown $ prefix '' in '$x.y'"}, // the original strips exactly "$."
	}
	for _, c := range cases {
		_, err := resolveRef(st, c.ref)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err = %v\n want %s", c.ref, err, c.want)
		}
	}
}

// pyStr is Python's repr() of a str.
func TestConformancePyRepr(t *testing.T) {
	cases := map[string]string{
		"abc":        `'abc'`,
		"it's":       `"it's"`,
		`say "hi"`:   `'say "hi"'`,
		`both ' "`:   `'both \' "'`,
		`\d{3}`:      `'\\d{3}'`,
		"a\tb\nc\rd": `'a\tb\nc\rd'`,
		"\x00\x7f":   `'\x00\x7f'`,
		"héllo ✓":    `'héllo ✓'`,
		"\u00a0":     `'\xa0'`,
		"\u200b":     `'\u200b'`,
	}
	for in, want := range cases {
		if got := py.ReprString(in); got != want {
			t.Errorf("py.ReprString(%q) = %s, want %s", in, got, want)
		}
	}
	if got := py.ReprStrings([]string{"a", "it's"}); got != `['a', "it's"]` {
		t.Errorf("pyStrList = %s", got)
	}
}

const specTexts = `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: s
        intent: "work"
        retries: 3
        guardrails: ['\d{3}-\d{4}', "it's"]
        ensure: ["result.kind == 'ok'", "len(result.n) > 0"]
      - id: g
        function: ask
        depends_on: [s]
        on_approve: ~
        on_revise: s
        on_kill: ~
functions:
  ask:
    mode: gate
`

// §2.6: the violation texts, exactly: guardrail patterns and raising ensure
// expressions are quoted with Python's repr, failed ensures with plain
// single quotes; the routing errors of step_done.
func TestConformanceStepDoneTexts(t *testing.T) {
	cases := []struct {
		name   string
		result map[string]any
		status string
		want   []string // exact, or a prefix when ending in "…"
	}{
		{"guardrail repr", map[string]any{"phone": "555-1234", "note": "IT'S"}, "guardrail_blocked",
			[]string{`guardrail matched: '\\d{3}-\\d{4}'`, `guardrail matched: "it's"`}},
		{"ensure failed plain quotes", map[string]any{"kind": "no", "n": []any{1}}, "ensure_failed",
			[]string{"ensure 'result.kind == 'ok'' failed"}},
		{"ensure raised repr", map[string]any{"kind": "ok", "n": 5}, "ensure_failed",
			[]string{`Ensure expression 'len(result.n) > 0' raised: …`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _ := plan(t, specTexts, "main", nil)
			r := f.stepDone("s", c.result)
			expect(t, r, map[string]any{"status": c.status, "retries_remaining": 2})
			vs := strs(r["violations"])
			if len(vs) != len(c.want) {
				t.Fatalf("violations %q, want %q", vs, c.want)
			}
			for i, w := range c.want {
				if p, ok := strings.CutSuffix(w, "…"); ok {
					if !strings.HasPrefix(vs[i], p) || len(vs[i]) == len(p) {
						t.Errorf("violation %q, want prefix %q and a reason", vs[i], p)
					}
				} else if vs[i] != w {
					t.Errorf("violation %q, want %q", vs[i], w)
				}
			}
		})
	}

	f, _ := plan(t, specTexts, "main", nil)
	r := f.stepDone("g", map[string]any{})
	keysExactly(t, r, "status", "success", "error_type", "message")
	expect(t, r, map[string]any{"success": false, "error_type": "execution_error", "message": "Expected step 's', got 'g'"})
	r = f.stepDone("s", map[string]any{"kind": "ok", "n": []any{1}})
	expect(t, r, map[string]any{"status": "await_gate"})
	// At a gate, step_done is refused before the step id is looked at.
	for _, id := range []string{"g", "s"} {
		r = f.stepDone(id, map[string]any{})
		keysExactly(t, r, "status", "error_type", "message")
		expect(t, r, map[string]any{"error_type": "gate_step_requires_gate_resolve",
			"message": "Step 'g' is a gate step. Use stratum_gate_resolve to resolve it."})
	}
	f.resolve("g", "approve")
	r = f.stepDone("s", map[string]any{})
	expect(t, r, map[string]any{"error_type": "execution_error", "message": "Flow is already complete"})
}

// §2.9: skip_if writes a SkipRecord with exactly the original's keys (reason
// = skip_reason or "skip_if: <expr>"), the output is null and a null output
// propagates into later references; stratum_skip_step refuses another step
// and gates with the original's texts.
func TestConformanceSkip(t *testing.T) {
	src := `version: "0.2"
functions:
  ask:
    mode: gate
flows:
  main:
    input: {fast: {type: boolean}}
    steps:
      - id: a
        intent: "a"
        skip_if: "$.input.fast == true"
      - id: b
        intent: "b"
        inputs: {v: "$.steps.a.output.deep.path"}
      - id: g
        function: ask
        depends_on: [b]
        on_approve: ~
        on_revise: a
        on_kill: ~
`
	f, r := plan(t, src, "main", map[string]any{"fast": true})
	expect(t, r, map[string]any{"step_id": "b", "inputs": map[string]any{"v": nil}})
	keysExactly(t, wire(t, Response{"r": f.st.Records[0]})["r"].(map[string]any),
		"type", "step_id", "round", "round_start_step_id", "skip_reason", "at")
	expect(t, wire(t, Response{"r": f.st.Records[0]})["r"].(map[string]any), map[string]any{
		"type": "skip", "step_id": "a", "round": 0, "round_start_step_id": nil, "skip_reason": "skip_if: $.input.fast == true"})
	if v, ok := f.st.StepOutputs["a"]; !ok || v != nil {
		t.Errorf("skipped output %v %v", v, ok)
	}

	skip := func(id, reason string) map[string]any {
		return f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return skipStep(st, env, id, reason)
		})
	}
	r = skip("a", "x")
	expect(t, r, map[string]any{"success": false, "error_type": "execution_error", "message": "Expected step 'b', got 'a'"})
	r = skip("b", "not needed")
	expect(t, r, map[string]any{"status": "await_gate", "step_id": "g"})
	if f.st.Records[1].SkipReason != "not needed" {
		t.Errorf("explicit skip reason %q", f.st.Records[1].SkipReason)
	}
	r = skip("g", "x")
	expect(t, r, map[string]any{"error_type": "execution_error",
		"message": "Step 'g' is a gate step — use stratum_gate_resolve to resolve it"})
	f.resolve("g", "approve")
	r = skip("g", "x")
	expect(t, r, map[string]any{"error_type": "execution_error", "message": "Flow is already complete"})
}

// §2.4: a cycle (which validation rejects up front, README, "Deliberate differences") is refused at
// plan time with the original's text listing the unordered steps in
// declaration order; an unknown flow likewise.
func TestConformancePlanErrors(t *testing.T) {
	sp := mustParse(t, specOrder)
	sp.Flows["main"].Order = sp.Flows["main"].Order[:1] // as if b and c were on a cycle
	env := transitionEnv{Spec: sp, Now: t0, NewID: func() string { return "id" }}
	_, _, err := planFlow(env, "main", nil, PlanOptions{})
	if err == nil || err.Error() != "Cycle detected in step dependencies: ['b', 'c']" {
		t.Fatalf("cycle: %v", err)
	}
	_, _, err = planFlow(env, "nope", nil, PlanOptions{})
	if err == nil || err.Error() != "Flow 'nope' not found in spec" {
		t.Fatalf("unknown flow: %v", err)
	}
}

// §2.6 (b): guardrails scan json.dumps(result, sort_keys=True): Python's
// default separators ", " and ": ", keys sorted, non-ASCII escaped.
func TestConformanceGuardrailText(t *testing.T) {
	got, err := guardrailText(map[string]any{"b": []any{"x", true, nil, 2.0, 2.5}, "a": map[string]any{"z": "é", "y": 1}})
	if err != nil {
		t.Fatal(err)
	}
	// 2.0 is how a decoded JSON 2 arrives; the original saw the int 2.
	want := `{"a": {"y": 1, "z": "\u00e9"}, "b": ["x", true, null, 2, 2.5]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: s
        intent: "s"
        retries: 2
        guardrails: ['"token": "', 'é']
`
	f, _ := plan(t, src, "main", nil)
	r := f.stepDone("s", map[string]any{"token": "abc", "name": "José"})
	expect(t, r, map[string]any{"status": "guardrail_blocked", "violations": []any{`guardrail matched: '"token": "'`}})
}
