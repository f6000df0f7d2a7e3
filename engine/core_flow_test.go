package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/state"
)

const specChild = `version: "0.2"
flows:
  child:
    input: {x: {type: string}}
    steps:
      - id: c1
        intent: "child work"
        inputs: {x: "$.input.x"}
  main:
    input: {x: {type: string}}
    steps:
      - id: sub
        flow: child
        inputs: {x: "$.input.x"}
        ensure: ["result.done == True"]
      - id: after
        intent: "after"
        inputs: {v: "$.steps.sub.output.done"}
`

func TestFlowStep(t *testing.T) {
	f, r := plan(t, specChild, "main", map[string]any{"x": "hi"})
	expect(t, r, map[string]any{
		"status": "execute_flow", "parent_flow_id": f.st.FlowID, "parent_step_id": "sub",
		"child_flow_name": "child", "step_number": 1, "total_steps": 2,
	})
	noKey(t, r, "flow_id")
	childID := r["child_flow_id"].(string)
	cs := r["child_step"].(map[string]any)
	expect(t, cs, map[string]any{"status": "execute_step", "flow_id": childID, "step_id": "c1", "inputs": map[string]any{"x": "hi"}})
	if f.st.ActiveChildFlowID == nil || *f.st.ActiveChildFlowID != childID {
		t.Fatalf("active child %v", f.st.ActiveChildFlowID)
	}
	// Re-dispatching is idempotent: same child.
	r = f.do(resumeFlow)
	if r["child_flow_id"] != childID {
		t.Fatalf("resume made a new child: %s", show(r))
	}
	// Drive the child to completion.
	c := f.child(childID)
	if *c.st.ParentFlowID != f.st.FlowID || *c.st.ParentStepID != "sub" {
		t.Fatalf("child parent pointers %v %v", c.st.ParentFlowID, c.st.ParentStepID)
	}
	done := c.stepDone("c1", map[string]any{"done": true})
	expect(t, done, map[string]any{"status": "complete", "output": map[string]any{"done": true}})
	f.save(c)
	// The parent step_done unwraps {status, output}.
	r = f.stepDone("sub", done)
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "after", "inputs": map[string]any{"v": true}})
	if len(f.st.ChildAudits["sub"]) != 1 {
		t.Fatalf("child audits %v", f.st.ChildAudits)
	}
	var audit map[string]any
	if err := json.Unmarshal(f.st.ChildAudits["sub"][0], &audit); err != nil {
		t.Fatal(err)
	}
	expect(t, audit, map[string]any{"flow_id": childID, "flow_name": "child", "status": "complete"})
	rec := f.st.Records[0]
	if rec.StepMode != "flow" || rec.ChildFlowID == nil || *rec.ChildFlowID != childID || rec.FunctionName != "" {
		t.Errorf("record %+v", rec)
	}
	if f.st.ActiveChildFlowID != nil {
		t.Error("child pointer kept after step_done")
	}
}

// A failed flow step (one attempt) exhausts; a raw output is accepted as-is.
func TestFlowStepFailure(t *testing.T) {
	f, _ := plan(t, specChild, "main", map[string]any{"x": "hi"})
	r := f.stepDone("sub", map[string]any{"done": false})
	expect(t, r, map[string]any{"error_type": "retries_exhausted", "step_mode": "flow"})
	if len(f.st.ChildAudits["sub"]) != 1 {
		t.Errorf("failure did not snapshot the child audit")
	}
}

// README, "Deliberate differences": a child flow whose first step is a policy gate gets the policy
// loop.
func TestChildPolicyLoop(t *testing.T) {
	src := `version: "0.2"
functions:
  g:
    mode: gate
flows:
  child:
    input: {}
    steps:
      - id: prep
        intent: "p"
        skip_if: "True"
      - id: auto
        function: g
        policy: skip
        depends_on: [prep]
        on_approve: work
        on_revise: prep
        on_kill: ~
      - id: work
        intent: "w"
        depends_on: [auto]
  main:
    input: {}
    steps:
      - id: sub
        flow: child
`
	_, r := plan(t, src, "main", nil)
	cs := r["child_step"].(map[string]any)
	expect(t, cs, map[string]any{"status": "execute_step", "step_id": "work"})
}

