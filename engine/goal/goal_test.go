package goal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/internal/judge"
)

// verifier answers the verdicts in order (the last one repeated).
type verifier struct {
	mu       sync.Mutex
	verdicts []string
	asked    int
}

func (v *verifier) Verify(_ context.Context, req judge.VerifyRequest) (judge.Answer, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	verdict := v.verdicts[min(v.asked, len(v.verdicts)-1)]
	v.asked++
	b, _ := json.Marshal(map[string]any{"predicate_id": req.Predicate, "verdict": verdict, "confidence": 9, "reason": "read it",
		"evidence": []any{map[string]any{"source": "artifacts/worker_output.txt:1", "quote": "12 passed"}}})
	return judge.Answer{Text: string(b), Agent: "fake"}, nil
}

type fixture struct {
	s       *Service
	v       *verifier
	prompts []string
}

func newFixture(t *testing.T, verdicts ...string) *fixture {
	t.Helper()
	f := &fixture{v: &verifier{verdicts: verdicts}}
	f.s = &Service{Store: enginetest.New(), JudgeRoot: t.TempDir(),
		Verifier: func(string) (judge.Verifier, error) { return f.v, nil },
		Worker: func(_ context.Context, agent, prompt, _ string) (string, string, error) {
			f.prompts = append(f.prompts, prompt)
			return "ran the tests: 12 passed", "corr-" + agent, nil
		}}
	return f
}

var testsPass = []map[string]any{{"id": "tests", "type": "verified", "statement": "the tests pass"}}

func (f *fixture) run(t *testing.T, in Request) engine.Response {
	t.Helper()
	if in.GoalID == "" {
		in.GoalID = "g1"
	}
	if in.Predicates == nil {
		in.Predicates = testsPass
	}
	if in.Prompt == "" {
		in.Prompt = "make the tests pass"
	}
	r, err := f.s.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func expect(t *testing.T, what string, got engine.Response, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, _ := json.Marshal(got[k])
		ww, _ := json.Marshal(w)
		if string(g) != string(ww) {
			b, _ := json.Marshal(got)
			t.Fatalf("%s: %s = %s, want %s\n%s", what, k, g, ww, b)
		}
	}
}

// Advisory: turns until met, then a pause for a person; reject sends the
// note into the next turn's prompt; confirm ends it met.
func TestAdvisory(t *testing.T) {
	f := newFixture(t, "not_met", "met")
	r := f.run(t, Request{Mode: "advisory"})
	expect(t, "first call", r, map[string]any{"status": "awaiting_decision", "turns_run": 2, "round": 2, "met": true, "goal_version": "1.0",
		"mode": "advisory", "goal_id": "g1"})
	po := r["predicate_outcomes"].([]any)[0].(map[string]any)
	if po["awaiting_human"] != true || po["bound_autonomously"] != false || po["judge_verdict"] != "met" {
		t.Errorf("predicate outcome %v", po)
	}
	if len(f.prompts) != 2 || !strings.Contains(f.prompts[1], "tests: not_met") {
		t.Errorf("the second turn's prompt lacks the feedback:\n%s", f.prompts[1])
	}
	expect(t, "again", f.run(t, Request{Mode: "advisory"}), map[string]any{"status": "awaiting_decision", "turns_run": 2})
	st, _ := f.s.Status(context.Background(), IDRequest{GoalID: "g1"})
	expect(t, "status", st, map[string]any{"status": "awaiting_decision", "turns_run": 2, "mode": "advisory"})
	d, _ := f.s.Decide(context.Background(), DecideRequest{GoalID: "g1", Decision: "reject", Note: "also cover the error path"})
	expect(t, "reject", d, map[string]any{"outcome": "revise", "goal_status": "in_progress"})
	expect(t, "after reject", f.run(t, Request{Mode: "advisory"}), map[string]any{"status": "awaiting_decision", "turns_run": 3})
	if !strings.Contains(f.prompts[2], "[Human override]\nalso cover the error path") {
		t.Errorf("the note is not in the prompt:\n%s", f.prompts[2])
	}
	d, _ = f.s.Decide(context.Background(), DecideRequest{GoalID: "g1", Decision: "confirm"})
	expect(t, "confirm", d, map[string]any{"status": "complete", "goal_status": "met"})
	expect(t, "met", f.run(t, Request{Mode: "advisory"}), map[string]any{"status": "met", "turns_run": 3})
	d, _ = f.s.Decide(context.Background(), DecideRequest{GoalID: "g1", Decision: "kill"})
	expect(t, "no pending", d, map[string]any{"error_type": "no_pending_decision"})
	st, _ = f.s.Status(context.Background(), IDRequest{GoalID: "g1"})
	if gh := st["gate_history"].([]any); len(gh) != 2 {
		t.Errorf("gate history %v", gh)
	}
}

// Autonomous binds when every met predicate's type is allowed, else it
// waits like advisory.
func TestAutonomous(t *testing.T) {
	f := newFixture(t, "met")
	r := f.run(t, Request{Mode: "autonomous", Autonomy: map[string]bool{"verified": true}})
	expect(t, "bound", r, map[string]any{"status": "met", "turns_run": 1})
	if po := r["predicate_outcomes"].([]any)[0].(map[string]any); po["bound_autonomously"] != true || po["awaiting_human"] != false {
		t.Errorf("outcome %v", po)
	}
	r = f.run(t, Request{GoalID: "g2", Mode: "autonomous"})
	expect(t, "not allowed", r, map[string]any{"status": "awaiting_decision"})
	d, _ := f.s.Decide(context.Background(), DecideRequest{GoalID: "g2", Decision: "kill"})
	expect(t, "kill", d, map[string]any{"status": "killed"})
	expect(t, "killed", f.run(t, Request{GoalID: "g2", Mode: "autonomous"}), map[string]any{"status": "killed"})
}

