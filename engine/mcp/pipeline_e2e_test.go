package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const pipelineSpec = `version: "0.3"
flows:
  main:
    input: {items: {type: array}}
    steps:
      - id: pipe
        type: pipeline
        source: "$.input.items"
        isolation: none
        max_concurrent: 4
        stages:
          - {intent_template: "a:{item}"}
          - {intent_template: "b:{prev}", when: "item != 'skip'"}
        run: |
          p=$(sed -n 's/.*"prompt":"\([^"]*\)".*/\1/p')
          printf '"%s"\n' "$p"
`

// A pipeline over MCP: its dispatch lists the compiled task graph, the
// server runs it (stratum_parallel_start), a poll carrying a progress token
// gets each task's events as the original's stream envelopes, and the step's
// result counts items.
func TestPipelineServerDispatchedProgress(t *testing.T) {
	onBoth(t, testPipelineServerDispatchedProgress)
}

func testPipelineServerDispatchedProgress(t *testing.T) {
	var mu sync.Mutex
	var msgs []string
	arrived := make(chan struct{}, 1)
	s, _ := startInRepoWith(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		msgs = append(msgs, req.Params.Message)
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
	}})
	r := s.ok("stratum_plan", map[string]any{"spec": pipelineSpec, "flow": "main", "inputs": map[string]any{"items": []any{"x", "skip"}}},
		map[string]any{"status": "parallel_dispatch", "step_mode": "parallel_dispatch", "pipeline": true})
	id := r["flow_id"].(string)
	if n := len(r["tasks"].([]any)); n != 4 {
		t.Fatalf("%d tasks in the dispatch", n)
	}
	s.ok("stratum_parallel_start", map[string]any{"flow_id": id, "step_id": "pipe"},
		map[string]any{"status": "started", "task_count": float64(4), "tasks": []any{"pipe::item0::stage0", "pipe::item0::stage1", "pipe::item1::stage0", "pipe::item1::stage1"}})
	s.token = "tok-1"
	p := s.pollUntil(id, "pipe")
	out := p["outcome"].(map[string]any)
	if out["status"] != "complete" {
		t.Fatalf("outcome: %v", out)
	}
	items := out["output"].(map[string]any)["items"].([]any)
	if a, b := items[0].(map[string]any), items[1].(map[string]any); a["result"] != "b:a:x" || b["result"] != "a:skip" || b["status"] != "complete" {
		t.Fatalf("items: %v", items)
	}
	// The server writes a poll's notifications before its answer, but the
	// SDK's client hands notifications to the handler in a goroutine of
	// their own and returns the call when its answer is read: the last
	// events can reach the handler just after the poll returned.
	wants := []string{"pipe::item0::stage1 agent_started ", "pipe::item0::stage1 task_state complete", "pipe::item1::stage1 task_state skipped"}
	deadline := time.After(10 * time.Second)
	for {
		mu.Lock()
		kinds := progressKinds(t, id, msgs)
		all := strings.Join(msgs, "\n")
		mu.Unlock()
		var missing []string
		for _, want := range wants {
			if !kinds[want] {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 {
			return
		}
		t.Logf("after the poll's answer, waiting for %q", missing)
		select {
		case <-arrived:
		case <-deadline:
			t.Fatalf("no progress events %q in %s", missing, all)
		}
	}
}

// progressKinds checks the envelopes of a fan-out's progress messages and
// returns them as "task_id kind state".
func progressKinds(t *testing.T, flowID string, msgs []string) map[string]bool {
	t.Helper()
	kinds := map[string]bool{}
	for _, m := range msgs {
		var ev map[string]any
		if err := json.Unmarshal([]byte(m), &ev); err != nil {
			t.Fatalf("progress message is not JSON: %q", m)
		}
		if ev["schema_version"] != "0.2.7" || ev["flow_id"] != flowID || ev["step_id"] != "pipe" || ev["reply_required"] != false {
			t.Errorf("envelope: %v", ev)
		}
		tid, _ := ev["task_id"].(string)
		kinds[tid+" "+ev["kind"].(string)+" "+stateOf(ev)] = true
	}
	return kinds
}

func stateOf(ev map[string]any) string {
	m, _ := ev["metadata"].(map[string]any)
	s, _ := m["state"].(string)
	return s
}

const certPipelineSpec = `version: "0.3"
flows:
  main:
    input: {items: {type: array}}
    steps:
      - id: pipe
        type: pipeline
        source: "$.input.items"
        isolation: none
        require: any
        stages:
          - {intent_template: "a:{item}", task_reasoning_template: {}}
          - {intent_template: "b:{item}"}
        run: |
          in=$(cat)
          case "$in" in
            *a:bad*) echo '{"artifact": "none"}' ;;
            *"You MUST structure your response"*) echo '{"artifact": "## Premises [P1] ## Trace ## Conclusion [P1]"}' ;;
            *) echo '{"artifact": "not instructed"}' ;;
          esac
`

// A server-run pipeline over MCP tells a stage its certificate's sections
// (the task answers them only when instructed) and checks the task when
// it ends: the poll shows the failing task's cert_violations, its item's
// next stage never runs, the sibling item completes.
func TestPipelineServerCertificates(t *testing.T) { onBoth(t, testPipelineServerCertificates) }

func testPipelineServerCertificates(t *testing.T) {
	s, _ := startInRepo(t)
	r := s.ok("stratum_plan", map[string]any{"spec": certPipelineSpec, "flow": "main", "inputs": map[string]any{"items": []any{"ok", "bad"}}},
		map[string]any{"status": "parallel_dispatch", "pipeline": true})
	id := r["flow_id"].(string)
	s.ok("stratum_parallel_start", map[string]any{"flow_id": id, "step_id": "pipe"}, map[string]any{"status": "started"})
	p := s.pollUntil(id, "pipe")
	if out := p["outcome"].(map[string]any); out["status"] != "complete" {
		t.Fatalf("outcome: %v", out)
	}
	tasks := p["tasks"].(map[string]any)
	bad := tasks["pipe::item1::stage0"].(map[string]any)
	want := []any{"certificate missing section: Premises", "certificate missing section: Trace", "certificate missing section: Conclusion"}
	if bad["state"] != "failed" || fmt.Sprint(bad["cert_violations"]) != fmt.Sprint(want) {
		t.Errorf("the uncertified task: %v", bad)
	}
	if st := tasks["pipe::item1::stage1"].(map[string]any)["state"]; st != "cancelled" {
		t.Errorf("its item's next stage: %v, want cancelled", st)
	}
	for _, id := range []string{"pipe::item0::stage0", "pipe::item0::stage1"} {
		if st := tasks[id].(map[string]any)["state"]; st != "complete" {
			t.Errorf("%s: %v, want complete", id, st)
		}
	}
}
