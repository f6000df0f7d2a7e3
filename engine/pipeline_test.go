package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/state"
)

const specPipeline = `version: "0.3"
flows:
  main:
    input: {files: {type: array}}
    steps:
      - id: pipe
        type: pipeline
        source: "$.input.files"
        require: REQ
        isolation: none
        stages:
          - {agent: claude, intent_template: "clean {item}"}
          - {agent: codex, intent_template: "verify {prev}"}
`

// A pipeline step's dispatch lists its task graph (a task per item and
// stage, each stage after the same item's previous one) and its stages,
// with step_mode parallel_dispatch, as the original's.
func TestPipelineDispatch(t *testing.T) {
	f, r := plan(t, replaceReq(specPipeline, "all"), "main", map[string]any{"files": []any{"a.py", "b.py"}})
	expect(t, r, map[string]any{"status": "parallel_dispatch", "step_mode": "parallel_dispatch", "pipeline": true,
		"intent_template": nil, "isolation": "none", "require": "all"})
	tasks := r["tasks"].([]any)
	if len(tasks) != 4 {
		t.Fatalf("%d tasks, want 4: %s", len(tasks), showV(tasks))
	}
	expect(t, tasks[1].(map[string]any), map[string]any{"id": "pipe::item0::stage1", "depends_on": []any{"pipe::item0::stage0"},
		"item": "a.py", "_pipeline_item": 0, "_pipeline_stage": 1, "_pipeline_role": "plain",
		"_intent_template": "verify {prev}", "_agent": "codex"})
	expect(t, tasks[2].(map[string]any), map[string]any{"id": "pipe::item1::stage0", "depends_on": []any{}, "item": "b.py"})
	expect(t, r["stages"].([]any)[1].(map[string]any), map[string]any{"agent": "codex", "intent_template": "verify {prev}"})
	_ = f.stepDone // the flow waits at the pipeline step
}

func replaceReq(src, req string) string {
	return strings.Replace(src, "REQ", req, 1)
}

// The require of a pipeline counts items whose chain completed: one
// failed stage fails its item only; a stage skipped is not a failure;
// an item with a stage not reported is incomplete (no require bypass).
func TestPipelineDone(t *testing.T) {
	res := func(pairs ...string) []any {
		var out []any
		for i := 0; i+1 < len(pairs); i += 2 {
			out = append(out, map[string]any{"task_id": pairs[i], "status": pairs[i+1], "result": pairs[i] + "!"})
		}
		return out
	}
	all := res("pipe::item0::stage0", "complete", "pipe::item0::stage1", "complete", "pipe::item1::stage0", "complete", "pipe::item1::stage1", "skipped")
	oneFailed := res("pipe::item0::stage0", "complete", "pipe::item0::stage1", "complete", "pipe::item1::stage0", "failed", "pipe::item1::stage1", "failed")
	missing := res("pipe::item0::stage0", "complete", "pipe::item0::stage1", "complete", "pipe::item1::stage0", "complete")
	for _, c := range []struct {
		name, require string
		results       []any
		status, viol  string
	}{
		{"all", "all", all, "complete", ""},
		{"all-one-failed", "all", oneFailed, "ensure_failed", "require='all' not satisfied: 2 completed, 2 failed"},
		{"any-one-failed", "any", oneFailed, "complete", ""},
		{"n-one-failed", "2", oneFailed, "ensure_failed", "require='2' not satisfied: 2 completed, 2 failed"},
		{"all-missing-stage", "all", missing, "ensure_failed", "require='all' not satisfied: 3 completed, 0 failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, _ := plan(t, replaceReq(specPipeline, c.require), "main", map[string]any{"files": []any{"a.py", "b.py"}})
			r := f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
				return parallelDone(st, env, "pipe", c.results, "clean")
			})
			if c.status != "complete" {
				expect(t, r, map[string]any{"status": c.status, "violations": []any{c.viol}})
				return
			}
			expect(t, r, map[string]any{"status": "complete"})
			out := r["output"].(map[string]any)
			expect(t, out, map[string]any{"require_satisfied": true, "outcome": "complete", "merge_status": "clean"})
			items := out["items"].([]any)
			first := items[0].(map[string]any)
			expect(t, first, map[string]any{"item": "a.py", "status": "complete", "result": "pipe::item0::stage1!",
				"stages": []any{"pipe::item0::stage0!", "pipe::item0::stage1!"}})
		})
	}
}

