package run

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/fanout"
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

// The gate runner, as the original's test_par_merge_queue.py checks
// run_pre_merge_gate: all pass or none → no bounce; the first failing
// command bounces with its exit code and output; a command not found
// exits 127; the excerpt keeps the last 2 KiB; files lists the task's
// new (untracked) files.
func TestRunGate(t *testing.T) {
	e := gitEnv(t)
	e.commit()
	if err := os.WriteFile(filepath.Join(e.dir, "foo.txt"), []byte("new work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := fanout.Task{ID: "t1"}
	for _, c := range []struct {
		name    string
		cmds    []string
		code    any // nil: no bounce
		command string
		excerpt string
	}{
		{"all-pass", []string{"git --version", "true"}, nil, "", ""},
		{"none", nil, nil, "", ""},
		{"first-failure", []string{"git --version", "sh -c 'echo boom >&2; exit 3'", "false"}, 3, "sh -c 'echo boom >&2; exit 3'", "boom"},
		{"not-found", []string{"definitely_not_a_real_binary_xyz"}, 127, "definitely_not_a_real_binary_xyz", "not found"},
		{"bounded", []string{"for i in $(seq 1 5000); do echo XXXXXXXXXX; done; exit 1"}, 1, "", "xxxxxxxxxx"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &FanOut{PreMergeVerify: c.cmds}
			b := f.runGate(context.Background(), task, e.dir, 30*time.Second)
			if c.code == nil {
				if b != nil {
					t.Fatalf("bounced: %v", b)
				}
				return
			}
			if b == nil {
				t.Fatal("no bounce")
			}
			ex, _ := b["excerpt"].(string)
			if b["reason"] != "gate_failed" || b["task_id"] != "t1" || b["exit_code"] != c.code || !strings.Contains(strings.ToLower(ex), c.excerpt) || len(ex) > 2048 {
				t.Errorf("bounce %v", b)
			}
			if c.command != "" && b["command"] != c.command {
				t.Errorf("command %v, want %q", b["command"], c.command)
			}
			if files, _ := b["files"].([]any); !slices.Contains(files, any("foo.txt")) {
				t.Errorf("files %v lack the untracked foo.txt", b["files"])
			}
		})
	}
}

// A bounced task's prompt section (the original's
// _format_bounce_for_prompt): what bounced it, the files, the output.
func TestBouncePrompt(t *testing.T) {
	for _, c := range []struct {
		name   string
		bounce map[string]any
		want   []string
	}{
		{"gate-failed", map[string]any{"task_id": "t1", "reason": "gate_failed", "files": []any{"src/a.ts"}, "command": "pnpm build", "exit_code": 1, "excerpt": "TS2304"},
			[]string{"rejected before merge", "`pnpm build` (exit 1)", "Files involved: src/a.ts", "TS2304"}},
		{"merge-conflict", map[string]any{"task_id": "t2", "reason": "merge_conflict", "files": []any{"src/b.ts"}, "command": nil, "exit_code": nil, "excerpt": "patch failed"},
			[]string{"CONFLICTED", "src/b.ts", "patch failed"}},
		{"no-files", map[string]any{"task_id": "t3", "reason": "gate_failed", "command": "make"},
			[]string{"`make` (exit ?)", "Files involved: (none reported)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := bouncePrompt(c.bounce)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
}