const specParallel = `version: "0.3"
contracts:
  TaskGraph:
    tasks: {type: array}
flows:
  main:
    input: {}
    steps:
      - id: split
        type: decompose
        agent: claude
        intent: "split the work"
        output_contract: TaskGraph
      - id: run
        type: parallel_dispatch
        agent: claude
        source: "$.steps.split.output.tasks"
        intent_template: "do {description}"
        require: REQ
        depends_on: [split]
`

func TestParallelDone(t *testing.T) {
	tasks := []any{map[string]any{"id": "t1", "description": "one"}, map[string]any{"id": "t2", "description": "two"}}
	results := func(statuses ...string) []any {
		var out []any
		for i, s := range statuses {
			out = append(out, map[string]any{"task_id": []string{"t1", "t2"}[i], "status": s, "result": map[string]any{}})
		}
		return out
	}
	cases := []struct {
		require string
		results []any
		merge   any
		status  string
		viol    string
	}{
		{"all", results("complete", "complete"), "clean", "complete", ""},
		{"all", results("complete", "failed"), "clean", "error", "require='all' not satisfied: 1 completed, 1 failed"},
		{"any", results("complete", "failed"), "clean", "complete", ""},
		{"any", results("failed", "failed"), "clean", "error", "require='any' not satisfied: 0 completed, 2 failed"},
		{"2", results("complete", "failed"), "clean", "error", "require='2' not satisfied: 1 completed, 1 failed"},
		{"all", results("complete", "complete"), "conflict", "error", "merge conflict: merge_status='conflict'"},
		{"all", results("complete", "failed"), "conflict", "error", "merge conflict: merge_status='conflict'"}, // conflict reported first
		{"all", results("complete", "complete"), map[string]any{"status": "clean", "bounced_tasks": []any{}}, "complete", ""},
	}
	for _, c := range cases {
		t.Run(c.require+"/"+showV(c.merge)+"/"+showV(c.results), func(t *testing.T) {
			src := strings.Replace(specParallel, "REQ", `"`+c.require+`"`, 1)
			f, r := plan(t, src, "main", nil)
			expect(t, r, map[string]any{"step_mode": "decompose", "retries_remaining": 2, "intent": "split the work"})
			r = f.stepDone("split", map[string]any{"tasks": tasks})
			expect(t, r, map[string]any{
				"status": "parallel_dispatch", "step_id": "run", "tasks": tasks, "max_concurrent": 3,
				"isolation": "worktree", "require": c.require, "merge": "sequential_apply",
				"intent_template": "do {description}", "retries_remaining": 2, "agent": "claude",
			})
			r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
				return parallelDone(st, env, "run", c.results, c.merge)
			})
			if c.status == "complete" {
				expect(t, r, map[string]any{"status": "complete"})
				out := r["output"].(map[string]any)
				if len(out["completed"].([]any)) != 2-countFailed(c.results) || len(out["failed"].([]any)) != countFailed(c.results) {
					t.Errorf("aggregate %s", showV(out))
				}
				expect(t, out, map[string]any{"outcome": "complete", "merge_status": "clean", "tasks": c.results})
				return
			}
			// First failure: retry with the violation; second: exhausted.
			expect(t, r, map[string]any{"status": "ensure_failed", "violations": []any{c.viol}, "retries_remaining": 1})
			r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
				return parallelDone(st, env, "run", c.results, c.merge)
			})
			expect(t, r, map[string]any{"status": "error", "error_type": "retries_exhausted", "violations": []any{c.viol}})
		})
	}
}

func countFailed(results []any) int {
	n := 0
	for _, r := range results {
		if r.(map[string]any)["status"] != "complete" {
			n++
		}
	}
	return n
}

