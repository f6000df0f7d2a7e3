package engine

import (
	"reflect"
	"testing"
)

// An ensure builtin that finds violations (plan_completion,
// vocabulary_compliance) has each reported as one violation, as the
// original's ensure loop does, not one "raised" message.
func TestEnsureBuiltinViolations(t *testing.T) {
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: implement
        intent: "Implement the plan"
        retries: 2
        ensure:
          - "plan_completion(result.plan_items, result.files_changed, 90)"
`
	f, r := plan(t, src, "main", nil)
	plan := []any{
		map[string]any{"text": "parser", "file": "a.go"},
		map[string]any{"text": "docs", "file": "README.md"},
	}
	r = f.stepDone("implement", map[string]any{"plan_items": plan, "files_changed": []any{"a.go"}})
	if r["status"] != "ensure_failed" {
		t.Fatalf("%s", show(r))
	}
	want := []string{"Plan completion 50% is below threshold 90%", "Missing item: docs (expected in README.md)"}
	if got := strs(r["violations"]); !reflect.DeepEqual(got, want) {
		t.Fatalf("violations %q, want %q", got, want)
	}
	r = f.stepDone("implement", map[string]any{"plan_items": plan, "files_changed": []any{"a.go", "README.md"}})
	if r["status"] != "complete" {
		t.Fatalf("%s", show(r))
	}
}
