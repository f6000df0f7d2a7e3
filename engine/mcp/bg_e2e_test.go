package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bgSpec: inline steps (the claude agent runs them in the background), a
// gate between command steps, a slow command step to cancel.
const bgSpec = `version: "0.2"
contracts:
  Out:
    ok: {type: boolean}
functions:
  review:
    mode: gate
flows:
  linear:
    input: {}
    steps:
      - id: s1
        intent: "first"
        output_contract: Out
        ensure: ["result.ok == True"]
      - id: s2
        intent: "second"
        depends_on: [s1]
        output_contract: Out
        ensure: ["result.ok == True"]
      - id: s3
        intent: "third"
        depends_on: [s2]
        output_contract: Out
        ensure: ["result.ok == True"]
  gated:
    input: {}
    steps:
      - id: a
        intent: "before"
        run: "echo '{\"ok\": true}'"
      - id: g
        function: review
        depends_on: [a]
        on_approve: b
        on_revise: a
        on_kill: ~
      - id: b
        intent: "after"
        depends_on: [g]
        run: "echo '{\"ok\": true}'"
  slow:
    input: {}
    steps:
      - id: wait
        intent: "wait"
        run: "sleep 60; echo '{}'"
      - id: after
        intent: "after"
        depends_on: [wait]
        run: "echo '{}'"
`