func TestParallelDoneErrors(t *testing.T) {
	src := strings.Replace(specParallel, "REQ", "all", 1)
	f, _ := plan(t, src, "main", nil)
	r := f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDone(st, env, "run", nil, "clean")
	})
	expect(t, r, map[string]any{"status": "error", "error_type": "step_mismatch"})
	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDone(st, env, "split", nil, "clean")
	})
	expect(t, r, map[string]any{"status": "error", "error_type": "wrong_step_type",
		"message": "Step 'split' is a decompose step, not parallel_dispatch. Use stratum_step_done for non-parallel steps."})
}

func TestPlanInputs(t *testing.T) {
	src := `version: "0.2"
workflow:
  name: demo
  description: "demo workflow"
  input:
    topic: {type: string, required: true}
    depth: {type: integer, default: 2}
flows:
  main:
    input:
      topic: {type: string}
      depth: {type: integer}
    steps:
      - id: a
        intent: "A"
        inputs: {t: "$.input.topic", d: "$.input.depth"}
`
	sp := mustParse(t, src)
	env := transitionEnv{Spec: sp, Now: t0, NewID: func() string { return "id-1" }}
	for _, c := range []struct {
		name    string
		inputs  map[string]any
		problem string
		want    map[string]any
	}{
		{"default applied", map[string]any{"topic": "go"}, "", map[string]any{"t": "go", "d": 2}},
		{"missing required", map[string]any{}, "missing required input 'topic'", nil},
		{"wrong type", map[string]any{"topic": 3.0}, "input 'topic' must be string, got integer", nil},
		{"integer from JSON", map[string]any{"topic": "go", "depth": 4.0}, "", map[string]any{"t": "go", "d": 4}},
		{"not an integer", map[string]any{"topic": "go", "depth": 4.5}, "input 'depth' must be integer, got number", nil},
		{"extras accepted", map[string]any{"topic": "go", "extra": true}, "", map[string]any{"t": "go", "d": 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, res, err := planFlow(env, "main", c.inputs, PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := wire(t, res.Wire())
			if c.problem != "" {
				if st != nil {
					t.Fatal("refused plan returned a state")
				}
				expect(t, r, map[string]any{"status": "error", "error_type": "invalid_input"})
				if !strings.Contains(r["message"].(string), c.problem) {
					t.Errorf("message %q, want %q", r["message"], c.problem)
				}
				return
			}
			expect(t, r, map[string]any{"status": "execute_step", "flow_id": "id-1", "inputs": c.want})
		})
	}
	if _, _, err := planFlow(env, "nope", nil, PlanOptions{}); err == nil || err.Error() != "Flow 'nope' not found in spec" {
		t.Errorf("unknown flow: %v", err)
	}
}

// A flow input that a step reads and nobody gave is refused at plan
// (invalid_input), not left to fail the step that reads it.
func TestPlanMissingInput(t *testing.T) {
	sp := mustParse(t, `version: "0.2"
flows:
  main:
    input:
      topic: {type: string}
      unused: {type: string}
    steps:
      - id: a
        intent: "A"
        inputs: {t: "$.input.topic"}
`)
	env := transitionEnv{Spec: sp, Now: t0, NewID: func() string { return "id-1" }}
	st, res, err := planFlow(env, "main", map[string]any{}, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := wire(t, res.Wire())
	if st != nil {
		t.Fatal("refused plan returned a state")
	}
	expect(t, r, map[string]any{"status": "error", "error_type": "invalid_input"})
	if msg := r["message"].(string); !strings.Contains(msg, "missing input 'topic' (step 'a' reads $.input.topic)") || strings.Contains(msg, "unused") {
		t.Errorf("message %q", msg)
	}
	if st, _, _ := planFlow(env, "main", map[string]any{"topic": "go"}, PlanOptions{}); st == nil {
		t.Error("the input given: want a plan")
	}
}

func TestClearFrom(t *testing.T) {
	f, _ := plan(t, specOrder, "main", nil) // order a, c, b
	st := f.st
	for _, id := range []string{"a", "c", "b"} {
		st.StepOutputs[id] = id
		st.Attempts[id] = 1
		st.IterationOutcome[id] = "exit_success"
		st.IterationBest[id] = &state.IterationBest{Iteration: 1}
		st.IterationAccumulator[id] = &state.Accumulator{}
	}
	st.ActiveIteration = &state.ActiveIteration{StepID: "b"}
	st.Iterations["c"] = []state.IterationEntry{{Iteration: 1}}
	clearFrom(st, f.env, 1, "b")
	if _, ok := st.StepOutputs["a"]; !ok {
		t.Error("cleared before idx")
	}
	if _, ok := st.StepOutputs["c"]; ok || st.Attempts["c"] != 0 || st.IterationOutcome["c"] != "" || st.IterationBest["c"] != nil || st.IterationAccumulator["c"] != nil {
		t.Error("c not cleared")
	}
	if _, ok := st.StepOutputs["b"]; !ok || st.ActiveIteration == nil {
		t.Error("except step cleared")
	}
	// The original's _clear_from pops the cleared steps' iteration history.
	if _, ok := st.Iterations["c"]; ok {
		t.Error("iteration history of a cleared step kept")
	}
	if stepIndex(f.env, "b") != 2 || stepIndex(f.env, "zz") != -1 {
		t.Error("stepIndex")
	}
}

// A child the parent abandons (step_done before the child finished) ends
// killed; a failed child is not revived by re-dispatching the parent.
func TestChildAbandonedAndFailed(t *testing.T) {
	f, r := plan(t, specChild, "main", map[string]any{"x": "hi"})
	childID := r["child_flow_id"].(string)
	f.stepDone("sub", map[string]any{"done": true})
	c := f.child(childID)
	if c.st.Status != state.StatusKilled {
		t.Fatalf("abandoned child status %q", c.st.Status)
	}

	src := strings.Replace(specChild, `intent: "child work"`, `intent: "child work"
        ensure: ["result.ok == True"]`, 1)
	f, r = plan(t, src, "main", map[string]any{"x": "hi"})
	childID = r["child_flow_id"].(string)
	c = f.child(childID)
	done := c.stepDone("c1", map[string]any{"ok": false})
	expect(t, done, map[string]any{"error_type": "retries_exhausted"})
	f.save(c)
	r = f.do(resumeFlow)
	expect(t, r, map[string]any{"status": "execute_flow", "child_flow_id": childID})
	expect(t, r["child_step"].(map[string]any), map[string]any{"status": "failed", "flow_id": childID})
	if c2 := f.child(childID); c2.st.Status != state.StatusFailed {
		t.Fatalf("failed child revived: %q", c2.st.Status)
	}
}

// TestFlowOutputContract: the output of a flow about to complete is checked
// against its output: contract; one that does not fit ends the flow failed
// (output_contract_failed, with the violations), one that fits completes.
func TestFlowOutputContract(t *testing.T) {
	src := `version: "0.2"
contracts:
  Summary:
    summary: {type: string}
    files: {type: array}
flows:
  main:
    input: {}
    output: Summary
    steps:
      - id: a
        intent: "A"
`
	f, _ := plan(t, src, "main", nil)
	r := f.stepDone("a", map[string]any{"unrelated": 1})
	expect(t, r, map[string]any{"status": "error", "error_type": "output_contract_failed"})
	if vs, _ := r["violations"].([]any); len(vs) != 2 || !strings.Contains(vs[0].(string), "output contract 'Summary' violation: missing required property") {
		t.Fatalf("violations %v", r["violations"])
	}
	if f.st.Status != state.StatusFailed {
		t.Fatalf("status %s, want failed", f.st.Status)
	}
	g, _ := plan(t, src, "main", nil)
	r = g.stepDone("a", map[string]any{"summary": "s", "files": []any{}})
	expect(t, r, map[string]any{"status": "complete"})
}
