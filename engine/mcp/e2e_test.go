package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/shared"
)

// bin is the stratum binary built by TestMain.
var bin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "stratum-mcp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "stratum")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	// STRATUM_TEST_BIN runs the tests against a stratum built elsewhere
	// (an A/B of the benchmarks against another commit's binary).
	build := exec.Command("go", "build", "-o", bin, "github.com/stratum-go/stratum")
	if other := os.Getenv("STRATUM_TEST_BIN"); other != "" {
		bin, build = other, exec.Command("true")
	}
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building stratum:", err)
		return 1
	}
	c, err := etcdtest.Launch(etcdtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting etcd:", err)
		return 1
	}
	defer c.Close()
	cluster = c
	return m.Run()
}

// syncBuffer collects the server's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// server is one `stratum mcp` subprocess with its own STRATUM_HOME.
type server struct {
	t      testing.TB
	home   string
	store  string // STRATUM_STORE ("": the bbolt file in home)
	sess   *mcp.ClientSession
	stderr *syncBuffer
	// token, when set, goes with every call as its progress token.
	token string
}

func startIn(t testing.TB, home string, extra ...string) *server {
	t.Helper()
	return startInDir(t, home, "", extra...)
}

// startInDir is startIn with the server's working directory (the project
// directory of a spec given as text) set to dir ("" for the test's own).
func startInDir(t testing.TB, home, dir string, extra ...string) *server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	storeURL := storeFor(t)
	cmd := exec.Command(bin, append([]string{"mcp"}, extra...)...)
	cmd.Env = environ(home, storeURL)
	cmd.Dir = dir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-test", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() { _ = sess.Close() })
	return &server{t: t, home: home, store: storeURL, sess: sess, stderr: stderr}
}

func start(t testing.TB, extra ...string) *server {
	return startIn(t, t.TempDir(), extra...)
}

