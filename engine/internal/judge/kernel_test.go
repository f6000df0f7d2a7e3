package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// scripted answers each question from a table keyed by tier and
// predicate, and records the questions.
type scripted struct {
	answers map[string]string // "T2:p" → answer text
	mode    string
	write   bool // the adversary tries to write into its copy
	asked   []VerifyRequest
}

func (s *scripted) Verify(_ context.Context, req VerifyRequest) (Answer, error) {
	s.asked = append(s.asked, req)
	if s.write && req.Tier == TierT3 {
		_ = os.WriteFile(filepath.Join(req.Dir, "artifacts", "report.txt"), []byte("all good"), 0o644)
		_ = os.WriteFile(filepath.Join(req.Dir, "planted.txt"), []byte("x"), 0o644)
	}
	text, ok := s.answers[req.Tier+":"+req.Predicate]
	if !ok {
		return Answer{}, errors.New("no scripted answer")
	}
	return Answer{Text: text, Agent: "claude", Model: "claude-test", Mode: s.mode}, nil
}

func preds(t *testing.T, stakes string, ps ...string) []*specs.Predicate {
	t.Helper()
	src := "version: \"0.3\"\nflows:\n  f:\n    input: {}\n    steps:\n      - id: j\n        judge:\n          stakes: " + stakes + "\n          predicates:\n"
	for _, p := range ps {
		src += "            - " + p + "\n"
	}
	sp, ds := specs.Parse("t.yaml", []byte(src), exprlang.Compile)
	if sp == nil {
		t.Fatal(ds.Error())
	}
	return sp.Flows["f"].Steps[0].Judge.Predicates
}

const (
	detPass = `{id: d1, type: deterministic, statement: "file_contains('artifacts/report.txt', '12 passed')"}`
	detFail = `{id: d2, type: deterministic, statement: "file_exists('modified/missing.go')"}`
	ver     = `{id: v1, type: verified, statement: "the tests pass"}`
	jud     = `{id: j1, type: judged, statement: "the error message is actionable"}`
)

func ev(src string) string {
	return `{"verdict": "met", "confidence": 9, "reason": "tier2-reasoning", "evidence": [{"source": "` + src + `", "quote": "12 passed"}]}`
}

func run(t *testing.T, stakes string, v Verifier, ps ...string) (*Result, Request, error) {
	t.Helper()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "src", "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_800_000_000, 0)
	req := Request{
		FlowID: "flow-1", StepID: "verify", Predicates: preds(t, stakes, ps...), Stakes: stakes,
		Artifacts: map[string]string{"report": "collected 12\n12 passed\n"}, Modified: []string{"src/a.go", "src/gone.go"},
		Workspace: ws, Root: t.TempDir(), Verifier: v, Now: func() time.Time { return clock },
	}
	r, err := Run(context.Background(), req)
	return r, req, err
}

