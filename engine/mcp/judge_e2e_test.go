package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/judge"
	"github.com/stratum-go/stratum/engine/state"
)

const judgeSpec = `version: "0.3"
flows:
  build:
    input: {}
    steps:
      - id: verify
        agent: claude
        retries: 2
        ensure: ["result.met == True"]
        judge:
          stakes: paranoid
          budget: {max_turns: 3}
          predicates:
            - id: report
              type: deterministic
              statement: "file_contains('artifacts/pytest.txt', '12 passed')"
            - id: tests
              type: verified
              statement: "the tests pass"
`

// fakeVerifiers writes the judge's agents into home's configuration: the
// verifier cites the staged report; the adversary first tries to rewrite
// the evidence, then says met.
func fakeVerifiers(t *testing.T, home string) {
	t.Helper()
	verifier := filepath.Join(home, "verifier.sh")
	adversary := filepath.Join(home, "adversary.sh")
	answer := `{"predicate_id": "tests", "verdict": "met", "confidence": 9, "reason": "pytest says 12 passed", "evidence": [{"source": "artifacts/pytest.txt:1", "quote": "12 passed"}]}`
	write := func(p, text string) {
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(verifier, "#!/bin/sh\ncat > /dev/null\ntest \"$STRATUM_JUDGE_TIER\" = T2 || exit 3\necho '"+answer+"'\n")
	write(adversary, "#!/bin/sh\ncat > /dev/null\necho '0 passed' > artifacts/pytest.txt 2>/dev/null\necho '"+answer+"'\n")
	write(filepath.Join(home, "config.yaml"), "agents:\n  judge: [sh, "+verifier+"]\n  judge-adversary: [sh, "+adversary+"]\n")
}

func TestJudgeOverMCP(t *testing.T) {
	home := t.TempDir()
	fakeVerifiers(t, home)
	s := startIn(t, home)
	preds := []any{
		map[string]any{"id": "report", "type": "deterministic", "statement": "file_contains('artifacts/pytest.txt', '12 passed')"},
		map[string]any{"id": "tests", "type": "verified", "statement": "the tests pass"},
	}
	out := s.ok("stratum_plan", map[string]any{"spec": judgeSpec, "flow": "build"}, map[string]any{
		"status": "execute_step", "step_mode": "judge", "step_id": "verify", "stakes": "paranoid",
		"budget": map[string]any{"max_turns": 3}, "predicates": preds, "retries_remaining": 2,
	})
	flowID := out["flow_id"].(string)
	args := func(over map[string]any) map[string]any {
		a := map[string]any{"flow_id": flowID, "step_id": "verify", "predicates": preds, "stakes": "paranoid",
			"budget": map[string]any{"max_turns": 3}, "artifacts": map[string]any{"pytest": "collected 12\n12 passed\n"}}
		for k, v := range over {
			a[k] = v
		}
		return a
	}
	// The payload must be the dispatch's.
	s.ok("stratum_judge", args(map[string]any{"stakes": "default"}), map[string]any{"status": "error", "error_type": "stakes_mismatch"})
	s.ok("stratum_judge", args(map[string]any{"predicates": preds[:1]}), map[string]any{"status": "error", "error_type": "predicates_mismatch"})
	s.ok("stratum_judge", args(map[string]any{"budget": map[string]any{"max_turns": 9}}), map[string]any{"status": "error", "error_type": "budget_mismatch"})
	s.ok("stratum_judge", args(map[string]any{"step_id": "other"}), map[string]any{"status": "error", "error_type": "step_mismatch"})

	// Tier 1 and tier 2 say met; the adversary rewrote its copy of the
	// evidence, so its verdict is void and the predicate ambiguous.
	res := s.ok("stratum_judge", args(nil), map[string]any{"judge_version": "1.0", "met": false, "clean": false, "stakes": "paranoid"})
	if c := res["budget_consumed"].(map[string]any); c["turns"] != 1.0 {
		t.Fatalf("budget_consumed %v", c)
	}
	ps := res["predicates"].([]any)
	first, second := ps[0].(map[string]any), ps[1].(map[string]any)
	if first["verdict"] != "met" || second["verdict"] != "ambiguous" {
		t.Fatalf("verdicts %v %v", first["verdict"], second["verdict"])
	}
	hist := second["tier_history"].([]any)
	if len(hist) != 3 || !strings.Contains(hist[2].(map[string]any)["reason"].(string), "changed its read-only copy") {
		t.Fatalf("tier history %s", canon(t, hist))
	}
	if ev := second["evidence"].([]any); len(ev) != 1 || ev[0].(map[string]any)["source"] != "artifacts/pytest.txt:1" {
		t.Fatalf("evidence %s", canon(t, ev))
	}
	// The turn is a judge_verdict event with the verdict and its evidence
	// (the TUI's Trace pane shows it).
	var evs []engine.Event
	if err := s.openStore().View(context.Background(), func(tx engine.Tx) (err error) { evs, err = tx.FlowEvents(flowID); return err }); err != nil {
		t.Fatal(err)
	}
	var verdict *state.JudgeVerdict
	for _, ev := range evs {
		if p, ok := ev.Data.(engine.JudgeVerdict); ok && ev.StepID == "verify" {
			verdict = p.Judge
		}
	}
	if verdict == nil || verdict.Met || len(verdict.Predicates) != 2 || verdict.Predicates[1].Verdict != "ambiguous" ||
		len(verdict.Predicates[1].Evidence) != 1 || verdict.Predicates[1].Evidence[0].Source != "artifacts/pytest.txt:1" {
		t.Fatalf("judge_verdict event %+v", verdict)
	}
	staged := filepath.Join(home, "judge", flowID, "verify", "turn-1")
	if b, err := judge.ReadStaged(staged, "artifacts/pytest.txt"); err != nil || string(b) != "collected 12\n12 passed\n" {
		t.Fatalf("staged evidence %q %v", b, err)
	}
	// The verdict is the step's result; its ensure decides.
	s.ok("stratum_step_done", map[string]any{"flow_id": flowID, "step_id": "verify", "result": res},
		map[string]any{"status": "ensure_failed", "violations": []any{"ensure 'result.met == True' failed"}, "retries_remaining": 1})
	audit := s.ok("stratum_audit", map[string]any{"flow_id": flowID}, map[string]any{})
	outcome := audit["judge_outcome"].(map[string]any)["verify"].(map[string]any)
	if outcome["met"] != false || len(audit["judge_history"].(map[string]any)["verify"].([]any)) != 4 {
		t.Fatalf("audit %s", canon(t, audit))
	}
}

// stratum_decompose fails open: a model it cannot reach gives no
// predicates, applied false and the reason, never a made-up draft.
func TestDecomposeFailsOpen(t *testing.T) {
	s := start(t)
	s.ok("stratum_decompose", map[string]any{"prompt": "Add a --json flag to stratum migrate", "model": "nosuchprovider/x"},
		map[string]any{"predicates": []any{}, "applied": false, "reason": "decompose_error:CompletionError", "model": "nosuchprovider/x"})
}
