package engine

import (
	"encoding/json"
	"testing"

	"github.com/stratum-go/stratum/review"
)

const iterFlowSrc = `version: "0.2"
functions:
  review:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: hunt
        intent: "hunt"
        max_iterations: 5
        accumulate: "result.findings"
        accumulate_key: "item.id"
        exit_criterion: "dry_streak >= 1"
        ensure:
          - "result.ok == True"
        retries: 2
      - id: g
        function: review
        depends_on: [hunt]
        on_approve: ~
        on_revise: hunt
        on_kill: ~
`

// TestIterationThroughStepDone drives the iteration protocol together with
// the core transitions: a failed step_done clears the outcome so a new loop
// may start; a successful one consumes it and merges the accumulator; a gate
// revise archives the round's iterations, which the audit shows without
// results.
func TestIterationThroughStepDone(t *testing.T) {
	sp, f := extSpec(t, iterFlowSrc, "main")
	env := extEnv(sp, f)
	st, res, err := planFlow(env, "main", map[string]any{}, PlanOptions{})
	if err != nil || st == nil {
		t.Fatalf("plan: %v %v", res.Wire(), err)
	}
	env.Flow = f
	id := st.FlowID
	if res.Wire()["step_id"] != "hunt" {
		t.Fatalf("plan: %v", res.Wire())
	}
	ok := okFn(t)
	finding := func(id string) map[string]any { return map[string]any{"id": id} }

	ok(iterationStart(st, env, "hunt"))
	ok(iterationReport(st, env, "hunt", map[string]any{"findings": []any{finding("a")}}))
	r := ok(iterationReport(st, env, "hunt", map[string]any{"findings": []any{finding("a")}}))
	if r["outcome"] != outcomeExitSuccess {
		t.Fatalf("dry round must exit: %v", r)
	}

	// A failed attempt (ensure) clears the outcome and the accumulator.
	r = ok(stepDone(st, env, "hunt", map[string]any{"ok": false}))
	if r["status"] != "ensure_failed" {
		t.Fatalf("step_done: %v", r)
	}
	if _, pending := st.IterationOutcome["hunt"]; pending || st.IterationAccumulator["hunt"] != nil {
		t.Fatalf("failed attempt left iteration state: %v %v", st.IterationOutcome, st.IterationAccumulator)
	}

	// A new loop may start; its accumulator starts empty.
	ok(iterationStart(st, env, "hunt"))
	ok(iterationReport(st, env, "hunt", map[string]any{"findings": []any{finding("b"), finding("c")}}))
	r = ok(iterationReport(st, env, "hunt", map[string]any{"findings": []any{finding("c")}}))
	if r["outcome"] != outcomeExitSuccess || r["accumulated_count"] != 2 {
		t.Fatalf("second loop: %v", r)
	}

	r = ok(stepDone(st, env, "hunt", map[string]any{"ok": true}))
	if r["status"] != dispatchAwaitGate || r["step_id"] != "g" {
		t.Fatalf("after step_done: %v", r)
	}
	out, _ := st.StepOutputs["hunt"].(map[string]any)
	if out["accumulated_count"] != 2 || string(mustJSON(t, out["accumulated"])) != `[{"id":"b"},{"id":"c"}]` || out["ok"] != true {
		t.Fatalf("accumulated not merged: %v", st.StepOutputs["hunt"])
	}
	if _, pending := st.IterationOutcome["hunt"]; pending {
		t.Fatalf("outcome not consumed")
	}

	// Revise: the round's iterations move to archived_iterations.
	r = ok(gateResolve(st, env, review.Decision{FlowID: id, StepID: "g", Outcome: review.Revise,
		Rationale: "again", ResolvedBy: review.Human, Channel: review.ChannelCLI}))
	if r["step_id"] != "hunt" || st.Round != 1 {
		t.Fatalf("revise: %v (round %d)", r, st.Round)
	}
	if len(st.Iterations) != 0 || len(st.ArchivedIterations) != 1 || len(st.ArchivedIterations[0]["hunt"]) != 4 {
		t.Fatalf("iterations not archived: %v / %v", st.Iterations, st.ArchivedIterations)
	}

	// In the new round the history starts over: no stagnation carried over,
	// and the loop may start (the outcome was consumed).
	ok(iterationStart(st, env, "hunt"))
	r = ok(iterationReport(st, env, "hunt", map[string]any{"findings": []any{finding("z")}}))
	if r["outcome"] != outcomeContinue || r["iteration"] != 1 {
		t.Fatalf("new round: %v", r)
	}
	if e := st.Iterations["hunt"][0]; e.Round != 1 {
		t.Fatalf("entry round %d", e.Round)
	}

	a := auditFlow(st, env)
	b := mustJSON(t, a)
	var m struct {
		Status             string                        `json:"status"`
		Round              int                           `json:"round"`
		Rounds             []map[string]json.RawMessage  `json:"rounds"`
		Iterations         map[string][]map[string]any   `json:"iterations"`
		ArchivedIterations []map[string][]map[string]any `json:"archived_iterations"`
		Trace              []map[string]any              `json:"trace"`
		ChildAudits        map[string][]json.RawMessage  `json:"child_audits"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Status != "in_progress" || m.Round != 1 || len(m.Rounds) != 1 || string(m.Rounds[0]["round"]) != "0" {
		t.Fatalf("audit: %s", b)
	}
	for _, e := range m.ArchivedIterations[0]["hunt"] {
		if _, has := e["result"]; has {
			t.Fatalf("archived entry with result: %s", b)
		}
	}
	for _, e := range m.Iterations["hunt"] {
		if _, has := e["result"]; has {
			t.Fatalf("entry with result: %s", b)
		}
	}
	if st.Iterations["hunt"][0].Result == nil {
		t.Fatalf("audit stripped the state's results")
	}
	if len(m.Trace) != 0 {
		t.Fatalf("the new round's trace must start empty: %v", m.Trace)
	}
}
