package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startInRepo starts `stratum mcp` with its working directory in a fresh
// git repository (a spec given as text runs its commands there).
func startInRepo(t *testing.T) (*server, string) {
	t.Helper()
	return startInRepoWith(t, nil)
}

// startInRepoWith is startInRepo with the client's options.
func startInRepoWith(t *testing.T, opts *mcp.ClientOptions) (*server, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "base"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	storeURL := storeFor(t)
	cmd := exec.Command(bin, "mcp")
	cmd.Dir = repo
	cmd.Env = environ(home, storeURL)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-test", Version: "1"}, opts)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() { _ = sess.Close() })
	return &server{t: t, home: home, store: storeURL, sess: sess, stderr: stderr}, repo
}

func fanoutSpec(deferAdvance bool) string {
	d := "false"
	if deferAdvance {
		d = "true"
	}
	return `version: "0.3"
contracts:
  TaskGraph:
    tasks: {type: array}
flows:
  main:
    input: {}
    steps:
      - id: split
        type: decompose
        intent: "split"
        output_contract: TaskGraph
        run: "echo '{}'"
      - id: run
        type: parallel_dispatch
        source: "$.steps.split.output.tasks"
        intent_template: "do {id}"
        defer_advance: ` + d + `
        run: |
          [ "$STRATUM_TASK_ID" = t3 ] && sleep 0.3
          echo "$STRATUM_TASK_ID" > "$STRATUM_TASK_ID.txt"
          printf '{"done": "%s"}\n' "$STRATUM_TASK_ID"
        depends_on: [split]
`
}

// pollUntil polls until the outcome is set.
func (s *server) pollUntil(id, step string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r := s.ok("stratum_parallel_poll", map[string]any{"flow_id": id, "step_id": step}, map[string]any{"flow_id": id, "step_id": step})
		if r["outcome"] != nil {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("the fan-out never settled\n%s", s.stderr.String())
	return nil
}

func TestParallelServerDispatched(t *testing.T) { onBoth(t, testParallelServerDispatched) }

func testParallelServerDispatched(t *testing.T) {
	s, repo := startInRepo(t)
	r := s.ok("stratum_plan", map[string]any{"spec": fanoutSpec(false), "flow": "main", "inputs": map[string]any{}}, map[string]any{"step_id": "split"})
	id := r["flow_id"].(string)
	tasks := []any{map[string]any{"id": "t1", "files_owned": []any{"t1.txt"}}, map[string]any{"id": "t2"}, map[string]any{"id": "t3", "depends_on": []any{"t1"}}}
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "split", "result": map[string]any{"tasks": tasks}},
		map[string]any{"status": "parallel_dispatch", "step_id": "run"})

	s.ok("stratum_parallel_poll", map[string]any{"flow_id": id, "step_id": "run"},
		map[string]any{"error": "step 'run' not dispatched yet; call stratum_parallel_start first"})
	s.ok("stratum_parallel_start", map[string]any{"flow_id": id, "step_id": "split"}, map[string]any{"error": "step_mismatch"})
	s.ok("stratum_parallel_start", map[string]any{"flow_id": id, "step_id": "run"},
		map[string]any{"status": "started", "flow_id": id, "step_id": "run", "task_count": float64(3), "tasks": []any{"t1", "t2", "t3"}})
	s.ok("stratum_parallel_start", map[string]any{"flow_id": id, "step_id": "run"}, map[string]any{"error": "already_started"})
	s.ok("stratum_parallel_advance", map[string]any{"flow_id": id, "step_id": "run", "merge_status": "clean"}, map[string]any{"error": "advance_not_deferred"})

	p := s.pollUntil(id, "run")
	expect(t, "poll", p, map[string]any{"require_satisfied": true, "can_advance": true,
		"summary": map[string]any{"pending": float64(0), "running": float64(0), "complete": float64(3), "failed": float64(0), "cancelled": float64(0), "skipped": float64(0), "reparenting": float64(0)}})
	out := p["outcome"].(map[string]any)
	if out["status"] != "complete" {
		t.Fatalf("outcome: %v", out)
	}
	t1 := p["tasks"].(map[string]any)["t1"].(map[string]any)
	if t1["state"] != "complete" || t1["result"].(map[string]any)["done"] != "t1" || !strings.HasPrefix(t1["branch"].(string), "stratum/") {
		t.Fatalf("task t1: %v", t1)
	}
	for _, f := range []string{"t1.txt", "t2.txt", "t3.txt"} {
		if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
			t.Fatalf("%s not merged: %v", f, err)
		}
	}
	// The flow advanced: a later poll reports it without advancing again.
	p = s.ok("stratum_parallel_poll", map[string]any{"flow_id": id, "step_id": "run"}, nil)
	if p["outcome"].(map[string]any)["status"] != "already_advanced" {
		t.Fatalf("second poll: %v", p["outcome"])
	}
}

func TestParallelDeferAdvance(t *testing.T) { onBoth(t, testParallelDeferAdvance) }

func testParallelDeferAdvance(t *testing.T) {
	s, _ := startInRepo(t)
	r := s.ok("stratum_plan", map[string]any{"spec": fanoutSpec(true), "flow": "main", "inputs": map[string]any{}}, map[string]any{"step_id": "split"})
	id := r["flow_id"].(string)
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "split", "result": map[string]any{"tasks": []any{map[string]any{"id": "t1"}, map[string]any{"id": "t3"}}}},
		map[string]any{"status": "parallel_dispatch"})
	s.ok("stratum_parallel_start", map[string]any{"flow_id": id, "step_id": "run"}, map[string]any{"status": "started"})
	s.ok("stratum_parallel_advance", map[string]any{"flow_id": id, "step_id": "run", "merge_status": "maybe"}, map[string]any{"error": "invalid_merge_status"})
	p := s.pollUntil(id, "run")
	if p["outcome"].(map[string]any)["status"] != "awaiting_consumer_advance" {
		t.Fatalf("outcome: %v", p["outcome"])
	}
	s.ok("stratum_parallel_advance", map[string]any{"flow_id": id, "step_id": "run", "merge_status": map[string]any{"status": "maybe"}}, map[string]any{"error": "invalid_merge_status"})
	// A consumer-reported conflict (the original's dict form, with the
	// tasks it bounced) fails the attempt: the step is dispatched again,
	// the violations name the bounced task, the records come back.
	bounce := map[string]any{"task_id": "t1", "reason": "merge_conflict", "files": []any{"t1.txt"}}
	s.ok("stratum_parallel_advance", map[string]any{"flow_id": id, "step_id": "run", "merge_status": map[string]any{"status": "conflict", "bounced_tasks": []any{bounce}}},
		map[string]any{"status": "ensure_failed", "step_id": "run", "bounced_tasks": []any{bounce},
			"violations": []any{"merge conflict: merge_status='conflict'", "task 't1' merge conflict on t1.txt"}})
	s.ok("stratum_parallel_start", map[string]any{"flow_id": id, "step_id": "run"}, map[string]any{"status": "started"})
	s.pollUntil(id, "run")
	s.ok("stratum_parallel_advance", map[string]any{"flow_id": id, "step_id": "run", "merge_status": map[string]any{"status": "clean"}}, map[string]any{"status": "complete"})
}
