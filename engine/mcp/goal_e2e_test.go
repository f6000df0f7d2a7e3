package mcp_test

import (
	"os"
	"path/filepath"
	"testing"
)

// A goal over MCP with a fake worker (the claude agent) and a fake verifier
// (the judge agent): advisory pauses at the met turn, status and decide
// answer the original's shapes, archive ends it.
func TestGoalOverMCP(t *testing.T) {
	home := t.TempDir()
	worker := filepath.Join(home, "worker.sh")
	verifier := filepath.Join(home, "verifier.sh")
	answer := `{"predicate_id": "tests", "verdict": "met", "confidence": 9, "reason": "the worker ran them", "evidence": [{"source": "artifacts/worker_output.txt:1", "quote": "12 passed"}]}`
	for p, text := range map[string]string{
		worker:                             "#!/bin/sh\ncat > /dev/null\necho 'ran the tests: 12 passed'\n",
		verifier:                           "#!/bin/sh\ncat > /dev/null\necho '" + answer + "'\n",
		filepath.Join(home, "config.yaml"): "agents:\n  claude: [sh, " + worker + "]\n  judge: [sh, " + verifier + "]\n",
	} {
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := startIn(t, home)
	args := map[string]any{"goal_id": "feat-1", "mode": "advisory", "prompt": "make the tests pass",
		"predicates": []any{map[string]any{"id": "tests", "type": "verified", "statement": "the tests pass"}}}
	r := s.ok("stratum_goal", args, map[string]any{"status": "awaiting_decision", "goal_id": "feat-1", "goal_version": "1.0",
		"mode": "advisory", "turns_run": 1, "round": 1, "met": true, "clean": true})
	if wr := r["worker_runs"].([]any); len(wr) != 1 {
		t.Errorf("worker_runs %v", wr)
	}
	s.ok("stratum_goal_status", map[string]any{"goal_id": "feat-1"}, map[string]any{"status": "awaiting_decision", "turns_run": 1})
	s.ok("stratum_goal_decide", map[string]any{"goal_id": "feat-1", "decision": "confirm", "note": "looks right"},
		map[string]any{"status": "complete", "outcome": "approve", "goal_status": "met"})
	s.ok("stratum_goal", args, map[string]any{"status": "met"})
	s.ok("stratum_goal_archive", map[string]any{"goal_id": "feat-1"}, map[string]any{"status": "complete"})
	s.ok("stratum_goal_status", map[string]any{"goal_id": "feat-1"}, map[string]any{"status": "error", "error_type": "GoalNotFoundError"})
	s.ok("stratum_goal_archive", map[string]any{"goal_id": "feat-1"}, map[string]any{"status": "already_archived"})
}