// A fanned-out pipeline is run by stratum only: an agent's
// stratum_parallel_done of one is refused, as in the original.
func TestPipelineFanoutDoneRefused(t *testing.T) {
	src := `version: "0.3"
flows:
  main:
    input: {docs: {type: array}}
    steps:
      - id: pipe
        type: pipeline
        source: "$.input.docs"
        stages:
          - {intent_template: "list sections of {item}", fanout: {max: 2}}
          - {intent_template: "summarize {item}"}
          - {intent_template: "synthesize {prevs}", join: true}
`
	f, r := plan(t, src, "main", map[string]any{"docs": []any{"d"}})
	tasks := r["tasks"].([]any)
	if len(tasks) != 4 {
		t.Fatalf("%d tasks, want split + 2 lanes + join: %s", len(tasks), showV(tasks))
	}
	expect(t, tasks[3].(map[string]any), map[string]any{"id": "pipe::item0::stage2", "_pipeline_role": "join",
		"depends_on": []any{"pipe::item0::stage1::lane0", "pipe::item0::stage1::lane1"}, "_fanout_require": "all"})
	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDone(st, env, "pipe", nil, "clean")
	})
	expect(t, r, map[string]any{"status": "error", "error_type": "fanout_server_dispatched_only"})
}

// A pipeline's certificates, as the original's effective_pipeline_task_cert:
// a stage's own task_reasoning_template is checked whatever its agent; the
// step's only on claude stages.
func TestPipelineStageCertificates(t *testing.T) {
	src := `version: "0.3"
flows:
  main:
    input: {files: {type: array}}
    steps:
      - id: pipe
        type: pipeline
        source: "$.input.files"
        isolation: none
        task_reasoning_template: {}
        stages:
          - {agent: codex, intent_template: "clean {item}", task_reasoning_template: {}}
          - {agent: codex, intent_template: "verify {prev}"}
          - {agent: claude, intent_template: "fix {prev}"}
`
	f, _ := plan(t, src, "main", map[string]any{"files": []any{"a.py"}})
	res := []any{}
	for j := 0; j < 3; j++ {
		res = append(res, map[string]any{"task_id": fmt.Sprintf("pipe::item0::stage%d", j), "status": "complete", "result": map[string]any{}})
	}
	r := f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDone(st, env, "pipe", res, "clean")
	})
	vs := fmt.Sprint(r["violations"])
	if r["status"] != "ensure_failed" || !strings.Contains(vs, "task 'pipe::item0::stage0' cert:") || !strings.Contains(vs, "task 'pipe::item0::stage2' cert:") || strings.Contains(vs, "stage1' cert") {
		t.Fatalf("%v: %s", r["status"], vs)
	}
}

// The original's test_ensure_over_items_bracket_access: a pipeline step's
// ensure counts the aggregated items by status with a list comprehension.
func TestPipelineEnsureOverItems(t *testing.T) {
	src := strings.Replace(replaceReq(specPipeline, "any"), "        stages:\n", `        ensure:
          - "len([i for i in result.items if i['status'] == 'complete']) >= 2"
          - "len([i for i in result.items if i['status'] == 'failed']) == 1"
        stages:
`, 1)
	results := func(failed ...string) []any {
		var out []any
		for i := range 3 {
			for j := range 2 {
				id := fmt.Sprintf("pipe::item%d::stage%d", i, j)
				status := "complete"
				for _, f := range failed {
					if strings.HasPrefix(id, f) {
						status = "failed"
					}
				}
				out = append(out, map[string]any{"task_id": id, "status": status, "result": id + "!"})
			}
		}
		return out
	}
	for _, c := range []struct {
		name    string
		results []any
		status  string
		viol    []any
	}{
		{"one-failed", results("pipe::item2::stage1"), "complete", nil},
		{"two-failed", results("pipe::item1::stage1", "pipe::item2::stage1"), "ensure_failed", []any{
			"ensure 'len([i for i in result.items if i['status'] == 'complete']) >= 2' failed",
			"ensure 'len([i for i in result.items if i['status'] == 'failed']) == 1' failed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, _ := plan(t, src, "main", map[string]any{"files": []any{"a.py", "b.py", "c.py"}})
			r := f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
				return parallelDone(st, env, "pipe", c.results, "clean")
			})
			if c.viol == nil {
				expect(t, r, map[string]any{"status": c.status})
				return
			}
			expect(t, r, map[string]any{"status": c.status, "violations": c.viol})
		})
	}
}