// call invokes a tool and returns its structured content, checking that the
// text content carries the same JSON.
func (s *server) call(name string, args map[string]any) (map[string]any, bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if s.token != "" {
		params.SetProgressToken(s.token)
	}
	res, err := s.sess.CallTool(ctx, params)
	if err != nil {
		s.t.Fatalf("%s: %v\nstderr:\n%s", name, err, s.stderr.String())
	}
	out, ok := res.StructuredContent.(map[string]any)
	if !ok {
		s.t.Fatalf("%s: structured content %T %v (content %v)", name, res.StructuredContent, res.StructuredContent, res.Content)
	}
	if len(res.Content) != 1 {
		s.t.Fatalf("%s: want one text content, got %d", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		s.t.Fatalf("%s: content %T", name, res.Content[0])
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &fromText); err != nil {
		s.t.Fatalf("%s: text content is not JSON: %v: %s", name, err, tc.Text)
	}
	if a, b := canon(s.t, fromText), canon(s.t, out); a != b {
		s.t.Fatalf("%s: text and structured content differ:\n%s\n%s", name, a, b)
	}
	return out, res.IsError
}

// ok calls a tool that must not fail and checks the expected keys.
func (s *server) ok(name string, args map[string]any, want map[string]any) map[string]any {
	s.t.Helper()
	out, isErr := s.call(name, args)
	if isErr {
		s.t.Fatalf("%s: isError: %v", name, out)
	}
	expect(s.t, name, out, want)
	return out
}

// cli runs the stratum binary against the server's store.
func (s *server) cli(args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = environ(s.home, s.store)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func canon(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// expect checks that got has each key of want with an equal JSON value.
func expect(t testing.TB, what string, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, present := got[k]
		if !present {
			t.Fatalf("%s: missing key %q in %s", what, k, canon(t, got))
		}
		if canon(t, g) != canon(t, w) {
			t.Fatalf("%s: %s = %s, want %s\nfull: %s", what, k, canon(t, g), canon(t, w), canon(t, got))
		}
	}
}

const flowSpec = `version: "0.2"
contracts:
  Out:
    ok: {type: boolean}
    n: {type: integer}
functions:
  review:
    mode: gate
  human_review:
    mode: gate
    approver: human
flows:
  main:
    input: {x: {type: string}}
    steps:
      - id: build
        intent: "build it"
        inputs: {x: "$.input.x"}
        output_contract: Out
        ensure: ["result.ok == True"]
        retries: 2
      - id: review
        function: review
        depends_on: [build]
        on_approve: ~
        on_revise: build
        on_kill: ~
  guarded:
    input: {}
    steps:
      - id: work
        intent: "work"
        ensure: ["result.ok == True"]
      - id: approve
        function: human_review
        depends_on: [work]
        on_approve: ~
        on_revise: work
        on_kill: ~
  hunt:
    input: {}
    steps:
      - id: hunt
        intent: "hunt"
        max_iterations: 5
        accumulate: "result.findings"
        accumulate_key: "item.id"
        exit_criterion: "dry_streak >= 1"
        ensure: ["result.ok == True"]
        retries: 3
`

// plan starts a flow and returns its id.
func (s *server) plan(flow string, inputs map[string]any, want map[string]any) (string, map[string]any) {
	s.t.Helper()
	args := map[string]any{"spec": flowSpec, "flow": flow}
	if inputs != nil {
		args["inputs"] = inputs
	}
	r := s.ok("stratum_plan", args, want)
	id, _ := r["flow_id"].(string)
	if id == "" {
		s.t.Fatalf("plan: no flow_id: %v", r)
	}
	return id, r
}

func TestToolsList(t *testing.T) { onBoth(t, testToolsList) }

func testToolsList(t *testing.T) {
	s := start(t)
	res, err := s.sess.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"stratum_validate", "stratum_plan", "stratum_resume", "stratum_step_done", "stratum_parallel_done",
		"stratum_audit", "stratum_gate_resolve", "stratum_check_timeouts", "stratum_skip_step", "stratum_iteration_start",
		"stratum_iteration_report", "stratum_iteration_abort", "stratum_commit", "stratum_revert", "stratum_compile_speckit",
		"stratum_draft_pipeline", "stratum_list_workflows", "stratum_wait_gate", "stratum_list_flows",
		"stratum_parallel_start", "stratum_parallel_poll", "stratum_parallel_advance",
		"stratum_flow_run_bg", "stratum_flow_bg_poll", "stratum_flow_cancel_bg", "stratum_agent_run", "stratum_cancel_agent_run", "stratum_judge", "stratum_decompose",
		"stratum_guard_register", "stratum_guard_transition", "stratum_guard_override", "stratum_guard_migrate", "stratum_guard_history",
		"stratum_goal", "stratum_goal_status", "stratum_goal_decide", "stratum_goal_archive", "stratum_distill"}
	tools := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	if len(tools) != len(want) {
		t.Errorf("got %d tools, want %d", len(tools), len(want))
	}
	for _, n := range want {
		tl := tools[n]
		if tl == nil {
			t.Errorf("missing tool %s", n)
			continue
		}
		if len(tl.Description) < 80 {
			t.Errorf("%s: description too short for an agent: %q", n, tl.Description)
		}
		schema := canon(t, tl.InputSchema)
		if !strings.Contains(schema, `"type":"object"`) {
			t.Errorf("%s: input schema %s", n, schema)
		}
	}
	// The original's parameter names.
	params := map[string][]string{
		"stratum_plan":            {"spec", "flow", "inputs"},
		"stratum_step_done":       {"flow_id", "step_id", "result"},
		"stratum_parallel_done":   {"flow_id", "step_id", "task_results", "merge_status"},
		"stratum_gate_resolve":    {"flow_id", "step_id", "outcome", "rationale", "resolved_by"},
		"stratum_compile_speckit": {"tasks_dir", "flow_name"},
		"stratum_draft_pipeline":  {"draft", "project_dir"},
		"stratum_list_workflows":  {"workflows_dir"},
		"stratum_wait_gate":       {"flow_id", "timeout_seconds"},
		"stratum_list_flows":      {"status", "limit"},
		"stratum_flow_run_bg":     {"flow_id"},
		"stratum_flow_bg_poll":    {"flow_id"},
		"stratum_flow_cancel_bg":  {"flow_id"},
		"stratum_agent_run": {"prompt", "type", "context", "schema", "modelID", "model_id", "allowed_tools", "disallowed_tools",
			"thinking", "effort", "cwd", "read_jail", "correlation_id"},
		"stratum_cancel_agent_run": {"correlation_id"},
		"stratum_guard_register":   {"resource_id", "graph", "edge_predicates", "initial", "terminal", "stakes", "workspace_root"},
		"stratum_guard_transition": {"resource_id", "from_state", "to_state", "artifacts", "modified_files", "idempotency_key", "resolved_by"},
		"stratum_guard_override":   {"resource_id", "from_state", "to_state", "override_token", "rationale", "resolved_by"},
		"stratum_guard_migrate": {"resource_id", "new_graph", "new_edge_predicates", "override_token", "rationale",
			"new_terminal", "new_stakes"},
		"stratum_guard_history":    {"resource_id"},
		"stratum_parallel_start":   {"flow_id", "step_id"},
		"stratum_parallel_poll":    {"flow_id", "step_id"},
		"stratum_parallel_advance": {"flow_id", "step_id", "merge_status"},
		"stratum_judge":            {"flow_id", "step_id", "predicates", "artifacts", "modified_files", "stakes", "budget"},
		"stratum_decompose":        {"prompt", "work_context", "model"},
	}
	for n, ps := range params {
		schema := canon(t, tools[n].InputSchema)
		for _, p := range ps {
			if !strings.Contains(schema, `"`+p+`"`) {
				t.Errorf("%s: parameter %s missing from %s", n, p, schema)
			}
		}
	}
}

func TestValidate(t *testing.T) { onBoth(t, testValidate) }

func testValidate(t *testing.T) {
	s := start(t)
	s.ok("stratum_validate", map[string]any{"spec": flowSpec}, map[string]any{"valid": true, "errors": []any{}})

	bad := `version: "0.2"
bogus: 1
flows:
  main:
    input: {}
    steps:
      - id: a
        intent: "a"
        next: nowhere
      - id: a
        intent: "again"
`
	r := s.ok("stratum_validate", map[string]any{"spec": bad}, map[string]any{"valid": false})
	errs := r["errors"].([]any)
	if len(errs) < 2 {
		t.Fatalf("want every diagnostic, got %s", canon(t, errs))
	}
	for _, e := range errs {
		m := e.(map[string]any)
		for _, k := range []string{"error_type", "path", "message", "suggestion", "line", "column", "code", "severity"} {
			if _, ok := m[k]; !ok {
				t.Errorf("diagnostic without %s: %v", k, m)
			}
		}
		if m["line"].(float64) < 1 {
			t.Errorf("diagnostic without a line: %v", m)
		}
	}
	r = s.ok("stratum_validate", map[string]any{"spec": "version: [\n"}, map[string]any{"valid": false})
	expect(t, "parse error", r["errors"].([]any)[0].(map[string]any), map[string]any{"error_type": "ir_parse_error"})

	// Plan with the invalid spec: the original's envelope plus every diagnostic.
	r = s.ok("stratum_plan", map[string]any{"spec": bad, "flow": "main"}, map[string]any{"status": "error", "success": false})
	if d, _ := r["diagnostics"].([]any); len(d) != len(errs) {
		t.Errorf("plan diagnostics %d, validate %d", len(d), len(errs))
	}
}

func TestFullFlow(t *testing.T) { onBoth(t, testFullFlow) }

func testFullFlow(t *testing.T) {
	s := start(t)
	id, r := s.plan("main", map[string]any{"x": "hi"}, map[string]any{
		"status": "execute_step", "step_id": "build", "step_number": 1, "total_steps": 2,
		"inputs": map[string]any{"x": "hi"}, "ensure": []any{"result.ok == True"}, "retries_remaining": 2,
		"output_fields": map[string]any{"ok": "boolean", "n": "integer"},
	})
	_ = r
	r = s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": false, "n": 1}},
		map[string]any{"status": "ensure_failed", "step_id": "build", "retries_remaining": 1})
	if v, _ := r["violations"].([]any); len(v) != 1 {
		t.Fatalf("violations: %v", r)
	}
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": true, "n": 2}},
		map[string]any{"status": "await_gate", "step_id": "review", "flow_id": id})
	s.ok("stratum_check_timeouts", map[string]any{"flow_id": id}, map[string]any{"status": "no_timeout"})

	// Gate errors.
	s.ok("stratum_gate_resolve", map[string]any{"flow_id": id, "step_id": "review", "outcome": "maybe", "rationale": "", "resolved_by": "agent"},
		map[string]any{"status": "error", "error_type": "invalid_outcome"})
	s.ok("stratum_gate_resolve", map[string]any{"flow_id": id, "step_id": "build", "outcome": "approve", "rationale": "", "resolved_by": "agent"},
		map[string]any{"status": "error"})
	// step_done into a gate step is refused.
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "review", "result": map[string]any{}},
		map[string]any{"status": "error", "error_type": "gate_step_requires_gate_resolve"})

	s.ok("stratum_gate_resolve", map[string]any{"flow_id": id, "step_id": "review", "outcome": "approve", "rationale": "fine", "resolved_by": "agent"},
		map[string]any{"status": "complete", "flow_id": id, "output": map[string]any{"ok": true, "n": 2}})
	a := s.ok("stratum_audit", map[string]any{"flow_id": id}, map[string]any{"flow_id": id, "flow_name": "main", "status": "complete"})
	trace := canon(t, a["trace"])
	for _, w := range []string{`"attempts":2`, `"outcome":"approve"`, `"channel":"mcp"`, `"rationale":"fine"`} {
		if !strings.Contains(trace, w) {
			t.Errorf("audit trace lacks %s: %s", w, trace)
		}
	}
	// The flow is visible to the CLI.
	out, err := s.cli("query", "flow", id)
	if err != nil || !strings.Contains(out, `"status": "complete"`) {
		t.Errorf("stratum query flow: %v\n%s", err, out)
	}
	s.ok("stratum_resume", map[string]any{"flow_id": id}, map[string]any{"status": "complete"})
	s.ok("stratum_gate_resolve", map[string]any{"flow_id": id, "step_id": "review", "outcome": "approve", "rationale": "", "resolved_by": "agent"},
		map[string]any{"status": "error", "error_type": "flow_already_complete"})
}

