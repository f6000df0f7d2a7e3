package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// The merge queue: pre_merge_verify (a $.input reference, resolved) runs in
// each task's worktree before its work is committed; a task that fails it
// bounces (failed, nothing of it merged, the bounce in the violations), and
// the step's retry tells the task why in its prompt — here the task then
// does what the gate wants, and the flow completes with both tasks merged.
func TestFanOutPreMergeGateBounceAndReprompt(t *testing.T) {
	e := gitEnv(t)
	src := strings.Replace(fanSpec(`{"tasks": [{"id": "a", "description": "A"}, {"id": "b", "description": "B"}]}`, `        pre_merge_verify: "$.input.gate"
        run: |
          in=$(cat)
          case "$in" in
            *"rejected before merge"*"pre-merge gate"*) echo fixed > "$STRATUM_TASK_ID.txt"; echo "$in" > "$STRATUM_TASK_ID.prompt" ;;
            *) echo draft > "$STRATUM_TASK_ID.txt" ;;
          esac
          printf '{"id": "%s"}\n' "$STRATUM_TASK_ID"
`), "    input: {}", "    input: {gate: {type: array}}", 1)
	sp := e.spec(src)
	e.commit()
	o := e.start(sp, "main", map[string]any{"gate": []any{"test ! -e a.txt || grep -q fixed a.txt"}})
	wantStatus(t, o, EndComplete, 0)
	if b, err := os.ReadFile(filepath.Join(e.dir, "a.txt")); err != nil || strings.TrimSpace(string(b)) != "fixed" {
		t.Fatalf("a.txt merged: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "b.txt")); err != nil || strings.TrimSpace(string(b)) != "draft" {
		t.Fatalf("b.txt merged: %q %v", b, err)
	}
	prompt, err := os.ReadFile(filepath.Join(e.dir, "a.prompt"))
	if err != nil || !strings.Contains(string(prompt), "FAILED the pre-merge gate `test ! -e a.txt || grep -q fixed a.txt` (exit 1)") || !strings.Contains(string(prompt), "Files involved: a.txt") {
		t.Fatalf("the retried task's prompt does not carry its bounce: %q %v", prompt, err)
	}
	st := e.state(o.FlowID)
	var saw bool
	evs, err := e.svc.Query().FlowEvents(context.Background(), o.FlowID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		var violations []string
		switch d := ev.Data.(type) {
		case engine.StepFailed:
			violations = d.Violations
		case engine.Trace:
			violations = d.Violations
		case engine.ParallelTask:
			violations = d.Violations
		}
		if strings.Contains(strings.Join(violations, "\n"), "task 'a' failed pre-merge gate `test ! -e a.txt || grep -q fixed a.txt` (exit 1) — diff NOT merged") {
			saw = true
		}
	}
	if !saw {
		t.Errorf("no attempt failed with the bounce's violation")
	}
	if a := st.LastTasksOf("fan")["a"]; a.State != state.TaskComplete || a.GateBounce != nil {
		t.Errorf("task a after the retry: %+v", a)
	}
}
