package tui

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTmuxWholeLoop is the whole loop of a gate in real processes: an MCP
// client (the go-sdk client over `stratum mcp`, standing in for a coding
// agent) drives a flow to its gate; a reviewer in `stratum tui` (in tmux,
// 80×24) revises it with a rationale; the client's stratum_wait_gate
// returns the dispatch with revise_feedback; the client does the step
// again; the reviewer approves it with a, the rationale, enter, a — three
// keys besides the rationale, from the pane the console opens on.
func TestTmuxWholeLoop(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	bin := stratumBinary(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	spec, err := os.ReadFile(filepath.Join("testdata", "e2e", "flow.stratum.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	// The agent: an MCP client session with `stratum mcp`.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := exec.Command(bin, "mcp")
	srv.Env = append(os.Environ(), "STRATUM_HOME="+home)
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "tmux-loop", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: srv}, nil)
	if err != nil {
		t.Fatalf("connect to stratum mcp: %v", err)
	}
	defer sess.Close()
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, _ := res.StructuredContent.(map[string]any)
		if res.IsError || out == nil {
			t.Fatalf("%s: error %v", name, res.Content)
		}
		return out
	}
	status := func(name string, out map[string]any, want string) {
		t.Helper()
		if out["status"] != want {
			b, _ := json.Marshal(out)
			t.Fatalf("%s: status %v, want %s: %s", name, out["status"], want, b)
		}
	}
	out := call("stratum_plan", map[string]any{"spec": string(spec), "flow": "main", "inputs": map[string]any{"name": "world"}})
	status("stratum_plan", out, "execute_step")
	id, _ := out["flow_id"].(string)
	status("step_done", call("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": false}}), "ensure_failed")
	status("step_done", call("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": true}}), "await_gate")

	// The reviewer: `stratum tui` in tmux.
	sock := filepath.Join(dir, "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	env := "STRATUM_HOME='" + home + "' USER=loop-reviewer NO_COLOR=1 TERM=xterm-256color"
	tm("new-session", "-d", "-s", "loop", "-x", "80", "-y", "24", env+" '"+bin+"' tui --watch '"+dir+"'; sleep 30")
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	screen := func() string { return tm("capture-pane", "-p", "-t", "loop") }
	waitFor := func(re string) {
		t.Helper()
		r := regexp.MustCompile(re)
		deadline := time.Now().Add(15 * time.Second)
		for !r.MatchString(screen()) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for /%s/; screen:\n%s", re, screen())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	keys := func(k ...string) { tm(append([]string{"send-keys", "-t", "loop"}, k...)...) }
	text := func(s string) { tm("send-keys", "-t", "loop", "-l", s) }
	waitFor(`1 waiting gate`)

	// The agent waits for the decision.
	waited := make(chan map[string]any, 1)
	go func() {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "stratum_wait_gate", Arguments: map[string]any{"flow_id": id, "timeout_seconds": 120}})
		if err != nil || res.IsError {
			waited <- map[string]any{"error": err, "content": res}
			return
		}
		out, _ := res.StructuredContent.(map[string]any)
		waited <- out
	}()

	// Revise, from the Flows pane the console opens on: r, rationale, enter, r.
	keys("r")
	waitFor(`REVISE · send main back for revision at gate review`)
	waitFor(`revise → step build`)
	text("the changelog is missing")
	keys("Enter")
	waitFor(`Press r to record REVISE as loop-reviewer`)
	keys("r")
	waitFor(`sent back for revision: review of main .*next: step`)

	var dispatch map[string]any
	select {
	case dispatch = <-waited:
	case <-time.After(30 * time.Second):
		t.Fatalf("stratum_wait_gate did not return after the revise; screen:\n%s", screen())
	}
	status("stratum_wait_gate", dispatch, "execute_step")
	fb, _ := json.Marshal(dispatch["revise_feedback"])
	if dispatch["step_id"] != "build" || !strings.Contains(string(fb), "the changelog is missing") {
		t.Fatalf("wait_gate after the revise: step %v, revise_feedback %s", dispatch["step_id"], fb)
	}

	// The agent does the step again; the gate opens in round 1.
	status("step_done", call("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": true}}), "await_gate")
	waitFor(`1 waiting gate`)

	// Approve: a, rationale, enter, a — three keys besides the rationale.
	keys("a")
	waitFor(`APPROVE · approve gate review of main`)
	waitFor(`round 1`)
	text("changelog added")
	keys("Enter")
	waitFor(`Press a to record APPROVE as loop-reviewer`)
	keys("a")
	waitFor(`0 waiting gates`)
	status("stratum_resume", call("stratum_resume", map[string]any{"flow_id": id}), "complete")

	audit, err := json.Marshal(call("stratum_audit", map[string]any{"flow_id": id}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"outcome":"revise"`, `"rationale":"the changelog is missing"`, `"outcome":"approve"`,
		`"rationale":"changelog added"`, `"channel":"tui"`, `"reviewer":"loop-reviewer"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit lacks %s: %s", want, audit)
		}
	}
	keys("q")
}