func TestNotFoundAndBadArguments(t *testing.T) { onBoth(t, testNotFoundAndBadArguments) }

func testNotFoundAndBadArguments(t *testing.T) {
	s := start(t)
	for _, tool := range []string{"stratum_resume", "stratum_audit", "stratum_check_timeouts", "stratum_wait_gate"} {
		s.ok(tool, map[string]any{"flow_id": "nope"}, map[string]any{"status": "error", "error_type": "flow_not_found",
			"message": "No active flow with id 'nope'"})
	}
	s.ok("stratum_step_done", map[string]any{"flow_id": "nope", "step_id": "a", "result": map[string]any{}},
		map[string]any{"error_type": "flow_not_found"})
	s.ok("stratum_commit", map[string]any{"flow_id": "nope", "label": "x"}, map[string]any{"error_type": "flow_not_found"})

	bad := []struct {
		tool string
		args map[string]any
		msg  string
	}{
		{"stratum_resume", map[string]any{}, "flow_id"},
		{"stratum_resume", map[string]any{"flow_id": 42}, "flow_id"},
		{"stratum_resume", map[string]any{"flow_id": ""}, "flow_id is required"},
		{"stratum_resume", map[string]any{"flow_id": "x", "extra": 1}, "extra"},
		{"stratum_step_done", map[string]any{"flow_id": "x", "step_id": "y"}, "result"},
		{"stratum_plan", map[string]any{"spec": "x", "flow": "f", "inputs": []any{1}}, "inputs must be a JSON object"},
		{"stratum_plan", map[string]any{"spec": "x"}, "flow"},
		{"stratum_parallel_done", map[string]any{"flow_id": "x", "step_id": "y", "task_results": "no", "merge_status": "clean"}, "task_results must be a JSON array"},
		{"stratum_draft_pipeline", map[string]any{"draft": "text"}, "draft must be a JSON object"},
		{"stratum_draft_pipeline", map[string]any{"draft": map[string]any{}, "project_dir": "/no/such/dir"}, "not an existing directory"},
		{"stratum_wait_gate", map[string]any{"flow_id": "x", "timeout_seconds": -1}, "timeout_seconds"},
		{"stratum_list_flows", map[string]any{"limit": -1}, "limit"},
		{"stratum_list_flows", map[string]any{"limit": 1.5}, "limit"},
		{"stratum_gate_resolve", map[string]any{"flow_id": "x", "step_id": "y", "outcome": "approve"}, "rationale"},
	}
	for _, c := range bad {
		r, isErr := s.call(c.tool, c.args)
		if !isErr {
			t.Errorf("%s %v: want isError", c.tool, c.args)
		}
		expect(t, c.tool, r, map[string]any{"status": "error", "error_type": "invalid_arguments"})
		if msg, _ := r["message"].(string); !strings.Contains(msg, c.msg) {
			t.Errorf("%s %v: message %q lacks %q", c.tool, c.args, msg, c.msg)
		}
	}
	// Unknown tool: a protocol error.
	if _, err := s.sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "stratum_nope"}); err == nil {
		t.Error("unknown tool: want an error")
	}
}

