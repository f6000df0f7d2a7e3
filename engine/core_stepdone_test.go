package engine

import (
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/state"
)

const specOrder = `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: a
        intent: "do a"
      - id: b
        intent: "do b"
        depends_on: [a]
      - id: c
        intent: "do c"
`

// §2.4: Kahn with a FIFO queue: [a, b(depends a), c] runs a, c, b.
func TestOrderingACB(t *testing.T) {
	f, r := plan(t, specOrder, "main", nil)
	var got []string
	for i := 0; i < 3; i++ {
		if r["status"] != "execute_step" {
			t.Fatalf("step %d: %s", i, show(r))
		}
		expect(t, r, map[string]any{"step_number": i + 1, "total_steps": 3, "step_mode": "inline"})
		id := r["step_id"].(string)
		got = append(got, id)
		r = f.stepDone(id, map[string]any{"who": id})
	}
	if strings.Join(got, ",") != "a,c,b" {
		t.Fatalf("order %v, want a,c,b", got)
	}
	// Completion: output of the last *ordered* step with non-null output (b).
	expect(t, r, map[string]any{"status": "complete", "flow_id": f.st.FlowID, "output": map[string]any{"who": "b"}})
	if traceTypes(r["trace"]) != "step:a step:c step:b" {
		t.Errorf("trace %s", traceTypes(r["trace"]))
	}
	if f.st.Status != state.StatusComplete {
		t.Errorf("status %q", f.st.Status)
	}
}

func TestDispatchShapes(t *testing.T) {
	src := `version: "0.2"
contracts:
  Out:
    ok: {type: boolean}
    n: {type: integer}
functions:
  work:
    mode: infer
    intent: "Do the work"
    input: {text: {type: string}}
    output: Out
    ensure: ["result.n > 2"]
flows:
  main:
    input: {text: {type: string}}
    steps:
      - id: w
        function: work
        inputs: {text: "$.input.text", lit: "plain"}
      - id: i
        intent: "inline work"
        agent: claude
        model: "gpt-4o"
        retries: 2
        output_contract: Out
`
	f, r := plan(t, src, "main", map[string]any{"text": "hello"})
	expect(t, r, map[string]any{
		"status": "execute_step", "flow_id": f.st.FlowID, "step_number": 1, "total_steps": 2, "step_id": "w",
		"step_mode": "function", "agent": nil, "inputs": map[string]any{"text": "hello", "lit": "plain"},
		"output_contract": "Out", "output_fields": map[string]any{"ok": "boolean", "n": "integer"},
		"ensure": []any{"result.n > 2"}, "retries_remaining": 3, "function": "work", "mode": "infer", "intent": "Do the work",
	})
	noKey(t, r, "model")
	r = f.stepDone("w", map[string]any{"ok": true, "n": 3})
	expect(t, r, map[string]any{
		"step_id": "i", "step_mode": "inline", "agent": "claude", "intent": "inline work", "model": "gpt-4o",
		"retries_remaining": 2, "output_contract": "Out", "ensure": []any{},
	})
	noKey(t, r, "function", "mode")
}

