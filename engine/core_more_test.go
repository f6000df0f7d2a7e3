package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// README, "Deliberate differences": output_schema is enforced on every step kind, not only on
// function steps.
func TestOutputSchemaOnInlineStep(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: i
        intent: "inline"
        retries: 2
        output_schema:
          type: object
          required: [done]
          properties:
            done: {type: boolean}
`
	f, _ := plan(t, src, "main", nil)
	r := f.stepDone("i", map[string]any{"done": "yes"})
	expect(t, r, map[string]any{"status": "schema_failed", "retries_remaining": 1})
	if vs := strs(r["violations"]); len(vs) != 1 || !strings.HasPrefix(vs[0], "output_schema violation: ") {
		t.Errorf("violations %q", vs)
	}
	r = f.stepDone("i", map[string]any{"done": true})
	expect(t, r, map[string]any{"status": "complete", "output": map[string]any{"done": true}})
}

func TestResumeFinished(t *testing.T) {
	f, _ := plan(t, specOrder, "main", nil)
	for _, id := range []string{"a", "c", "b"} {
		f.stepDone(id, map[string]any{"id": id})
	}
	res, err := resumeFlow(f.st, f.env)
	if err != nil || !res.Unchanged {
		t.Fatalf("resume of a complete flow: %v unchanged=%v", err, res.Unchanged)
	}
	expect(t, wire(t, res.Wire()), map[string]any{"status": "complete", "flow_id": f.st.FlowID, "output": map[string]any{"id": "b"}})

	f, _ = plan(t, specReviewLoop, "main", nil)
	f.stepDone("write", map[string]any{})
	f.st.Status = state.StatusFailed
	r := f.do(resumeFlow)
	expect(t, r, map[string]any{"status": "failed", "flow_id": f.st.FlowID})

	// A resume that changes nothing is marked unchanged (no write).
	f, _ = plan(t, specOrder, "main", nil)
	res, _ = resumeFlow(f.st, f.env)
	if !res.Unchanged || res.Wire()["step_id"] != "a" {
		t.Fatalf("resume: %+v", res)
	}
}

// on_timeout revise that cannot happen (max_rounds reached) kills instead.
func TestOnTimeoutReviseAtMaxRounds(t *testing.T) {
	src := strings.Replace(specGate, "timeout: 60", "timeout: 60\n    on_timeout: revise", 1)
	src = strings.Replace(src, "max_rounds: 2", "max_rounds: 1", 1)
	f := atGate(t, src)
	f.later(61 * time.Second)
	r := f.do(checkTimeouts)
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "work"})
	f.stepDone("work", map[string]any{"v": 2})
	f.later(61 * time.Second)
	r = f.do(checkTimeouts)
	expect(t, r, map[string]any{"status": "killed", "reason": "timeout"})
}

// A gate revisited in the same round (approve jumping back) opens a fresh
// pending gate with a fresh deadline.
func TestGateReopenedGetsFreshDeadline(t *testing.T) {
	src := `version: "0.2"
functions:
  g:
    mode: gate
    timeout: 10
flows:
  main:
    input: {}
    steps:
      - id: work
        intent: "w"
      - id: review
        function: g
        depends_on: [work]
        on_approve: work
        on_revise: work
        on_kill: ~
`
	f := atGate(t, src)
	first := *f.st.Gate.Deadline
	f.later(5 * time.Second)
	f.resolve("review", review.Approve)
	f.later(5 * time.Second)
	r := f.stepDone("work", map[string]any{})
	expect(t, r, map[string]any{"status": "await_gate"})
	if !f.st.Gate.Deadline.After(first) {
		t.Fatalf("deadline %v not after %v", f.st.Gate.Deadline, first)
	}
}

func TestReviewIDFillsStepAndRound(t *testing.T) {
	f := atGate(t, specGate)
	r := f.resolve("", review.Approve, func(d *review.Decision) {
		d.ReviewID = review.ID(f.st.FlowID, "review", 1)
	})
	expect(t, r, map[string]any{"error_type": "stale_round"})
	r = f.resolve("", review.Approve, func(d *review.Decision) {
		d.ReviewID = review.ID(f.st.FlowID, "review", 0)
	})
	expect(t, r, map[string]any{"status": "complete"})
}

// BenchmarkStepDone measures one pure step_done transition (checks, record,
// advance, next dispatch with $-reference resolution), without I/O.
func BenchmarkStepDone(b *testing.B) {
	src := `version: "0.2"
contracts:
  Out:
    n: {type: integer}
functions:
  work:
    mode: infer
    intent: "w"
    input: {}
    output: Out
    ensure: ["result.n > 0"]
flows:
  main:
    input: {}
    steps:
      - id: a
        function: work
        output_schema: {type: object, required: [n]}
      - id: b
        intent: "b"
        inputs: {n: "$.steps.a.output.n"}
`
	sp, ds := specs.Parse("bench.stratum.yaml", []byte(src), exprlang.Compile)
	if sp == nil {
		b.Fatal(ds.Error())
	}
	env := transitionEnv{Spec: sp, Now: t0, NewID: func() string { return "bench" }}
	result := map[string]any{"n": 3}
	b.ReportAllocs()
	for b.Loop() {
		st, _, err := planFlow(env, "main", nil, PlanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		env.Flow = sp.Flows["main"]
		if _, err := stepDone(st, env, "a", result); err != nil {
			b.Fatal(err)
		}
	}
}

func TestJSONKind(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{nil, "null"}, {"s", "string"}, {true, "boolean"}, {3, "integer"}, {int64(3), "integer"},
		{3.0, "integer"}, {3.5, "number"}, {float32(1.5), "number"}, {json.Number("7"), "integer"},
		{json.Number("7.25"), "number"}, {[]any{}, "array"}, {map[string]any{}, "object"}, {struct{}{}, "struct {}"},
	} {
		if got := jsonKind(c.v); got != c.want {
			t.Errorf("jsonKind(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
}
