package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeAgents configures claude and codex as one script that records its
// arguments and settings in home/args and answers after the prompt's
// keyword: SLEEP hangs, NOJSON answers prose, BAD answers {"n": "x"},
// otherwise two lines of prose and {"n": 1}.
func fakeAgents(t *testing.T, home string) string {
	t.Helper()
	args := filepath.Join(home, "args")
	script := filepath.Join(home, "fake-agent")
	body := `#!/bin/sh
prompt=$(cat)
{ printf '%s\n' "$@"; echo "model=$STRATUM_AGENT_MODEL tools=$STRATUM_AGENT_ALLOWED_TOOLS thinking=$MAX_THINKING_TOKENS"; } > '` + args + `'
case "$prompt" in
*SLEEP*) exec sleep 30 ;;
*NOJSON*) echo "no json here" ;;
*BAD*) echo '{"n": "x"}' ;;
*) echo "thinking about it"; echo "answer:"; printf '%s\n' '` + "```json" + `' '{"n": 1}' '` + "```" + `' ;;
esac
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, home, "agents:\n  claude: ["+script+", -p]\n  codex: ["+script+", exec, \"-\"]\n")
	return args
}

// serverCmd is a `stratum mcp` command on home's store.
func serverCmd(home, storeURL string) *exec.Cmd {
	cmd := exec.Command(bin, "mcp")
	cmd.Env = environ(home, storeURL)
	return cmd
}

var nSchema = map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}}

// stratum_agent_run with and without a schema, the answers' shapes, the
// arguments each agent gets, and the refusals.
func TestAgentRun(t *testing.T) {
	home := t.TempDir()
	argsFile := fakeAgents(t, home)
	s := startIn(t, home)
	r := s.ok("stratum_agent_run", map[string]any{"prompt": "go", "correlation_id": "c-1"},
		map[string]any{"text": "thinking about it\nanswer:\n```json\n{\"n\": 1}\n```", "correlation_id": "c-1"})
	if _, has := r["result"]; has {
		t.Errorf("result without a schema: %v", r)
	}
	s.ok("stratum_agent_run", map[string]any{"prompt": "go", "schema": nSchema, "context": "CTX",
		"modelID": "opus", "allowed_tools": []any{"Read", "Edit"}, "thinking": map[string]any{"type": "enabled", "budget_tokens": 8000}},
		map[string]any{"result": map[string]any{"n": 1}})
	args, _ := os.ReadFile(argsFile)
	if got := string(args); got != "-p\n--model\nopus\n--allowedTools\nRead,Edit\nmodel=opus tools=Read,Edit thinking=8000\n" {
		t.Errorf("claude's arguments:\n%s", got)
	}
	s.ok("stratum_agent_run", map[string]any{"prompt": "go", "type": "codex", "model_id": "gpt-5.4/high"}, nil)
	args, _ = os.ReadFile(argsFile)
	if got := string(args); !strings.HasPrefix(got, "exec\n-m\ngpt-5.4\n-c\nmodel_reasoning_effort=\"high\"\n-\n") {
		t.Errorf("codex's arguments:\n%s", got)
	}
	s.ok("stratum_agent_run", map[string]any{"prompt": "BAD", "schema": nSchema},
		map[string]any{"result": nil, "parseError": "Response does not match the schema"})
	bad := s.ok("stratum_agent_run", map[string]any{"prompt": "BAD", "schema": nSchema}, nil)
	if vs, _ := bad["violations"].([]any); len(vs) == 0 || !strings.Contains(canon(t, vs), "/n") {
		t.Errorf("violations: %v", bad["violations"])
	}
	s.ok("stratum_agent_run", map[string]any{"prompt": "NOJSON", "schema": nSchema},
		map[string]any{"text": "no json here", "result": nil, "parseError": "Response was not valid JSON"})
	s.ok("stratum_agent_run", map[string]any{"prompt": "go", "read_jail": home}, map[string]any{"status": "error", "error_type": "read_jail_unavailable"})
	for _, args := range []map[string]any{{"prompt": "  "}, {"prompt": "go", "type": "opencode"}, {"prompt": "go", "cwd": filepath.Join(home, "none")},
		{"prompt": "go", "schema": map[string]any{"type": 12}}} {
		out, isErr := s.call("stratum_agent_run", args)
		if !isErr || out["error_type"] != "invalid_arguments" {
			t.Errorf("%v: %v", args, out)
		}
	}
	s.ok("stratum_cancel_agent_run", map[string]any{"correlation_id": "none"}, map[string]any{"status": "not_found", "correlation_id": "none"})
}

// Each line of the agent's output reaches the client as a progress
// notification while the run goes on.
func TestAgentRunProgress(t *testing.T) {
	home := t.TempDir()
	fakeAgents(t, home)
	var mu sync.Mutex
	var msgs []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			msgs = append(msgs, req.Params.Message)
			mu.Unlock()
		}})
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: serverCmd(home, storeFor(t))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	p := &mcp.CallToolParams{Name: "stratum_agent_run", Arguments: map[string]any{"prompt": "go", "correlation_id": "p-1"}}
	p.SetProgressToken("tok-1")
	if _, err := sess.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(msgs)
		mu.Unlock()
		if n >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) != 5 || !strings.Contains(msgs[0], `"text":"thinking about it"`) || !strings.Contains(msgs[0], `"step_id":"_agent_run"`) ||
		!strings.Contains(msgs[0], `"flow_id":"p-1"`) || !strings.Contains(msgs[0], `"kind":"agent_relay"`) ||
		!strings.Contains(msgs[0], `"schema_version":"0.2.7"`) || !strings.Contains(msgs[0], `"seq":0`) {
		t.Errorf("progress messages: %q", msgs)
	}
}

// A run is cancelled by its correlation id: its agent is killed and the
// call answers cancelled.
func TestAgentRunCancel(t *testing.T) {
	home := t.TempDir()
	fakeAgents(t, home)
	s := startIn(t, home)
	done := make(chan map[string]any, 1)
	go func() {
		out, _ := s.call("stratum_agent_run", map[string]any{"prompt": "SLEEP", "correlation_id": "k-1"})
		done <- out
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := s.call("stratum_cancel_agent_run", map[string]any{"correlation_id": "k-1"})
		if out["status"] == "cancelled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never became cancellable")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case out := <-done:
		expect(t, "agent_run", out, map[string]any{"status": "cancelled", "correlation_id": "k-1"})
	case <-time.After(15 * time.Second):
		t.Fatal("the cancelled run did not return")
	}
}

// A run whose correlation_id is a flow is charged to it (an agent dispatch)
// and refused once the flow's dispatches are used up.
func TestAgentRunBudget(t *testing.T) {
	home := t.TempDir()
	fakeAgents(t, home)
	s := startIn(t, home)
	spec := `version: "0.2"
flows:
  main:
    budget: {max_agent_dispatches: 1}
    input: {}
    steps:
      - id: a
        intent: "a"
`
	r := s.ok("stratum_plan", map[string]any{"spec": spec, "flow": "main", "inputs": map[string]any{}}, nil)
	id := r["flow_id"].(string)
	s.ok("stratum_agent_run", map[string]any{"prompt": "go", "correlation_id": id}, map[string]any{"correlation_id": id})
	out := s.ok("stratum_agent_run", map[string]any{"prompt": "go", "correlation_id": id},
		map[string]any{"status": "budget_exhausted", "text": "", "correlation_id": id})
	if b, _ := out["budget_state"].(map[string]any); b["agent_dispatches"] != 1.0 {
		t.Errorf("budget_state: %v", out["budget_state"])
	}
}