func TestRefResolution(t *testing.T) {
	st := &state.FlowState{
		Inputs: map[string]any{"x": "X", "obj": map[string]any{"deep": 1}},
		StepProgress: state.StepProgress{StepOutputs: map[string]any{
			"a":       map[string]any{"field": "F", "nested": map[string]any{"k": 2}, "zeta": 1},
			"skipped": nil,
			"scalar":  "text",
		}},
	}
	cases := []struct {
		ref     string
		want    any
		wantErr string
	}{
		{"$.input.x", "X", ""},
		{"$.input.obj.deep", map[string]any{"deep": 1}, ""}, // only the first segment is used
		{"$.input.missing", nil, "$.input.missing not found in flow inputs"},
		{"$.steps.a.output", map[string]any{"field": "F", "nested": map[string]any{"k": 2}, "zeta": 1}, ""},
		{"$.steps.a.output.field", "F", ""},
		{"$.steps.a.output.nested.k", 2, ""},
		{"$.steps.zz.output", nil, "$.steps.zz not yet executed — check depends_on ordering"},
		{"$.steps.a.result", nil, "Expected '$.steps.<id>.output[.<field>]', got '$.steps.a.result'"},
		{"$.steps.a", nil, "$.steps requires $.steps.<id>.output: '$.steps.a'"},
		{"$.input", nil, "$.input requires a field name: '$.input'"},
		{"$", nil, "Empty $ reference: '$'"},
		{"$.steps.a.output.nope", nil, "Key 'nope' not found in $.steps.a.output — available keys: ['field', 'nested', 'zeta']"},
		{"$.steps.scalar.output.k", nil, "Attribute 'k' not found on $.steps.scalar.output"},
		{"$.steps.skipped.output", nil, ""},
		{"$.steps.skipped.output.any.depth", nil, ""}, // null propagates
		{"$.other", nil, "Unknown $ prefix 'other' in '$.other'"},
	}
	for _, c := range cases {
		t.Run(c.ref, func(t *testing.T) {
			got, err := resolveRef(st, c.ref)
			if c.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if e, ok := err.(*Error); !ok || e.Type != ErrTypeExecution {
					t.Fatalf("error %T %v, want an execution_error *Error", err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if showV(got) != showV(c.want) {
				t.Fatalf("got %s, want %s", showV(got), showV(c.want))
			}
		})
	}
	// Literals pass through.
	if v, err := resolveValue(st, "just text"); err != nil || v != "just text" {
		t.Fatalf("literal: %v %v", v, err)
	}
}

// A reference that fails when a step is dispatched is an execution error of
// whichever transition advanced the flow.
func TestRefErrorAtDispatch(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: a
        intent: a
      - id: b
        intent: b
        inputs: {v: "$.steps.a.output.missing"}
`
	f, _ := plan(t, src, "main", nil)
	_, err := stepDone(f.st, f.env, "a", map[string]any{"present": 1})
	if err == nil || !strings.Contains(err.Error(), "Key 'missing' not found in $.steps.a.output — available keys: ['present']") {
		t.Fatalf("err = %v", err)
	}
	// A skipped step's null output propagates instead.
	f, _ = plan(t, src, "main", nil)
	r := f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return skipStep(st, env, "a", "not needed")
	})
	expect(t, r, map[string]any{"step_id": "b", "inputs": map[string]any{"v": nil}})
	if f.st.Records[0].Type != state.RecordSkip || f.st.Records[0].SkipReason != "not needed" {
		t.Errorf("records %+v", f.st.Records)
	}
}

const specChecks = `version: "0.2"
contracts:
  Out:
    ok: {type: boolean}
    n: {type: integer}
functions:
  work:
    mode: infer
    intent: "Do work"
    input: {}
    output: Out
    ensure: ["result.n > 2", "result.ok == True"]
    guardrails: ["secret", "pass(word)?"]
    retries: 4
flows:
  main:
    input: {}
    steps:
      - id: w
        function: work
        output_schema:
          type: object
          required: [ok]
      - id: last
        intent: "finish"
`

func TestStepDoneChecks(t *testing.T) {
	cases := []struct {
		name       string
		result     any
		status     string
		violations []string
	}{
		{"schema", map[string]any{"n": 5}, "schema_failed", []string{"output_schema violation: "}},
		{"guardrail", map[string]any{"ok": true, "n": 5, "note": "the SECRET and a Password"}, "guardrail_blocked",
			[]string{"guardrail matched: 'secret'", "guardrail matched: 'pass(word)?'"}},
		{"ensure", map[string]any{"ok": false, "n": 1}, "ensure_failed",
			[]string{"ensure 'result.n > 2' failed", "ensure 'result.ok == True' failed"}},
		{"ensure-one", map[string]any{"ok": true, "n": 1}, "ensure_failed", []string{"ensure 'result.n > 2' failed"}},
		{"ensure-raises", map[string]any{"ok": true, "n": "many"}, "ensure_failed", []string{"Ensure expression 'result.n > 2' raised: "}},
		// schema short-circuits the later stages
		{"schema-first", map[string]any{"n": 1, "note": "secret"}, "schema_failed", []string{"output_schema violation: "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _ := plan(t, specChecks, "main", nil)
			r := f.stepDone("w", c.result)
			expect(t, r, map[string]any{"status": c.status, "step_id": "w", "retries_remaining": 3, "function": "work"})
			vs := strs(r["violations"])
			if len(vs) != len(c.violations) {
				t.Fatalf("violations %q, want %q", vs, c.violations)
			}
			for i := range vs {
				if !strings.HasPrefix(vs[i], c.violations[i]) {
					t.Errorf("violation %d = %q, want prefix %q", i, vs[i], c.violations[i])
				}
			}
			if f.st.Attempts["w"] != 1 || len(f.st.Records) != 0 {
				t.Errorf("attempts %v records %v", f.st.Attempts, f.st.Records)
			}
			if _, ok := f.st.StepOutputs["w"]; ok {
				t.Errorf("failed attempt stored an output")
			}
		})
	}
	t.Run("success", func(t *testing.T) {
		f, _ := plan(t, specChecks, "main", nil)
		f.stepDone("w", map[string]any{"ok": true, "n": 1})
		f.later(1500 * 1e6)
		r := f.stepDone("w", map[string]any{"ok": true, "n": 3})
		expect(t, r, map[string]any{"status": "execute_step", "step_id": "last", "step_number": 2})
		rec := f.st.Records[0]
		if rec.Type != state.RecordStep || rec.Attempts != 2 || rec.FunctionName != "work" || rec.StepMode != "function" || rec.DurationMS != 1500 || rec.Agent != nil {
			t.Errorf("record %+v", rec)
		}
		if showV(f.st.StepOutputs["w"]) != `{"n":3,"ok":true}` {
			t.Errorf("output %s", showV(f.st.StepOutputs["w"]))
		}
	})
}

func TestStepDoneErrors(t *testing.T) {
	f, _ := plan(t, specChecks, "main", nil)
	r := f.stepDone("last", map[string]any{})
	expect(t, r, map[string]any{"status": "error", "success": false, "error_type": "execution_error", "message": "Expected step 'w', got 'last'"})
	if f.st.Attempts["w"] != 0 {
		t.Error("wrong step counted an attempt")
	}
	f.stepDone("w", map[string]any{"ok": true, "n": 3})
	r = f.stepDone("last", map[string]any{"done": true})
	expect(t, r, map[string]any{"status": "complete"})
	r = f.stepDone("last", map[string]any{})
	expect(t, r, map[string]any{"error_type": "execution_error", "message": "Flow is already complete"})
}

// §2.7: retries = total attempts; defaults function 3, inline 1.
func TestRetryCounting(t *testing.T) {
	src := `version: "0.2"
contracts:
  Out:
    n: {type: integer}
functions:
  work:
    mode: compute
    intent: "w"
    input: {}
    output: Out
    ensure: ["result.n > 2"]
flows:
  main:
    input: {}
    steps:
      - id: f
        function: work
      - id: i
        intent: "inline"
        agent: codex
        ensure: ["result.n > 2"]
`
	f, r := plan(t, src, "main", nil)
	expect(t, r, map[string]any{"retries_remaining": 3})
	for want := 2; want >= 1; want-- {
		r = f.stepDone("f", map[string]any{"n": 0})
		expect(t, r, map[string]any{"status": "ensure_failed", "retries_remaining": want})
	}
	r = f.stepDone("f", map[string]any{"n": 0})
	expect(t, r, map[string]any{
		"status": "error", "error_type": "retries_exhausted", "flow_id": f.st.FlowID, "step_id": "f",
		"step_mode": "function", "agent": nil, "violations": []any{"ensure 'result.n > 2' failed"},
		"message": "Step 'f' exhausted all retries",
	})
	noKey(t, r, "success")
	if f.st.Status != state.StatusFailed || f.st.Attempts["f"] != 3 {
		t.Fatalf("status %q attempts %v", f.st.Status, f.st.Attempts)
	}
	if f.st.Records[0].Attempts != 3 {
		t.Errorf("exhaustion record %+v", f.st.Records)
	}
	r = f.stepDone("f", map[string]any{"n": 5})
	expect(t, r, map[string]any{"error_type": "execution_error"})

	// inline default 1: a single failure exhausts.
	f, _ = plan(t, src, "main", nil)
	f.stepDone("f", map[string]any{"n": 3})
	r = f.stepDone("i", map[string]any{"n": 0})
	expect(t, r, map[string]any{"error_type": "retries_exhausted", "step_mode": "inline", "agent": "codex"})
}

const specReviewLoop = `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: write
        intent: "write"
      - id: review
        intent: "review"
        depends_on: [write]
        ensure: ["result.approved == True"]
        on_fail: fix
      - id: fix
        intent: "fix"
        inputs: {findings: "$.steps.review.output"}
        next: review
`

// §2.8: review on_fail → fix, fix next → review; the failed result is the
// step's output; next clears from the target onward; linear advance after a
// passing review reaches fix again (the original's gotcha).
func TestReviewFixLoop(t *testing.T) {
	f, _ := plan(t, specReviewLoop, "main", nil)
	r := f.stepDone("write", map[string]any{"text": "v1"})
	expect(t, r, map[string]any{"step_id": "review", "retries_remaining": 1})
	r = f.stepDone("review", map[string]any{"approved": false, "issues": []any{"typo"}})
	expect(t, r, map[string]any{
		"status": "execute_step", "step_id": "fix", "routed_from": "review",
		"violations": []any{"ensure 'result.approved == True' failed"},
		"inputs":     map[string]any{"findings": map[string]any{"approved": false, "issues": []any{"typo"}}},
	})
	if f.st.Attempts["review"] != 1 {
		t.Errorf("on_fail cleared the failed step's attempts: %v", f.st.Attempts)
	}
	r = f.stepDone("fix", map[string]any{"fixed": true})
	expect(t, r, map[string]any{"step_id": "review", "retries_remaining": 1})
	if _, ok := f.st.StepOutputs["review"]; ok {
		t.Error("next did not clear the target's output")
	}
	if _, ok := f.st.StepOutputs["fix"]; ok {
		t.Error("next did not clear the steps after the target")
	}
	r = f.stepDone("review", map[string]any{"approved": true})
	expect(t, r, map[string]any{"step_id": "fix"})
	if got := recordTypes(f.st.Records); got != "step:write step:review step:fix step:review" {
		t.Errorf("records %s", got)
	}
}

func TestOnFailForwardAndCascade(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: a
        intent: a
        ensure: ["result.ok == True"]
        on_fail: b
      - id: skipme
        intent: never
        depends_on: [a]
      - id: b
        intent: recover
        depends_on: [skipme]
        ensure: ["result.ok == True"]
        on_fail: c
      - id: c
        intent: last resort
        depends_on: [b]
`
	f, _ := plan(t, src, "main", nil)
	r := f.stepDone("a", map[string]any{"ok": false})
	expect(t, r, map[string]any{"step_id": "b", "routed_from": "a"})
	r = f.stepDone("b", map[string]any{"ok": false})
	expect(t, r, map[string]any{"step_id": "c", "routed_from": "b"})
	r = f.stepDone("c", map[string]any{"ok": true, "from": "c"})
	expect(t, r, map[string]any{"status": "complete", "output": map[string]any{"ok": true, "from": "c"}})
}

const specSkip = `version: "0.2"
flows:
  main:
    input: {mode: {type: string}}
    steps:
      - id: a
        intent: "A"
        skip_if: "$.input.mode == 'fast'"
        skip_reason: "fast mode"
      - id: b
        intent: "B"
        skip_if: "$.steps.a.output == None"
`

func TestSkipIf(t *testing.T) {
	// Both skipped at plan time → complete (README, "Deliberate differences"), not null.
	f, r := plan(t, specSkip, "main", map[string]any{"mode": "fast"})
	expect(t, r, map[string]any{"status": "complete", "output": nil, "flow_id": f.st.FlowID})
	if got := traceTypes(r["trace"]); got != "skip:a skip:b" {
		t.Fatalf("trace %s", got)
	}
	if f.st.Records[0].SkipReason != "fast mode" || f.st.Records[1].SkipReason != "skip_if: $.steps.a.output == None" {
		t.Errorf("reasons %+v", f.st.Records)
	}
	if f.st.Status != state.StatusComplete {
		t.Errorf("status %q", f.st.Status)
	}
	// Not skipped.
	f, r = plan(t, specSkip, "main", map[string]any{"mode": "slow"})
	expect(t, r, map[string]any{"step_id": "a"})
	r = f.stepDone("a", map[string]any{"x": 1})
	expect(t, r, map[string]any{"step_id": "b"})
}

// An expression error in skip_if means "don't skip".
func TestSkipIfErrorDoesNotSkip(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {n: {type: integer}}
    steps:
      - id: a
        intent: "A"
        skip_if: "len($.input.n) > 0"
`
	_, r := plan(t, src, "main", map[string]any{"n": 3})
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "a"})
}

func TestSkipStep(t *testing.T) {
	f, _ := plan(t, specOrder, "main", nil)
	r := f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return skipStep(st, env, "c", "x")
	})
	expect(t, r, map[string]any{"error_type": "execution_error", "message": "Expected step 'a', got 'c'"})
	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return skipStep(st, env, "a", "not needed")
	})
	expect(t, r, map[string]any{"step_id": "c"})
	if v, ok := f.st.StepOutputs["a"]; !ok || v != nil {
		t.Errorf("skipped output %v %v", v, ok)
	}
}
