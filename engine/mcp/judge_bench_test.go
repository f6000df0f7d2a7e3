package mcp_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	arts := map[string]any{}
	var mod []any
	for i := range 5000 {
		arts[fmt.Sprintf("out%d", i)] = fmt.Sprintf("result %d: 12 passed\n", i)
		rel := fmt.Sprintf("src/d%d/f%d.go", i%50, i)
		if err := os.MkdirAll(filepath.Join(ws, filepath.Dir(rel)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, rel), []byte("package d\n// line "+fmt.Sprint(i)+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		mod = append(mod, rel)
	}
	var spec strings.Builder
	spec.WriteString("version: \"0.3\"\nflows:\n  f:\n    input: {}\n    steps:\n      - id: j\n        judge:\n          stakes: cheap\n          predicates:\n")
	var preds []any
	for i := range 1000 {
		st := fmt.Sprintf(`file_contains('artifacts/out%d.txt', '12 passed') and file_exists('modified/src/d%d/f%d.go')`, i*5, (i*5)%50, i*5)
		fmt.Fprintf(&spec, "            - {id: p%d, type: deterministic, statement: \"%s\"}\n", i, st)
		preds = append(preds, map[string]any{"id": fmt.Sprintf("p%d", i), "type": "deterministic", "statement": st})
	}
	s := startInDir(b, b.TempDir(), ws)
	for b.Loop() {
		b.StopTimer()
		plan := s.ok("stratum_plan", map[string]any{"spec": spec.String(), "flow": "f"}, map[string]any{"step_mode": "judge"})
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

// startInDir is startIn with the server's working directory (the project
// directory of a spec given as text) set to dir.
func startInDir(tb testing.TB, home, dir string) *server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	storeURL := storeFor(tb)
	cmd := exec.Command(bin, "mcp")
	cmd.Env = environ(home, storeURL)
	cmd.Dir = dir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		tb.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	tb.Cleanup(func() { _ = sess.Close() })
	return &server{t: tb, home: home, store: storeURL, sess: sess, stderr: stderr}
}