// fakeClaude writes a claude stand-in into home and configures it as the
// claude agent: it logs "start STEP" and "done STEP" to home/agent.log and
// answers {"ok": true}; the first time it runs step s2 while
// home/hang-s2 exists it hangs (exec sleep) without answering.
func fakeClaude(t *testing.T, home string) string {
	t.Helper()
	log := filepath.Join(home, "agent.log")
	script := filepath.Join(home, "fake-claude")
	body := `#!/bin/sh
cat >/dev/null
echo "start $STRATUM_STEP_ID" >> '` + log + `'
if [ "$STRATUM_STEP_ID" = s2 ] && [ -f '` + home + `/hang-s2' ]; then
  rm -f '` + home + `/hang-s2'
  exec sleep 30
fi
echo "done $STRATUM_STEP_ID" >> '` + log + `'
printf '%s\n' 'Done.' '` + "```json" + `' '{"ok": true}' '` + "```" + `'
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, home, "agents:\n  claude: ["+script+"]\n")
	return log
}

func writeConfig(t *testing.T, home, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s *server) planBg(flow string) string {
	s.t.Helper()
	r := s.ok("stratum_plan", map[string]any{"spec": bgSpec, "flow": flow, "inputs": map[string]any{}}, nil)
	id, _ := r["flow_id"].(string)
	if id == "" {
		s.t.Fatalf("plan: %v", r)
	}
	return id
}

// pollUntil polls stratum_flow_bg_poll until its status is want.
func (s *server) bgPollUntil(id, want string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	var last map[string]any
	for time.Now().Before(deadline) {
		last = s.ok("stratum_flow_bg_poll", map[string]any{"flow_id": id}, nil)
		if last["status"] == want {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("poll: status never %q; last %s\nstderr:\n%s", want, canon(s.t, last), s.stderr.String())
	return nil
}

func readLog(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// A background run drives every step itself (the agent reports nothing),
// answers idempotently while it runs, and polls as the original's shapes.
func TestBgRunCompletes(t *testing.T) { onBoth(t, testBgRunCompletes) }

func testBgRunCompletes(t *testing.T) {
	home := t.TempDir()
	log := fakeClaude(t, home)
	s := startIn(t, home)
	id := s.planBg("linear")
	s.ok("stratum_flow_bg_poll", map[string]any{"flow_id": id}, map[string]any{"status": "idle", "flow_mode": nil,
		"current_step": "s1", "steps_completed": 0, "total_steps": 3, "terminal_status": nil, "paused_reason": nil})
	s.ok("stratum_flow_run_bg", map[string]any{"flow_id": id}, map[string]any{"status": "bg_started", "flow_id": id, "total_steps": 3})
	end := s.bgPollUntil(id, "complete")
	expect(t, "poll", end, map[string]any{"flow_mode": "server_driven", "current_step": nil, "steps_completed": 3,
		"total_steps": 3, "terminal_status": "complete"})
	if got := strings.Join(readLog(t, log), ", "); got != "start s1, done s1, start s2, done s2, start s3, done s3" {
		t.Errorf("agent log: %s", got)
	}
	s.ok("stratum_flow_run_bg", map[string]any{"flow_id": id}, map[string]any{"status": "complete", "flow_id": id})
	s.ok("stratum_flow_bg_poll", map[string]any{"flow_id": "nope"}, map[string]any{"status": "not_found", "flow_id": "nope"})
	s.ok("stratum_flow_run_bg", map[string]any{"flow_id": "nope"}, map[string]any{"status": "not_found", "flow_id": "nope"})
	s.ok("stratum_flow_cancel_bg", map[string]any{"flow_id": id}, map[string]any{"status": "not_found", "flow_id": id})
	a := s.ok("stratum_audit", map[string]any{"flow_id": id}, map[string]any{"status": "complete"})
	if tr, _ := a["trace"].([]any); len(tr) != 3 {
		t.Errorf("audit trace: %s", canon(t, a["trace"]))
	}
}

// At a gate the run pauses (paused_gate); the agent decides it and re-arms
// the run, which goes on to the end.
func TestBgRunPausesAtGate(t *testing.T) { onBoth(t, testBgRunPausesAtGate) }

func testBgRunPausesAtGate(t *testing.T) {
	s := start(t)
	id := s.planBg("gated")
	s.ok("stratum_flow_run_bg", map[string]any{"flow_id": id}, map[string]any{"status": "bg_started"})
	p := s.bgPollUntil(id, "paused_gate")
	expect(t, "poll", p, map[string]any{"current_step": "g", "paused_reason": "gate:g", "steps_completed": 1, "terminal_status": nil})
	// The flow is back with the agent: not a runner's stalled flow.
	if f := s.flowSummary(id); f["driver"] != "agent" || f["owner"] != nil {
		t.Errorf("after the pause: %v", f)
	}
	s.ok("stratum_gate_resolve", map[string]any{"flow_id": id, "step_id": "g", "outcome": "approve", "rationale": "fine", "resolved_by": "agent"},
		map[string]any{"status": "execute_step", "step_id": "b"})
	s.ok("stratum_flow_bg_poll", map[string]any{"flow_id": id}, map[string]any{"status": "idle", "current_step": "b"})
	s.ok("stratum_flow_run_bg", map[string]any{"flow_id": id}, map[string]any{"status": "bg_started"})
	s.bgPollUntil(id, "complete")
}

// A step the server cannot run (here: the claude CLI is missing) is handed
// back; the agent does it, and a re-armed run finishes the flow.
func TestBgRunHandsOff(t *testing.T) { onBoth(t, testBgRunHandsOff) }

func testBgRunHandsOff(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, "agents:\n  claude: [/nonexistent/claude-cli]\n")
	s := startIn(t, home)
	id := s.planBg("linear")
	s.ok("stratum_flow_run_bg", map[string]any{"flow_id": id}, map[string]any{"status": "bg_started"})
	p := s.bgPollUntil(id, "handoff:inline")
	expect(t, "poll", p, map[string]any{"current_step": "s1", "paused_reason": "handoff:inline:s1", "steps_completed": 0})
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "s1", "result": map[string]any{"ok": true}},
		map[string]any{"status": "execute_step", "step_id": "s2"})
	s.ok("stratum_flow_bg_poll", map[string]any{"flow_id": id}, map[string]any{"status": "idle", "current_step": "s2", "steps_completed": 1})
}

// Cancel stops the run (the command under way is killed) and leaves the
// flow to the agent, resumable.
func TestBgRunCancel(t *testing.T) { onBoth(t, testBgRunCancel) }

func testBgRunCancel(t *testing.T) {
	s := start(t)
	id := s.planBg("slow")
	s.ok("stratum_flow_run_bg", map[string]any{"flow_id": id}, map[string]any{"status": "bg_started"})
	s.ok("stratum_flow_run_bg", map[string]any{"flow_id": id}, map[string]any{"status": "bg_already_running"})
	// An agent cannot report into a flow the background run drives.
	if out, _ := s.call("stratum_step_done", map[string]any{"flow_id": id, "step_id": "wait", "result": map[string]any{}}); out["status"] == "execute_step" {
		t.Fatalf("step_done into a background-driven flow: %v", out)
	}
	start := time.Now()
	s.ok("stratum_flow_cancel_bg", map[string]any{"flow_id": id}, map[string]any{"status": "cancelled", "flow_id": id})
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("cancel took %v", d)
	}
	s.ok("stratum_flow_bg_poll", map[string]any{"flow_id": id}, map[string]any{"status": "cancelled", "current_step": "wait",
		"terminal_status": nil, "flow_mode": "server_driven"})
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "wait", "result": map[string]any{}},
		map[string]any{"status": "execute_step", "step_id": "after"})
}

// A background run survives its server's kill -9: the next server on the
// store adopts the flow (the dead holder's lease) and finishes it; no
// finished step runs again.
func TestBgRunSurvivesKill(t *testing.T) { onBoth(t, testBgRunSurvivesKill) }

func testBgRunSurvivesKill(t *testing.T) {
	home := t.TempDir()
	log := fakeClaude(t, home)
	if err := os.WriteFile(filepath.Join(home, "hang-s2"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp")
	cmd.Env = environ(home, storeFor(t))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := &server{t: t, home: home, store: storeFor(t), sess: sess, stderr: stderr}
	id := first.planBg("linear")
	first.ok("stratum_flow_run_bg", map[string]any{"flow_id": id}, map[string]any{"status": "bg_started"})
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(strings.Join(readLog(t, log), " "), "start s2") {
		if time.Now().After(deadline) {
			t.Fatalf("s2 never started: %v\n%s", readLog(t, log), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	_ = sess.Close()

	second := startIn(t, home)
	second.bgPollUntil(id, "complete")
	got := strings.Join(readLog(t, log), ", ")
	if got != "start s1, done s1, start s2, start s2, done s2, start s3, done s3" {
		t.Errorf("agent log: %s", got)
	}
	if !strings.Contains(second.stderr.String(), "adopted a background run") {
		t.Errorf("the second server did not say it adopted the run:\n%s", second.stderr.String())
	}
}

// flowSummary is the flow's summary in stratum_list_flows.
func (s *server) flowSummary(id string) map[string]any {
	s.t.Helper()
	out := s.ok("stratum_list_flows", map[string]any{}, nil)
	for _, f := range out["flows"].([]any) {
		if m := f.(map[string]any); m["flow_id"] == id {
			return m
		}
	}
	s.t.Fatalf("flow %s not listed", id)
	return nil
}
