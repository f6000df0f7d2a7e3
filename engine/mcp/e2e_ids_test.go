package mcp_test

import (
	"context"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// TestFlowIDPrefixes: every tool taking flow_id accepts a unique prefix of
// at least 4 characters; a shorter or unknown one answers the original's
// flow_not_found; an ambiguous one answers ambiguous_flow_id with the
// candidates.
func TestFlowIDPrefixes(t *testing.T) { onBoth(t, testFlowIDPrefixes) }

func testFlowIDPrefixes(t *testing.T) {
	s := start(t)
	id, _ := s.plan("main", map[string]any{"x": "p"}, nil)
	short := id[:8]

	s.ok("stratum_resume", map[string]any{"flow_id": short}, map[string]any{"status": "execute_step", "flow_id": id})
	s.ok("stratum_commit", map[string]any{"flow_id": short, "label": "start"}, map[string]any{"status": "committed", "flow_id": id})
	s.ok("stratum_step_done", map[string]any{"flow_id": short, "step_id": "build", "result": map[string]any{"ok": true, "n": 1}},
		map[string]any{"status": "await_gate", "flow_id": id})
	s.ok("stratum_check_timeouts", map[string]any{"flow_id": id[:4]}, map[string]any{"status": "no_timeout"})
	s.ok("stratum_wait_gate", map[string]any{"flow_id": short, "timeout_seconds": 0.05}, map[string]any{"status": "await_gate", "flow_id": id})
	s.ok("stratum_gate_resolve", map[string]any{"flow_id": short, "step_id": "review", "outcome": "approve", "rationale": "ok", "resolved_by": "agent"},
		map[string]any{"status": "complete", "flow_id": id})
	s.ok("stratum_audit", map[string]any{"flow_id": id[:4]}, map[string]any{"status": "complete", "flow_id": id})

	// Too short or unknown: exactly what an unknown full id answers.
	want, _ := s.call("stratum_audit", map[string]any{"flow_id": "no-such-flow"})
	for _, bad := range []string{id[:3], "zzzzzzzz"} {
		for _, tool := range []string{"stratum_audit", "stratum_resume", "stratum_check_timeouts", "stratum_wait_gate"} {
			got, _ := s.call(tool, map[string]any{"flow_id": bad})
			if got["error_type"] != "flow_not_found" || got["status"] != "error" || len(got) != len(want) {
				t.Errorf("%s %q: %v, want %v", tool, bad, got, want)
			}
		}
	}

	// Two flows whose ids share a prefix.
	st := s.openStore()
	ids := []string{"abcd1111-aaaa", "abcd2222-bbbb"}
	n := 0
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st, NewID: func() string { n++; return ids[n-1] }}
	for range ids {
		if _, err := svc.Plan(context.Background(), flowSpec, "main", map[string]any{"x": "a"}, engine.PlanOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"stratum_resume", "stratum_audit", "stratum_step_done", "stratum_gate_resolve", "stratum_wait_gate"} {
		args := map[string]any{"flow_id": "abcd"}
		switch tool {
		case "stratum_step_done":
			args = map[string]any{"flow_id": "abcd", "step_id": "build", "result": map[string]any{"ok": true}}
		case "stratum_gate_resolve":
			args = map[string]any{"flow_id": "abcd", "step_id": "review", "outcome": "approve", "rationale": "", "resolved_by": "agent"}
		}
		s.ok(tool, args, map[string]any{"status": "error", "error_type": "ambiguous_flow_id",
			"candidates": []any{"abcd1111-aaaa", "abcd2222-bbbb"},
			"message":    "Flow id prefix 'abcd' is ambiguous: it matches 2 flows (abcd1111-aaaa, abcd2222-bbbb); give more characters"})
	}
	s.ok("stratum_resume", map[string]any{"flow_id": "abcd2"}, map[string]any{"status": "execute_step", "flow_id": "abcd2222-bbbb"})
}
