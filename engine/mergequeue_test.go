package engine

import (
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/state"
)

// The merge queue over stratum_parallel_done: a {status, bounced_tasks}
// merge_status turns each bounce into a violation after the verdict, and
// every failure answer (ensure_failed, retries_exhausted) lists the
// bounced_tasks, as the original's; a pre_merge_verify reference is
// resolved in the dispatch.
func TestParallelDoneBounces(t *testing.T) {
	src := strings.Replace(specParallel, "REQ", "all", 1)
	src = strings.Replace(src, "    input: {}", "    input: {gate: {type: array}}", 1)
	src = strings.Replace(src, "        depends_on: [split]\n", "        depends_on: [split]\n        pre_merge_verify: \"$.input.gate\"\n", 1)
	f, _ := plan(t, src, "main", map[string]any{"gate": []any{"go vet ./...", " "}})
	r := f.stepDone("split", map[string]any{"tasks": []any{map[string]any{"id": "t1"}, map[string]any{"id": "t2"}}})
	expect(t, r, map[string]any{"status": "parallel_dispatch", "pre_merge_verify": []any{"go vet ./..."}})
	ok := []any{map[string]any{"task_id": "t1", "status": "complete", "result": map[string]any{}}, map[string]any{"task_id": "t2", "status": "complete", "result": map[string]any{}}}
	conflict := map[string]any{"task_id": "t2", "reason": "merge_conflict", "files": []any{"a.go", "b.go"}}
	gate := map[string]any{"task_id": "t1", "reason": "gate_failed", "command": "go vet ./...", "exit_code": 1}
	ms := map[string]any{"status": "conflict", "bounced_tasks": []any{conflict, gate}}
	want := []any{"merge conflict: merge_status='conflict'", "task 't2' merge conflict on a.go, b.go", "task 't1' failed pre-merge gate `go vet ./...` (exit 1) — diff NOT merged"}
	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDone(st, env, "run", ok, ms)
	})
	expect(t, r, map[string]any{"status": "ensure_failed", "violations": want, "bounced_tasks": []any{conflict, gate}, "pre_merge_verify": []any{"go vet ./..."}})
	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDone(st, env, "run", ok, ms)
	})
	expect(t, r, map[string]any{"status": "error", "error_type": "retries_exhausted", "violations": want, "bounced_tasks": []any{conflict, gate}})
}

// A failure without bounces still lists bounced_tasks (empty), and a
// pre_merge_verify reference that does not resolve is no gate.
func TestParallelDoneNoBounces(t *testing.T) {
	src := strings.Replace(specParallel, "REQ", "all", 1)
	src = strings.Replace(src, "        depends_on: [split]\n", "        depends_on: [split]\n        pre_merge_verify: \"$.steps.split.output.gate\"\n", 1)
	f, _ := plan(t, src, "main", nil)
	r := f.stepDone("split", map[string]any{"tasks": []any{map[string]any{"id": "t1"}}})
	if _, ok := r["pre_merge_verify"]; ok {
		t.Errorf("an unresolved gate reference in the dispatch: %v", r["pre_merge_verify"])
	}
	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDone(st, env, "run", []any{map[string]any{"task_id": "t1", "status": "failed"}}, "clean")
	})
	expect(t, r, map[string]any{"status": "ensure_failed", "bounced_tasks": []any{}})
}