func TestHumanApproverRefusedOverMCP(t *testing.T) { onBoth(t, testHumanApproverRefusedOverMCP) }

func testHumanApproverRefusedOverMCP(t *testing.T) {
	s := start(t)
	id, _ := s.plan("guarded", nil, map[string]any{"step_id": "work"})
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "work", "result": map[string]any{"ok": true}},
		map[string]any{"status": "await_gate", "step_id": "approve"})
	r := s.ok("stratum_gate_resolve", map[string]any{"flow_id": id, "step_id": "approve", "outcome": "approve", "rationale": "self", "resolved_by": "human"},
		map[string]any{"status": "error", "error_type": "gate_requires_human"})
	if msg, _ := r["message"].(string); !strings.Contains(msg, "human") {
		t.Errorf("message: %q", msg)
	}
	// Still waiting. Nor may the agent's shell decide it: stratum gate
	// without a terminal refuses (exit 2). A person decides in the TUI.
	s.ok("stratum_resume", map[string]any{"flow_id": id}, map[string]any{"status": "await_gate"})
	if out, err := s.cli("gate", "approve", id, "approve", "--note", "ok"); err == nil || !strings.Contains(out, "use the TUI") {
		t.Fatalf("stratum gate approve without a terminal: %v\n%s", err, out)
	}
	s.ok("stratum_resume", map[string]any{"flow_id": id}, map[string]any{"status": "await_gate"})
	s.humanDecides(id, "approve", review.Approve, "ok")
	s.ok("stratum_resume", map[string]any{"flow_id": id}, map[string]any{"status": "complete"})
}

// humanDecides records a person's decision as the TUI does (channel tui,
// resolved_by human), in the server's store.
func (s *server) humanDecides(flowID, stepID string, outcome review.Outcome, note string) {
	s.t.Helper()
	st := s.openStore()
	d := review.Decision{FlowID: flowID, StepID: stepID, Outcome: outcome, Rationale: note, Reviewer: "ana",
		ResolvedBy: review.Human, Channel: review.ChannelTUI}
	if _, err := review.NewService[engine.Outcome](&engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}).Decide(context.Background(), d); err != nil {
		s.t.Fatalf("%s %s/%s in the TUI: %v", outcome, flowID, stepID, err)
	}
}

// TestCLIDecisionSeen: a decision made with `stratum gate` while the server
// runs is seen by the next tool call, and stratum_wait_gate returns when it
// arrives.
func TestCLIDecisionSeen(t *testing.T) { onBoth(t, testCLIDecisionSeen) }

func testCLIDecisionSeen(t *testing.T) {
	s := start(t)
	id, _ := s.plan("main", map[string]any{"x": "a"}, nil)
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": true}},
		map[string]any{"status": "await_gate"})
	s.ok("stratum_resume", map[string]any{"flow_id": id}, map[string]any{"status": "await_gate", "step_id": "review"})
	if out, err := s.cli("gate", "revise", id, "review", "--note", "again"); err != nil {
		t.Fatalf("stratum gate revise: %v\n%s", err, out)
	}
	s.ok("stratum_resume", map[string]any{"flow_id": id}, map[string]any{"status": "execute_step", "step_id": "build"})

	// Back at the gate (round 2); wait for another process's decision.
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": true}},
		map[string]any{"status": "await_gate"})
	r := s.ok("stratum_wait_gate", map[string]any{"flow_id": id, "timeout_seconds": 0.3},
		map[string]any{"status": "await_gate", "timed_out": true})
	if ms := r["waited_ms"].(float64); ms < 250 {
		t.Errorf("timed out after %v ms", ms)
	}
	done := make(chan map[string]any, 1)
	go func() {
		r, _ := s.call("stratum_wait_gate", map[string]any{"flow_id": id, "timeout_seconds": 30})
		done <- r
	}()
	time.Sleep(200 * time.Millisecond)
	// Other calls are served while wait_gate waits.
	t0 := time.Now()
	s.ok("stratum_list_flows", nil, nil)
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("list_flows blocked behind wait_gate for %v", d)
	}
	time.Sleep(200 * time.Millisecond)
	if out, err := s.cli("gate", "approve", id, "review"); err != nil {
		t.Fatalf("stratum gate approve: %v\n%s", err, out)
	}
	select {
	case r := <-done:
		expect(t, "wait_gate", r, map[string]any{"status": "complete", "flow_id": id})
		if _, timed := r["timed_out"]; timed {
			t.Errorf("wait_gate timed out: %v", r)
		}
		if ms := r["waited_ms"].(float64); ms < 300 || ms > 10000 {
			t.Errorf("waited_ms = %v", ms)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("wait_gate did not return after the decision")
	}
	// Not at a gate: returns at once.
	s.ok("stratum_wait_gate", map[string]any{"flow_id": id}, map[string]any{"status": "complete", "waited_ms": 0})
}

