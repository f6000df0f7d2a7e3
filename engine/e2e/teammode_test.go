package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

const teamSpec = `version: "0.2"
contracts:
  Out:
    ok: {type: boolean}
functions:
  review:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: build
        intent: "build it"
        output_contract: Out
        ensure: ["result.ok == True"]
      - id: review
        function: review
        depends_on: [build]
        on_approve: ~
        on_revise: build
        on_kill: ~
`

// TestTwoMachines: processes with different STRATUM_HOMEs share one etcd
// prefix, as on two machines. An agent's `stratum mcp` drives a flow to a
// gate in the first; `stratum gate approve` in the second decides; the first
// sees it on its next call, and a `stratum tui --plain` in a third prints
// the decision as it happens.
func TestTwoMachines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	bin := filepath.Join(binDir, "stratum")
	c := etcdtest.Start(t, 3)
	storeURL := c.URL("team")
	env := func(home string) []string {
		return append(os.Environ(), "STRATUM_HOME="+home, "STRATUM_STORE="+storeURL, "USER=reviewer-b")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Machine A: the agent's MCP server.
	homeA := t.TempDir()
	cmd := exec.Command(bin, "mcp")
	cmd.Env = env(homeA)
	cmd.Stderr = os.Stderr
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "team-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, _ := res.StructuredContent.(map[string]any)
		if res.IsError {
			t.Fatalf("%s: %v", name, out)
		}
		return out
	}
	r := call("stratum_plan", map[string]any{"spec": teamSpec, "flow": "main"})
	id, _ := r["flow_id"].(string)
	if id == "" {
		t.Fatalf("plan: %v", r)
	}
	r = call("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": true}})
	if r["status"] != "await_gate" {
		t.Fatalf("step_done: %v", r)
	}

	// Machine C: the plain console, following live.
	homeC := t.TempDir()
	tuiCmd := exec.CommandContext(ctx, bin, "tui", "--plain")
	tuiCmd.Env = env(homeC)
	stdout, err := tuiCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tuiCmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tuiCmd.Process.Kill(); _ = tuiCmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(want string) (string, time.Time) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("tui --plain ended before %q", want)
				}
				if strings.Contains(l, want) {
					return l, time.Now()
				}
			case <-timeout:
				t.Fatalf("tui --plain printed no %q in 20s", want)
			}
		}
	}
	if l, _ := next(" state "); !strings.Contains(l, `store="etcd `+storeURL+`"`) || !strings.Contains(l, "waiting_gates=1") {
		t.Fatalf("state line %q: want the etcd store and one waiting gate", l)
	}
	next("gate_waiting flow=" + id)

	// Machine B: a reviewer decides from a shell.
	t0 := time.Now()
	gate := exec.Command(bin, "gate", "approve", id, "review", "--note", "ship it")
	gate.Env = env(t.TempDir())
	if out, err := gate.CombinedOutput(); err != nil {
		t.Fatalf("stratum gate approve: %v\n%s", err, out)
	}
	decided := time.Since(t0)
	_, seen := next("gate_resolved")
	t.Logf("stratum gate approve took %v; the plain console printed the decision %v after the command started", decided, seen.Sub(t0))

	// A sees the decision on its next call.
	r = call("stratum_resume", map[string]any{"flow_id": id})
	if r["status"] != "complete" {
		t.Fatalf("resume on A after B's decision: %v", r)
	}
	info := exec.Command(bin, "store", "info", "--json")
	info.Env = env(homeA)
	out, err := info.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"backend": "etcd"`) || !strings.Contains(string(out), `"flows": 1`) {
		t.Fatalf("store info: %v\n%s", err, out)
	}
	// The operator's compaction: the history, then each member defragmented.
	compact := exec.Command(bin, "store", "compact", "--keep", "1", "--defrag")
	compact.Env = env(homeA)
	if out, err := compact.CombinedOutput(); err != nil || !strings.Contains(string(out), "compacted:      history up to revision") ||
		!strings.Contains(string(out), "defragmented:   every member") || strings.Count(string(out), "database:") != 3 {
		t.Fatalf("store compact: %v\n%s", err, out)
	}
	info = exec.Command(bin, "store", "info")
	info.Env = env(homeA)
	if out, err := info.CombinedOutput(); err != nil || !strings.Contains(string(out), "in use, quota 2.0 GiB") {
		t.Fatalf("store info: %v\n%s", err, out)
	}
}
