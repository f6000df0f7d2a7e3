package mcp_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine/internal/judge/judgetest"
)

// BenchmarkJudgeOverMCP is BenchmarkTier1 (engine/internal/judge) as an
// agent sees it: one stratum_judge call, over stdio to the built binary
// with a real store, of a judge step of 1,000 deterministic predicates
// with 5,000 artifacts and 5,000 modified files (read from the server's
// project directory) — the arguments' JSON, the payload checks, staging,
// tier 1, recording the turn in the flow, and the JudgeResult back to the
// client (decoded by the SDK). Each call is a new flow's first turn (the
// stratum_plan before it is not timed).
func BenchmarkJudgeOverMCP(b *testing.B) {
	ws := b.TempDir()
	w := judgetest.Write(b, ws)
	arts := map[string]any{}
	for k, v := range w.Artifacts {
		arts[k] = v
	}
	var mod, preds []any
	for _, m := range w.Modified {
		mod = append(mod, m)
	}
	for _, p := range w.Predicates {
		preds = append(preds, map[string]any{"id": p.ID, "type": "deterministic", "statement": p.Statement})
	}
	s := startInDir(b, b.TempDir(), ws)
	for b.Loop() {
		b.StopTimer()
		plan := s.ok("stratum_plan", map[string]any{"spec": w.Spec, "flow": "f"}, map[string]any{"step_mode": "judge"})
		args := map[string]any{"flow_id": plan["flow_id"], "step_id": "j", "predicates": preds, "stakes": "cheap",
			"artifacts": arts, "modified_files": mod}
		b.StartTimer()
		res, err := s.sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "stratum_judge", Arguments: args})
		if err != nil {
			b.Fatalf("stratum_judge: %v\n%s", err, s.stderr.String())
		}
		if out, _ := res.StructuredContent.(map[string]any); out["met"] != true {
			b.Fatalf("stratum_judge: %.500v", out)
		}
	}
}