func TestIterationsCheckpointsSkip(t *testing.T) { onBoth(t, testIterationsCheckpointsSkip) }

func testIterationsCheckpointsSkip(t *testing.T) {
	s := start(t)
	id, _ := s.plan("hunt", nil, map[string]any{"step_id": "hunt"})
	s.ok("stratum_iteration_start", map[string]any{"flow_id": id, "step_id": "hunt"}, map[string]any{"status": "iteration_started"})
	s.ok("stratum_iteration_report", map[string]any{"flow_id": id, "step_id": "hunt", "result": map[string]any{"findings": []any{map[string]any{"id": "a"}}}},
		map[string]any{"status": "iteration_continue"})
	s.ok("stratum_iteration_report", map[string]any{"flow_id": id, "step_id": "hunt", "result": map[string]any{"findings": []any{map[string]any{"id": "a"}}}},
		map[string]any{"status": "iteration_exit"})
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "hunt", "result": map[string]any{"ok": false}}, map[string]any{"status": "ensure_failed"})
	s.ok("stratum_iteration_start", map[string]any{"flow_id": id, "step_id": "hunt"}, map[string]any{"status": "iteration_started"})
	s.ok("stratum_iteration_abort", map[string]any{"flow_id": id, "step_id": "hunt", "reason": "enough"}, map[string]any{"status": "iteration_aborted"})
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "hunt", "result": map[string]any{"ok": true}}, map[string]any{"status": "complete"})
	a := s.ok("stratum_audit", map[string]any{"flow_id": id}, nil)
	if !strings.Contains(canon(t, a["iterations"]), "hunt") {
		t.Errorf("audit iterations: %s", canon(t, a["iterations"]))
	}

	// Checkpoints.
	id, _ = s.plan("main", map[string]any{"x": "b"}, nil)
	s.ok("stratum_commit", map[string]any{"flow_id": id, "label": "start"},
		map[string]any{"status": "committed", "label": "start", "checkpoints": []any{"start"}, "current_step_id": "build"})
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": true}}, map[string]any{"status": "await_gate"})
	s.ok("stratum_revert", map[string]any{"flow_id": id, "label": "start"},
		map[string]any{"status": "execute_step", "step_id": "build", "reverted_to": "start"})
	s.ok("stratum_revert", map[string]any{"flow_id": id, "label": "nope"},
		map[string]any{"status": "error", "error_type": "checkpoint_not_found", "available": []any{"start"}})
	s.ok("stratum_commit", map[string]any{"flow_id": id, "label": ""}, map[string]any{"status": "error", "error_type": "invalid_label"})

	// Skip the build step, then the gate cannot be skipped.
	s.ok("stratum_skip_step", map[string]any{"flow_id": id, "step_id": "build", "reason": "done already"},
		map[string]any{"status": "await_gate", "step_id": "review"})
	r := s.ok("stratum_skip_step", map[string]any{"flow_id": id, "step_id": "review", "reason": "no"}, map[string]any{"status": "error"})
	_ = r
	// parallel_done on a non-parallel step.
	s.ok("stratum_parallel_done", map[string]any{"flow_id": id, "step_id": "review", "task_results": []any{}, "merge_status": "clean"},
		map[string]any{"status": "error"})
}

const parallelSpec = `version: "0.3"
contracts:
  TaskGraph:
    tasks: {type: array}
flows:
  main:
    input: {}
    steps:
      - id: split
        type: decompose
        agent: claude
        intent: "split the work"
        output_contract: TaskGraph
      - id: run
        type: parallel_dispatch
        agent: claude
        source: "$.steps.split.output.tasks"
        intent_template: "do {description}"
        require: all
        depends_on: [split]
`

func TestParallel(t *testing.T) { onBoth(t, testParallel) }

