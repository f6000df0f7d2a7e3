package mcp_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store"
)

// fanRepo is a git repository with a commit, for server-dispatched
// fan-outs that outlive one server.
func fanRepo(t *testing.T) string {
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
	return repo
}

// serveIn starts `stratum mcp` in dir on the store of home and returns it
// with its process (to kill it).
func serveIn(t *testing.T, dir, home string) (*server, *exec.Cmd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(bin, "mcp")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STRATUM_HOME="+home)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	// A task's shell the killed server leaves behind holds the stderr pipe
	// open; Wait stops copying from it shortly after the server exits
	// rather than until the orphan ends (it hung the test once).
	cmd.WaitDelay = 2 * time.Second
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-test", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() { _ = sess.Close() })
	return &server{t: t, home: home, sess: sess, stderr: stderr}, cmd
}

// flowState reads a flow straight from the store under home.
func flowState(t *testing.T, home, id string) *state.FlowState {
	t.Helper()
	st, err := store.Open(filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := (&engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}).Query().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func restartSpec(task string) string {
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
        retries: 2
        run: |
` + task + `
        depends_on: [split]
`
}

// A server killed (kill -9) in the middle of a fan-out leaves task t2
// "running". A new server on the same store reports it running while the
// dead server's lease on the fan-out lives (another server could be running
// it); once the lease expired, the next poll fails t2 with the original's
// "server restart interrupted task", and the step settles: require all is
// not met, nothing was merged, and the step is dispatched again.
func TestParallelServerKilledMidFanOut(t *testing.T) {
	repo, home := fanRepo(t), t.TempDir()
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	// The orphaned t2 ends when release appears or its directory is gone
	// (the test's cleanup removes it right after writing release, possibly
	// before t2's next look): no shell outlives the test.
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })
	s1, cmd1 := serveIn(t, repo, home)
	spec := restartSpec(fmt.Sprintf(`          [ "$STRATUM_TASK_ID" = t2 ] && while [ ! -f %q ] && [ -d %q ]; do sleep 0.05; done
          echo "$STRATUM_TASK_ID" > "$STRATUM_TASK_ID.txt"
          echo '{}'`, release, dir))
	r := s1.ok("stratum_plan", map[string]any{"spec": spec, "flow": "main", "inputs": map[string]any{}}, map[string]any{"step_id": "split"})
	id := r["flow_id"].(string)
	s1.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "split", "result": map[string]any{"tasks": []any{map[string]any{"id": "t1"}, map[string]any{"id": "t2"}}}},
		map[string]any{"status": "parallel_dispatch"})
	s1.ok("stratum_parallel_start", map[string]any{"flow_id": id, "step_id": "run"}, map[string]any{"status": "started"})
	deadline := time.Now().Add(20 * time.Second)
	for {
		p := s1.ok("stratum_parallel_poll", map[string]any{"flow_id": id, "step_id": "run"}, nil)
		sum := p["summary"].(map[string]any)
		if sum["complete"] == float64(1) && sum["running"] == float64(1) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fan-out did not get going: %v\n%s", p, s1.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd1.Process.Wait() // not cmd1.Wait: the client transport calls that when its pipe closes, and two Waits of one Cmd can hang

	s2, _ := serveIn(t, repo, home)
	p := s2.ok("stratum_parallel_poll", map[string]any{"flow_id": id, "step_id": "run"}, map[string]any{"outcome": nil})
	if st := p["tasks"].(map[string]any)["t2"].(map[string]any)["state"]; st != "running" {
		t.Fatalf("t2 %v while the dead server's lease lives, want running", st)
	}
	s2.ok("stratum_parallel_start", map[string]any{"flow_id": id, "step_id": "run"}, map[string]any{"error": "already_started"})

	// Time passes: the dead server's lease expires.
	st := flowState(t, home, id)
	run := st.ParallelRunOf("run")
	if run == nil || run.Lease == nil || run.Done {
		t.Fatalf("the fan-out's run record: %+v", run)
	}
	expired := *run.Lease
	expired.ExpiresAt = time.Now().Add(-time.Second)
	db, err := store.Open(filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&engine.Service{ParseSpec: exprlang.ParseSpec, Store: db}).Leases().ClaimParallelRun(context.Background(), id, "run", expired); err != nil {
		t.Fatal(err)
	}

	p = s2.ok("stratum_parallel_poll", map[string]any{"flow_id": id, "step_id": "run"}, map[string]any{"require_satisfied": false, "can_advance": false})
	t2 := p["tasks"].(map[string]any)["t2"].(map[string]any)
	if t2["state"] != "failed" || t2["error"] != "server restart interrupted task" || t2["finished_at"] == nil {
		t.Fatalf("t2 after the lease expired: %v", t2)
	}
	out, _ := p["outcome"].(map[string]any)
	if out["step_id"] != "run" || !strings.Contains(fmt.Sprint(out["violations"]), "server restart interrupted task") {
		t.Fatalf("outcome: %v", out)
	}
	if _, err := os.Stat(filepath.Join(repo, "t1.txt")); err == nil {
		t.Fatal("t1 merged although the fan-out never finished")
	}
}

// A fan-out whose merge found a conflict (two tasks changed one file) ends
// while nobody polls; the server is killed. A new server's poll reports the
// recorded conflict — not "clean" — and the step fails its attempt with it.
func TestParallelMergeOutcomeSurvivesRestart(t *testing.T) {
	repo, home := fanRepo(t), t.TempDir()
	s1, cmd1 := serveIn(t, repo, home)
	spec := restartSpec(`          echo "$STRATUM_TASK_ID" > shared.txt
          echo '{}'`)
	r := s1.ok("stratum_plan", map[string]any{"spec": spec, "flow": "main", "inputs": map[string]any{}}, map[string]any{"step_id": "split"})
	id := r["flow_id"].(string)
	s1.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "split", "result": map[string]any{"tasks": []any{map[string]any{"id": "t1"}, map[string]any{"id": "t2"}}}},
		map[string]any{"status": "parallel_dispatch"})
	s1.ok("stratum_parallel_start", map[string]any{"flow_id": id, "step_id": "run"}, map[string]any{"status": "started"})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if run := flowState(t, home, id).ParallelRunOf("run"); run != nil && run.Done {
			if run.MergeStatus != "conflict" || run.Lease != nil {
				t.Fatalf("recorded run: %+v", run)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fan-out never ended\n%s", s1.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd1.Process.Wait() // not cmd1.Wait: the client transport calls that when its pipe closes, and two Waits of one Cmd can hang

	s2, _ := serveIn(t, repo, home)
	p := s2.ok("stratum_parallel_poll", map[string]any{"flow_id": id, "step_id": "run"},
		map[string]any{"require_satisfied": true, "can_advance": false})
	out := p["outcome"].(map[string]any)
	vs := fmt.Sprint(out["violations"])
	if out["status"] != "ensure_failed" || !strings.Contains(vs, "merge_status='conflict'") || !strings.Contains(vs, "shared.txt") {
		t.Fatalf("outcome after the restart: %v", out)
	}
}