// Shadow never binds and says what it would have decided; the turns run
// out as budget_exhausted; observed judges the caller's artifacts once.
func TestShadow(t *testing.T) {
	f := newFixture(t, "not_met")
	r := f.run(t, Request{Mode: "shadow", Budget: map[string]any{"max_turns": 2.0}})
	expect(t, "exhausted", r, map[string]any{"status": "budget_exhausted", "turns_run": 2, "would_have_decided": "not_met"})
	f = newFixture(t, "met")
	expect(t, "met", f.run(t, Request{Mode: "shadow"}), map[string]any{"status": "met", "would_have_decided": "met", "turns_run": 1})
	obs := f.run(t, Request{GoalID: "obs", Mode: "shadow", ShadowSource: "observed",
		Predicates:        []map[string]any{{"id": "report", "type": "deterministic", "statement": "file_exists('artifacts/report.txt')"}},
		ObservedArtifacts: map[string]string{"report": "all good"}})
	expect(t, "observed", obs, map[string]any{"status": "met", "turns_run": 1, "would_have_decided": "met"})
	if len(f.prompts) != 1 {
		t.Errorf("observed ran the worker: %d prompts", len(f.prompts))
	}
}

// Bad calls answer the original's errors; a goal's predicates and mode are
// fixed by its first call; an archived goal is gone.
func TestGoalErrors(t *testing.T) {
	f := newFixture(t, "not_met")
	for _, c := range []struct {
		in   Request
		want string
	}{
		{Request{Mode: "advisory", Decomposer: "ask"}, "invalid_decomposer"},
		{Request{Mode: "advisory", Decomposer: "auto"}, "not_supported"},
		{Request{Mode: "yolo"}, "invalid_mode"},
		{Request{Mode: "advisory", Predicates: []map[string]any{{"id": "x", "type": "vibes", "statement": "s"}}}, "invalid_predicate"},
		{Request{Mode: "advisory", Predicates: []map[string]any{{"id": "x", "type": "deterministic", "statement": "import os"}}}, "invalid_predicate"},
		{Request{Mode: "advisory", Stakes: "huge"}, "invalid_stakes"},
		{Request{Mode: "advisory", ShadowSource: "observed"}, "invalid_arguments"},
	} {
		expect(t, c.want, f.run(t, c.in), map[string]any{"status": "error", "error_type": c.want})
	}
	f.run(t, Request{Mode: "advisory", Budget: map[string]any{"max_turns": 1.0}})
	expect(t, "other mode", f.run(t, Request{Mode: "shadow"}), map[string]any{"error_type": "GoalImmutabilityError"})
	a, _ := f.s.Archive(context.Background(), IDRequest{GoalID: "g1"})
	expect(t, "archive", a, map[string]any{"status": "complete"})
	a, _ = f.s.Archive(context.Background(), IDRequest{GoalID: "g1"})
	expect(t, "archive again", a, map[string]any{"status": "already_archived"})
	st, _ := f.s.Status(context.Background(), IDRequest{GoalID: "g1"})
	expect(t, "status after archive", st, map[string]any{"error_type": "GoalNotFoundError"})
	expect(t, "reuse", f.run(t, Request{Mode: "advisory"}), map[string]any{"error_type": "GoalArchivedError"})
}

// stagingVerifier records whether each question's staged turn holds the
// worker's modified file.
type stagingVerifier struct {
	verifier
	seen []string
}

func (v *stagingVerifier) Verify(ctx context.Context, req judge.VerifyRequest) (judge.Answer, error) {
	b, err := os.ReadFile(filepath.Join(req.Dir, "modified", "a.txt"))
	v.mu.Lock()
	if err == nil {
		v.seen = append(v.seen, string(b))
	} else {
		v.seen = append(v.seen, "missing")
	}
	v.mu.Unlock()
	return v.verifier.Verify(ctx, req)
}

// A worker turn's modified files (Service.Modified, read in worker.cwd)
// are staged for the judge under modified/.
func TestTurnStagesModifiedFiles(t *testing.T) {
	f := newFixture(t, "met")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("changed by the worker"), 0o644); err != nil {
		t.Fatal(err)
	}
	sv := &stagingVerifier{verifier: verifier{verdicts: []string{"met"}}}
	f.s.Verifier = func(string) (judge.Verifier, error) { return sv, nil }
	var asked []string
	f.s.Modified = func(_ context.Context, d string) []string {
		asked = append(asked, d)
		return []string{"a.txt"}
	}
	r := f.run(t, Request{Mode: "autonomous", Autonomy: map[string]bool{"verified": true}, Worker: map[string]any{"cwd": dir}})
	expect(t, "bound", r, map[string]any{"status": "met", "turns_run": 1})
	if len(asked) != 1 || asked[0] != dir {
		t.Errorf("Modified asked for %v, want once for %s", asked, dir)
	}
	if len(sv.seen) == 0 || sv.seen[0] != "changed by the worker" {
		t.Errorf("the verifier's staged turn held modified/a.txt as %v", sv.seen)
	}
}