func testParallel(t *testing.T) {
	s := start(t)
	r := s.ok("stratum_plan", map[string]any{"spec": parallelSpec, "flow": "main", "inputs": map[string]any{}}, map[string]any{"step_id": "split"})
	id := r["flow_id"].(string)
	tasks := []any{map[string]any{"id": "t1", "description": "one"}}
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "split", "result": map[string]any{"tasks": tasks}},
		map[string]any{"status": "parallel_dispatch", "step_id": "run", "tasks": tasks})
	s.ok("stratum_parallel_done", map[string]any{"flow_id": id, "step_id": "split", "task_results": []any{}, "merge_status": "clean"},
		map[string]any{"status": "error", "error_type": "step_mismatch"})
	// The original's dict merge_status: a consumer's conflict with the
	// tasks it bounced fails the attempt, the bounces listed and turned
	// into violations; the step is dispatched again.
	bounce := map[string]any{"task_id": "t1", "reason": "merge_conflict", "files": []any{"a.go", "b.go"}, "command": nil, "exit_code": nil, "excerpt": "patch failed"}
	s.ok("stratum_parallel_done", map[string]any{"flow_id": id, "step_id": "run",
		"task_results": []any{map[string]any{"task_id": "t1", "status": "complete", "result": map[string]any{}}},
		"merge_status": map[string]any{"status": "conflict", "bounced_tasks": []any{bounce}}},
		map[string]any{"status": "ensure_failed", "step_id": "run", "step_mode": "parallel_dispatch", "bounced_tasks": []any{bounce},
			"violations": []any{"merge conflict: merge_status='conflict'", "task 't1' merge conflict on a.go, b.go"}})
	s.ok("stratum_parallel_done", map[string]any{"flow_id": id, "step_id": "run",
		"task_results": []any{map[string]any{"task_id": "t1", "status": "complete", "result": map[string]any{}}}, "merge_status": map[string]any{"status": "clean"}},
		map[string]any{"status": "complete"})
}

func TestFlowOwnedByRunner(t *testing.T) { onBoth(t, testFlowOwnedByRunner) }

func testFlowOwnedByRunner(t *testing.T) {
	s := start(t)
	id, _ := s.plan("main", map[string]any{"x": "c"}, nil)
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: s.openStore()}
	if err := svc.Leases().Claim(context.Background(), id, state.Lease{ID: "runner-1", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": true}},
		map[string]any{"status": "error", "error_type": "flow_owned"})
	s.ok("stratum_skip_step", map[string]any{"flow_id": id, "step_id": "build", "reason": "x"},
		map[string]any{"status": "error", "error_type": "flow_owned"})
	s.ok("stratum_commit", map[string]any{"flow_id": id, "label": "mid-run"},
		map[string]any{"status": "error", "error_type": "flow_owned", "owner": "runner-1"})
	s.ok("stratum_revert", map[string]any{"flow_id": id, "label": "mid-run"},
		map[string]any{"status": "error", "error_type": "flow_owned", "owner": "runner-1"})
	// Reads still work.
	s.ok("stratum_resume", map[string]any{"flow_id": id}, map[string]any{"status": "execute_step"})
}

func TestListFlows(t *testing.T) { onBoth(t, testListFlows) }

func testListFlows(t *testing.T) {
	s := start(t)
	s.ok("stratum_list_flows", nil, map[string]any{"flows": []any{}})
	var ids []string
	for i := 0; i < 3; i++ {
		id, _ := s.plan("main", map[string]any{"x": "x"}, nil)
		ids = append(ids, id)
	}
	s.ok("stratum_step_done", map[string]any{"flow_id": ids[0], "step_id": "build", "result": map[string]any{"ok": true}}, map[string]any{"status": "await_gate"})
	r := s.ok("stratum_list_flows", nil, nil)
	if n := len(r["flows"].([]any)); n != 3 {
		t.Errorf("flows: %d", n)
	}
	r = s.ok("stratum_list_flows", map[string]any{"status": "awaiting_gate"}, nil)
	fl := r["flows"].([]any)
	if len(fl) != 1 {
		t.Fatalf("awaiting_gate flows: %s", canon(t, fl))
	}
	expect(t, "summary", fl[0].(map[string]any), map[string]any{"flow_id": ids[0], "flow_name": "main", "status": "awaiting_gate", "total_steps": 2})
	r = s.ok("stratum_list_flows", map[string]any{"limit": 2}, nil)
	if n := len(r["flows"].([]any)); n != 2 {
		t.Errorf("limit 2: %d flows", n)
	}
}

func TestCompileDraftWorkflows(t *testing.T) { onBoth(t, testCompileDraftWorkflows) }