func TestTiers(t *testing.T) {
	tests := []struct {
		name     string
		stakes   string
		answers  map[string]string
		preds    []string
		verdicts string // id=verdict,…
		met      bool
		errType  string
	}{
		{name: "tier 1 met", stakes: "cheap", preds: []string{detPass}, verdicts: "d1=met", met: true},
		{name: "tier 1 not met", stakes: "cheap", preds: []string{detPass, detFail}, verdicts: "d1=met,d2=not_met"},
		{name: "tier 2 met with evidence", stakes: "default", preds: []string{ver},
			answers: map[string]string{"T2:v1": "```json\n" + ev("artifacts/report.txt:2") + "\n```"}, verdicts: "v1=met", met: true},
		{name: "tier 2 not met", stakes: "default", preds: []string{ver},
			answers: map[string]string{"T2:v1": `{"verdict": "not_met", "confidence": 8, "reason": "3 failed", "evidence": []}`}, verdicts: "v1=not_met"},
		{name: "tier 2 met without evidence", stakes: "default", preds: []string{ver},
			answers: map[string]string{"T2:v1": `Looks fine. {"verdict": "met", "confidence": 9, "reason": "trust me"}`}, verdicts: "v1=ambiguous"},
		{name: "tier 2 below the gate", stakes: "default", preds: []string{ver},
			answers: map[string]string{"T2:v1": strings.Replace(ev("modified/src/a.go:1"), `"confidence": 9`, `"confidence": 6`, 1)}, verdicts: "v1=ambiguous"},
		{name: "tier 2 cites a file not staged", stakes: "default", preds: []string{ver},
			answers: map[string]string{"T2:v1": ev("modified/src/gone.go:1")}, errType: ErrCitation},
		{name: "tier 2 cites outside the bucket", stakes: "default", preds: []string{ver},
			answers: map[string]string{"T2:v1": ev("artifacts/../manifest.json:1")}, errType: ErrCitation},
		{name: "tier 2 answer breaks the contract", stakes: "default", preds: []string{ver},
			answers: map[string]string{"T2:v1": `{"verdict": "probably", "confidence": "high"}`}, errType: ErrVerifierAnswer},
		{name: "tier 3 withstands", stakes: "paranoid", preds: []string{jud},
			answers: map[string]string{"T2:j1": ev("artifacts/report.txt:2"), "T3:j1": ev("artifacts/report.txt:1")}, verdicts: "j1=met", met: true},
		{name: "tier 3 counterexample", stakes: "paranoid", preds: []string{jud},
			answers:  map[string]string{"T2:j1": ev("artifacts/report.txt:2"), "T3:j1": `{"verdict": "not_met", "confidence": 9, "reason": "collected 12 of 13", "evidence": [{"source": "artifacts/report.txt:1", "quote": "collected 12"}]}`},
			verdicts: "j1=ambiguous"},
		{name: "tier 3 fails to answer", stakes: "paranoid", preds: []string{jud},
			answers: map[string]string{"T2:j1": ev("artifacts/report.txt:2")}, verdicts: "j1=ambiguous"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &scripted{answers: tt.answers}
			r, _, err := run(t, tt.stakes, v, tt.preds...)
			if tt.errType != "" {
				var je *Error
				if !errors.As(err, &je) || je.Type != tt.errType {
					t.Fatalf("err %v, want %s", err, tt.errType)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range r.Predicates {
				got = append(got, p.ID+"="+p.Verdict)
			}
			if strings.Join(got, ",") != tt.verdicts || r.Met != tt.met || r.Clean != tt.met {
				t.Fatalf("verdicts %v met %v; want %s %v\n%s", got, r.Met, tt.verdicts, tt.met, show(r))
			}
			if !tt.met && len(r.Findings) == 0 {
				t.Errorf("no findings for an unmet judge")
			}
			for _, q := range v.asked {
				if q.Tier == TierT3 && (strings.Contains(q.Prompt, "tier2-reasoning")) {
					t.Errorf("the adversary saw tier 2's answer: %s", q.Prompt)
				}
			}
		})
	}
}

// A paranoid adversary that tries to write cannot change the evidence: it
// works in a copy, the change is detected, its verdict discarded.
func TestAdversaryCannotWrite(t *testing.T) {
	v := &scripted{write: true, answers: map[string]string{"T2:j1": ev("artifacts/report.txt:2"), "T3:j1": ev("artifacts/report.txt:1")}}
	r, req, err := run(t, "paranoid", v, jud)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Predicates[0]
	if p.Verdict != Ambiguous || !strings.Contains(p.TierHistory[2].Reason, "changed its read-only copy") {
		t.Fatalf("%s", show(r))
	}
	staged := filepath.Join(req.Root, "flow-1", "verify", "turn-1")
	if b, _ := ReadStaged(staged, "artifacts/report.txt"); string(b) != "collected 12\n12 passed\n" {
		t.Fatalf("the staged evidence changed: %q", b)
	}
	if _, err := ReadStaged(staged, "planted.txt"); err == nil {
		t.Fatal("the adversary planted a file in the staged turn")
	}
	if ents, _ := os.ReadDir(staged); len(ents) != 1 || ents[0].Name() != treeArchive {
		t.Fatalf("the turn directory holds %v, want only %s", ents, treeArchive)
	}
	ents, _ := os.ReadDir(filepath.Join(req.Root, "flow-1", "verify"))
	if len(ents) != 1 {
		t.Errorf("copies left behind: %v", ents)
	}
}

func TestRequestErrors(t *testing.T) {
	if _, err := Run(context.Background(), Request{FlowID: "f", StepID: "s", Root: t.TempDir()}); !isType(err, ErrEmptyPredicates) {
		t.Errorf("empty: %v", err)
	}
	// cheap + verified never reaches the kernel from a valid spec; a caller
	// building its own request gets the original's error.
	ps := preds(t, "default", ver)
	_, err := Run(context.Background(), Request{FlowID: "f", StepID: "s", Predicates: ps, Stakes: "cheap", Root: t.TempDir()})
	if !isType(err, ErrStakesMismatch) {
		t.Errorf("cheap: %v", err)
	}
	_, err = Run(context.Background(), Request{FlowID: "f", StepID: "s", Predicates: ps, Root: t.TempDir()})
	if !isType(err, ErrVerifier) {
		t.Errorf("no verifier: %v", err)
	}
}

func TestTurnBudget(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	req := Request{FlowID: "f", StepID: "s", Predicates: preds(t, "cheap", detPass), Stakes: "cheap",
		Budget: &specs.JudgeBudget{MaxTurns: 2}, Artifacts: map[string]string{"report": "12 passed"}, Root: root, Workspace: ws}
	for turn := 1; turn <= 2; turn++ {
		r, err := Run(context.Background(), req)
		if err != nil || r.Consumed.Turns != turn {
			t.Fatalf("turn %d: %v %+v", turn, err, r)
		}
	}
	if _, err := Run(context.Background(), req); !isType(err, ErrBudget) || err.Error() != "turn budget exceeded: next turn would be 3, max_turns=2" {
		t.Fatalf("third turn: %v", err)
	}
}

func TestStagingRefusesEscapes(t *testing.T) {
	for _, c := range []struct {
		arts map[string]string
		mod  []string
	}{
		{map[string]string{"../x": "a"}, nil},
		{map[string]string{".hidden": "a"}, nil},
		{nil, []string{"../etc/passwd"}},
		{nil, []string{"/etc/passwd"}},
	} {
		if _, err := Stage(t.TempDir(), "f", "s", 1, c.arts, c.mod, t.TempDir(), time.Now); !isType(err, ErrStaging) {
			t.Errorf("%v %v: %v", c.arts, c.mod, err)
		}
	}
	ws := t.TempDir()
	if err := os.Symlink("/etc/hostname", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := Stage(t.TempDir(), "f", "s", 1, nil, []string{"link"}, ws, time.Now); !isType(err, ErrStaging) {
		t.Errorf("symlink out of the workspace: %v", err)
	}
	// Among many files read ahead, the one that escapes stops the turn.
	var many []string
	for i := range 300 {
		many = append(many, fmt.Sprintf("d%d/f%d.go", i%7, i))
		mustWrite(t, filepath.Join(ws, many[i]), "package d\n")
	}
	many[150] = "link"
	if _, err := Stage(t.TempDir(), "f", "s", 1, nil, many, ws, time.Now); !isType(err, ErrStaging) || !strings.Contains(err.Error(), `"link"`) {
		t.Errorf("symlink out of the workspace among 300 files: %v", err)
	}
}

func isType(err error, typ string) bool {
	var je *Error
	return errors.As(err, &je) && je.Type == typ
}

func show(r *Result) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

// The JudgeResult is the original's, key for key: the fixture is what the
// original's run_judge returns for its own server test
// (stratum-mcp tests/test_server_judge.py), written from its result.py and
// kernel.py, with the clock stopped.
func TestResultShapeIsTheOriginals(t *testing.T) {
	want, err := os.ReadFile("testdata/original-t1-result.json")
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_800_000_000, 0)
	r, err := Run(context.Background(), Request{
		FlowID: "judge-e2e-1", StepID: "verify", Stakes: "default",
		Predicates: preds(t, "default", `{id: p1, type: deterministic, statement: "file_exists('artifacts/out.txt')"}`),
		Artifacts:  map[string]string{"out": "hello world"}, Root: t.TempDir(), Workspace: t.TempDir(),
		Now: func() time.Time { return clock },
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(r)
	var g, w any
	_ = json.Unmarshal(got, &g)
	_ = json.Unmarshal(want, &w)
	gb, _ := json.MarshalIndent(g, "", " ")
	wb, _ := json.MarshalIndent(w, "", " ")
	if string(gb) != string(wb) {
		t.Fatalf("JudgeResult differs from the original's\n got %s\nwant %s", gb, wb)
	}
	// Keys in the original's to_dict order.
	order := []string{"clean", "summary", "findings", "meta", "consensus", "claude_only", "codex_only", "lenses_run",
		"auto_fixes", "asks", "judge_version", "met", "stakes", "predicates", "tier_disagreements", "budget_consumed", "judge_kernel_meta"}
	last := -1
	for _, k := range order {
		i := strings.Index(string(got), `"`+k+`":`)
		if i <= last {
			t.Fatalf("key %s out of the original's order in %s", k, got)
		}
		last = i
	}
}
