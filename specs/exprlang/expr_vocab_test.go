package exprlang

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stratum-go/stratum/specs"
)

// The change-wide ensure builtins of the original's newer releases answer
// True or fail with a list of violations, each reported on its own.
func TestVocabularyCompliance(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("vocab.yaml", "flow_id:\n  reject: [workflow_id, run_id]\n  reason: one name for one thing\nstep:\n  reject: [stage]\n")
	write("empty.yaml", "# nothing yet\n")
	write("bad.yaml", "flow_id:\n  reject: [flow_id]\n")
	write("typo.yaml", "flow_id:\n  rejects: [x]\n")
	write("src/a.go", "var workflow_id = run_id\n// the stage\nmy_stage stage_x\r\nréstage stage\n")
	write("src/clean.go", "flow_id step\n")
	tests := []struct {
		name, src string
		want      []string // nil: True
		raised    string   // a plain error
	}{
		{"clean", "vocabulary_compliance('vocab.yaml', ['src/clean.go'])", nil, ""},
		{"no vocabulary", "vocabulary_compliance('missing.yaml', ['src/a.go'])", nil, ""},
		{"empty vocabulary", "vocabulary_compliance('empty.yaml', ['src/a.go'])", nil, ""},
		{"no files", "vocabulary_compliance('vocab.yaml', [])", nil, ""},
		{"missing file", "vocabulary_compliance('vocab.yaml', ['src/gone.go'])", nil, ""},
		{"outside the root", "vocabulary_compliance('vocab.yaml', ['../a.go'])", nil, ""},
		{"violations", "vocabulary_compliance('vocab.yaml', ['src/a.go', './src/a.go'])", []string{
			"vocabulary violation: src/a.go:1 uses 'workflow_id' — canonical is 'flow_id' (reason: one name for one thing)",
			"vocabulary violation: src/a.go:1 uses 'run_id' — canonical is 'flow_id' (reason: one name for one thing)",
			"vocabulary violation: src/a.go:2 uses 'stage' — canonical is 'step'",
			"vocabulary violation: src/a.go:4 uses 'stage' — canonical is 'step'",
		}, ""},
		{"self rejection", "vocabulary_compliance('bad.yaml', ['src/a.go'])", []string{
			"vocabulary.yaml schema error: canonical 'flow_id' cannot reject itself"}, ""},
		{"unknown field", "vocabulary_compliance('typo.yaml', ['src/a.go'])", []string{
			"vocabulary.yaml schema error: entry for 'flow_id' has unknown fields: ['rejects']. Allowed: ['reason', 'reject']"}, ""},
		{"git fallback", "vocabulary_compliance('vocab.yaml', [], True)", nil,
			"vocabulary_compliance(): git_fallback is not supported: expressions never run processes; pass the changed files in files_changed"},
		{"files not a list", "vocabulary_compliance('vocab.yaml', 'src/a.go')", nil,
			"vocabulary_compliance() files_changed must be a list, not str"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkBuiltinEnsure(t, tt.src, specs.EvalEnv{Root: root}, tt.want, tt.raised)
		})
	}
}

func TestPlanCompletion(t *testing.T) {
	items := []any{
		map[string]any{"text": "parser", "file": "a.go", "critical": true},
		map[string]any{"text": "docs", "file": "README.md"},
		map[string]any{"text": "think", "file": nil},
		map[string]any{"text": "tests", "file": "a_test.go"},
	}
	tests := []struct {
		name   string
		result map[string]any
		src    string
		want   []string
		raised string
	}{
		{"empty plan", map[string]any{"plan": []any{}, "files": []any{}}, "plan_completion(result.plan, result.files)", nil, ""},
		{"all done", map[string]any{"plan": items, "files": []any{"a.go", "README.md", "a_test.go"}}, "plan_completion(result.plan, result.files)", nil, ""},
		{"below threshold", map[string]any{"plan": items, "files": []any{"a.go", "a_test.go"}}, "plan_completion(result.plan, result.files)", []string{
			"Plan completion 75% is below threshold 90%", "Missing item: docs (expected in README.md)"}, ""},
		{"at a lower threshold", map[string]any{"plan": items, "files": []any{"a.go", "a_test.go"}}, "plan_completion(result.plan, result.files, 75)", nil, ""},
		{"critical missing", map[string]any{"plan": items, "files": []any{"README.md", "a_test.go"}}, "plan_completion(result.plan, result.files, 0)", []string{
			"Missing critical item: parser (expected in a.go)"}, ""},
		{"rounding", map[string]any{"plan": items[1:2], "files": nil}, "plan_completion(result.plan + result.plan + [{'text': 'x'}] * 6, result.files, 80)", []string{
			"Plan completion 75% is below threshold 80%", "Missing item: docs (expected in README.md)", "Missing item: docs (expected in README.md)"}, ""},
		{"not a list", map[string]any{"plan": "x", "files": nil}, "plan_completion(result.plan, result.files)", nil,
			"plan_completion() plan_items must be a list, not str"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkBuiltinEnsure(t, tt.src, specs.EvalEnv{Result: tt.result}, tt.want, tt.raised)
		})
	}
}

func checkBuiltinEnsure(t *testing.T, src string, env specs.EvalEnv, want []string, raised string) {
	t.Helper()
	e, err := Compile(specs.ExprEnsure, src)
	if err != nil {
		t.Fatalf("compile %q: %v", src, err)
	}
	ok, err := e.EvalBool(env)
	var xe *specs.ExprError
	switch {
	case raised != "":
		if !errors.As(err, &xe) || xe.Message != raised || xe.Violations != nil {
			t.Fatalf("%s: got %v, %#v; want error %q", src, ok, err, raised)
		}
	case want == nil:
		if err != nil || !ok {
			t.Fatalf("%s: got %v, %v; want True", src, ok, err)
		}
	default:
		if !errors.As(err, &xe) || !reflect.DeepEqual(xe.Violations, want) {
			t.Fatalf("%s: got %v, %#v\nwant violations %q", src, ok, err, want)
		}
	}
}