func testCompileDraftWorkflows(t *testing.T) {
	s := start(t)
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks")
	if err := os.MkdirAll(tasks, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "# Task: Setup the repo\n\nCreate the files.\n\n## Acceptance Criteria\n- [ ] file README.md exists\n- [ ] tests pass\n- [ ] it reads well\n"
	if err := os.WriteFile(filepath.Join(tasks, "01-setup.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	r := s.ok("stratum_compile_speckit", map[string]any{"tasks_dir": tasks}, map[string]any{"status": "ok", "flow_name": "tasks"})
	steps := r["steps"].([]any)
	if len(steps) != 1 {
		t.Fatalf("steps: %v", steps)
	}
	expect(t, "step", steps[0].(map[string]any), map[string]any{"id": "t01_setup", "title": "Setup the repo", "parallel": false,
		"judgment": []any{"it reads well"}})
	s.ok("stratum_validate", map[string]any{"spec": r["yaml"]}, map[string]any{"valid": true})
	s.ok("stratum_compile_speckit", map[string]any{"tasks_dir": tasks, "flow_name": "build"}, map[string]any{"flow_name": "build"})
	s.ok("stratum_compile_speckit", map[string]any{"tasks_dir": filepath.Join(dir, "nope")},
		map[string]any{"status": "error", "error_type": "directory_not_found"})
	s.ok("stratum_compile_speckit", map[string]any{"tasks_dir": dir},
		map[string]any{"status": "error", "error_type": "no_tasks"})

	draft := map[string]any{"name": "p", "steps": []any{map[string]any{"id": "a"}}}
	r = s.ok("stratum_draft_pipeline", map[string]any{"draft": draft, "project_dir": dir}, map[string]any{"status": "saved",
		"path": filepath.Join(dir, ".stratum", "pipeline-draft.json")})
	b, err := os.ReadFile(r["path"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil || canon(t, back) != canon(t, draft) {
		t.Errorf("draft file %s (%v)", b, err)
	}

	examples, _ := filepath.Abs(filepath.Join("..", "..", "specs", "examples"))
	r = s.ok("stratum_list_workflows", map[string]any{"workflows_dir": examples}, map[string]any{"errors": []any{}})
	if !strings.Contains(canon(t, r["workflows"]), `"name":"review"`) {
		t.Errorf("workflows: %s", canon(t, r["workflows"]))
	}
	r = s.ok("stratum_list_workflows", map[string]any{"workflows_dir": filepath.Join(dir, "nope")}, map[string]any{"workflows": []any{}})
	if len(r["errors"].([]any)) != 1 {
		t.Errorf("missing dir: %v", r)
	}
}

// TestInternalError: a store that stops working answers internal_error
// without leaking the failure; the details go to stderr.
func TestInternalError(t *testing.T) { onBoth(t, testInternalError) }

func testInternalError(t *testing.T) {
	s := start(t, "--sweep-interval", "-1s")
	id, _ := s.plan("main", map[string]any{"x": "d"}, nil)
	if s.store == "" {
		db := filepath.Join(s.home, store.FileName)
		garbage := bytes.Repeat([]byte("not a bolt database "), 1000)
		if err := os.WriteFile(db, garbage, 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		// etcd: the flow's record under the prefix becomes undecodable.
		loc, err := shared.Parse(s.store)
		if err != nil {
			t.Fatal(err)
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: cluster.Endpoints, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		if _, err := cli.Put(context.Background(), "/"+loc.Prefix+"/\x00f/"+id, "not a flow record"); err != nil { // schema 2: the root is /PREFIX/ and NUL
			t.Fatal(err)
		}
	}
	r, isErr := s.call("stratum_resume", map[string]any{"flow_id": id})
	if !isErr {
		t.Errorf("want isError: %v", r)
	}
	want := map[string]any{"status": "error", "success": false, "error_type": "internal_error", "message": "An unexpected error occurred."}
	if canon(t, r) != canon(t, want) {
		t.Errorf("got %s", canon(t, r))
	}
	// stderr is copied from the subprocess asynchronously.
	for end := time.Now().Add(5 * time.Second); !strings.Contains(s.stderr.String(), "stratum_resume") && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(s.stderr.String(), "stratum_resume") {
		t.Errorf("stderr lacks the failure:\n%s", s.stderr.String())
	}
}

// TestSweeperEnforcesDeadlines: a gate whose timeout passes is killed by the
// server's background enforcer without any tool call. The retry interval is
// an hour: the enforcer sleeps until the deadline it learnt of, it does not
// poll.
func TestSweeperEnforcesDeadlines(t *testing.T) { onBoth(t, testSweeperEnforcesDeadlines) }

func testSweeperEnforcesDeadlines(t *testing.T) {
	s := start(t, "--sweep-interval", "1h")
	spec := `version: "0.2"
functions:
  quick:
    mode: gate
    timeout: 1
flows:
  main:
    input: {}
    steps:
      - id: w
        intent: "work"
      - id: g
        function: quick
        depends_on: [w]
        on_approve: ~
        on_revise: w
        on_kill: ~
`
	r := s.ok("stratum_plan", map[string]any{"spec": spec, "flow": "main"}, map[string]any{"status": "execute_step"})
	id := r["flow_id"].(string)
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "w", "result": map[string]any{}}, map[string]any{"status": "await_gate"})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := s.cli("query", "flow", id)
		if err == nil && strings.Contains(out, `"status": "killed"`) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the expired gate was not killed by the sweeper")
}

// TestCheckTimeoutsAfterSweep: a caller that waited at a gate and checks
// after a restart learns what the sweeper did: the kill (reason timeout,
// the trace with the timeout's gate record), or, for on_timeout approve, the
// flow's next dispatch, never "no_timeout: Flow is already complete".
func TestCheckTimeoutsAfterSweep(t *testing.T) { onBoth(t, testCheckTimeoutsAfterSweep) }

func testCheckTimeoutsAfterSweep(t *testing.T) {
	spec := `version: "0.2"
functions:
  quick:
    mode: gate
    timeout: 1
  lenient:
    mode: gate
    timeout: 1
    on_timeout: approve
flows:
  kill:
    input: {}
    steps:
      - {id: w, intent: "work"}
      - {id: g, function: quick, depends_on: [w], on_approve: ~, on_revise: w, on_kill: ~}
  approve:
    input: {}
    steps:
      - {id: w, intent: "work"}
      - {id: g, function: lenient, depends_on: [w], on_approve: ship, on_revise: w, on_kill: ~}
      - {id: ship, intent: "ship", depends_on: [g]}
`
	s := start(t, "--sweep-interval", "100ms")
	ids := map[string]string{}
	for _, flow := range []string{"kill", "approve"} {
		r := s.ok("stratum_plan", map[string]any{"spec": spec, "flow": flow}, map[string]any{"status": "execute_step"})
		ids[flow] = r["flow_id"].(string)
		s.ok("stratum_step_done", map[string]any{"flow_id": ids[flow], "step_id": "w", "result": map[string]any{}},
			map[string]any{"status": "await_gate"})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		k, _ := s.cli("query", "flow", ids["kill"])
		a, _ := s.cli("query", "flow", ids["approve"])
		if strings.Contains(k, `"status": "killed"`) && strings.Contains(a, `"channel": "timeout"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sweeper did not apply the deadlines:\n%s\n%s", k, a)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A restarted server (no sweeps of its own) is asked.
	s2 := startIn(t, s.home, "--sweep-interval", "-1s")
	r := s2.ok("stratum_check_timeouts", map[string]any{"flow_id": ids["kill"]},
		map[string]any{"status": "killed", "reason": "timeout", "flow_id": ids["kill"]})
	trace, _ := r["trace"].([]any)
	last, _ := trace[len(trace)-1].(map[string]any)
	expect(t, "timeout record", last, map[string]any{"type": "gate", "step_id": "g", "outcome": "kill",
		"resolved_by": "system", "channel": "timeout", "rationale": "timeout"})
	if _, ok := r["total_duration_ms"]; !ok {
		t.Fatalf("no total_duration_ms: %v", r)
	}
	s2.ok("stratum_check_timeouts", map[string]any{"flow_id": ids["approve"]},
		map[string]any{"status": "execute_step", "step_id": "ship", "flow_id": ids["approve"]})
}

// TestWaitGateCancelled: a client that cancels stratum_wait_gate gets its
// answer at once, and the server keeps serving.
func TestWaitGateCancelled(t *testing.T) { onBoth(t, testWaitGateCancelled) }

func testWaitGateCancelled(t *testing.T) {
	s := start(t)
	id, _ := s.plan("main", map[string]any{"x": "e"}, nil)
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "build", "result": map[string]any{"ok": true}},
		map[string]any{"status": "await_gate"})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := s.sess.CallTool(ctx, &mcp.CallToolParams{Name: "stratum_wait_gate", Arguments: map[string]any{"flow_id": id, "timeout_seconds": 60}})
	if err == nil {
		t.Fatal("cancelled wait_gate: want an error")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("cancellation took %v", d)
	}
	s.ok("stratum_resume", map[string]any{"flow_id": id}, map[string]any{"status": "await_gate"})
}

const humanChildSpec = `version: "0.2"
functions:
  hg:
    mode: gate
    approver: human
flows:
  inner:
    input: {}
    steps:
      - id: work
        intent: "W"
      - id: signoff
        function: hg
        depends_on: [work]
        on_approve: ~
        on_revise: work
        on_kill: ~
  outer:
    input: {}
    steps:
      - id: prep
        intent: "P"
      - id: sub
        flow: inner
        depends_on: [prep]
      - id: after
        intent: "A"
        depends_on: [sub]
`

// TestHumanGateNotBypassed: while a child waits at an approver: human gate,
// an agent cannot end the parent's flow step (MCP step_done, skip_step,
// the CLI's step-done) nor revert the parent past it; a revert past a
// human's kill is refused over MCP.
func TestHumanGateNotBypassed(t *testing.T) { onBoth(t, testHumanGateNotBypassed) }

func testHumanGateNotBypassed(t *testing.T) {
	s := start(t)
	r := s.ok("stratum_plan", map[string]any{"spec": humanChildSpec, "flow": "outer"}, map[string]any{"step_id": "prep"})
	id := r["flow_id"].(string)
	s.ok("stratum_commit", map[string]any{"flow_id": id, "label": "start"}, map[string]any{"status": "committed"})
	r = s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "prep", "result": map[string]any{}},
		map[string]any{"status": "execute_flow"})
	child := r["child_flow_id"].(string)
	s.ok("stratum_step_done", map[string]any{"flow_id": child, "step_id": "work", "result": map[string]any{}},
		map[string]any{"status": "await_gate", "step_id": "signoff"})
	refused := map[string]any{"status": "error", "error_type": "human_gate_pending", "gate_flow_id": child, "gate_step_id": "signoff"}
	s.ok("stratum_step_done", map[string]any{"flow_id": id, "step_id": "sub", "result": map[string]any{"status": "complete", "output": map[string]any{}}}, refused)
	s.ok("stratum_skip_step", map[string]any{"flow_id": id, "step_id": "sub", "reason": "x"}, refused)
	s.ok("stratum_revert", map[string]any{"flow_id": id, "label": "start"}, refused)
	if out, err := s.cli("step-done", id, "sub", "--result", `{"status":"complete","output":{}}`); err == nil || !strings.Contains(out, "human_gate_pending") {
		t.Fatalf("stratum step-done past a human gate: %v\n%s", err, out)
	}
	s.ok("stratum_resume", map[string]any{"flow_id": id}, map[string]any{"status": "execute_flow", "child_flow_id": child})
	// A human kills the child's gate; reverting past that needs a human too.
	s.ok("stratum_commit", map[string]any{"flow_id": child, "label": "c0"}, nil)
	s.humanDecides(child, "signoff", review.Kill, "no")
	s.ok("stratum_resume", map[string]any{"flow_id": child}, map[string]any{"status": "killed"})
	s.ok("stratum_revert", map[string]any{"flow_id": child, "label": "c0"}, map[string]any{"status": "error", "error_type": "gate_requires_human"})
	a := s.ok("stratum_audit", map[string]any{"flow_id": child}, map[string]any{"status": "killed"})
	if tr := a["trace"].([]any); len(tr) != 2 || tr[1].(map[string]any)["outcome"] != "kill" {
		t.Fatalf("trace after the refused revert: %v", tr)
	}
}
