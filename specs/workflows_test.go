package specs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDiscoverWorkflows(t *testing.T) {
	dir := filepath.Join("..", "testdata", "workflows")
	list, err := DiscoverWorkflows(dir, testCompile)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	abs, _ = filepath.EvalSymlinks(abs)
	review := filepath.Join(abs, "a-review.stratum.yaml")
	want := []WorkflowInfo{
		{Name: "code-review", Description: "Review a change for security, logic and performance",
			Input: map[string]any{
				"files": map[string]any{"type": "array", "required": true},
				"depth": map[string]any{"type": "string", "default": "standard"},
			}, Path: review},
		{Name: "triage", Description: "Triage a support ticket",
			Input: map[string]any{
				"ticket":   map[string]any{"type": "string", "required": true},
				"priority": map[string]any{"type": "integer", "default": 3},
				"labels":   map[string]any{"type": "array", "default": []any{"bug", "ui"}},
			}, Path: filepath.Join(abs, "e-triage.stratum.yaml")},
	}
	if !reflect.DeepEqual(list.Workflows, want) {
		gb, _ := json.MarshalIndent(list.Workflows, "", "  ")
		t.Errorf("workflows:\n%s", gb)
	}
	if len(list.Errors) != 3 {
		t.Fatalf("errors: %q", list.Errors)
	}
	if !strings.HasPrefix(list.Errors[0], "b-broken.stratum.yaml: ") || !strings.Contains(list.Errors[0], "nowhere") {
		t.Errorf("invalid file error %q", list.Errors[0])
	}
	wantDup := "Duplicate workflow name 'code-review': " + review + " and " + filepath.Join(abs, "d-review-again.stratum.yaml")
	if list.Errors[1] != wantDup {
		t.Errorf("duplicate error\n got %q\nwant %q", list.Errors[1], wantDup)
	}
	if !strings.HasPrefix(list.Errors[2], "f-syntax.stratum.yaml: ") {
		t.Errorf("syntax error entry %q", list.Errors[2])
	}
	for _, e := range list.Errors {
		if strings.Contains(e, "nested") || strings.Contains(e, "notes.yaml") {
			t.Errorf("only *.stratum.yaml directly in the directory: %q", e)
		}
	}
}

func TestDiscoverWorkflowsEmptyAndMissing(t *testing.T) {
	empty := t.TempDir()
	list, err := DiscoverWorkflows(empty, testCompile)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(list)
	if string(b) != `{"workflows":[],"errors":[]}` {
		t.Errorf("empty dir: %s", b)
	}
	if _, err := DiscoverWorkflows(filepath.Join(empty, "missing"), testCompile); err == nil {
		t.Error("missing dir: want an error")
	}
	file := filepath.Join(empty, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DiscoverWorkflows(file, testCompile); err == nil {
		t.Error("a file: want an error")
	}
}

func TestDiscoverWorkflowsRelativePaths(t *testing.T) {
	dir := t.TempDir()
	src := "version: \"0.2\"\nworkflow:\n  name: w\n  description: d\n  input: {}\nflows:\n  main:\n    input: {}\n    steps:\n      - id: s\n        intent: do\n"
	if err := os.WriteFile(filepath.Join(dir, "w.stratum.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	list, err := DiscoverWorkflows(".", testCompile)
	if err != nil || len(list.Workflows) != 1 {
		t.Fatalf("%+v %v", list, err)
	}
	if p := list.Workflows[0].Path; !filepath.IsAbs(p) || filepath.Base(p) != "w.stratum.yaml" {
		t.Errorf("path %q is not absolute", p)
	}
	if in := list.Workflows[0].Input; in == nil || len(in) != 0 {
		t.Errorf("input %#v, want an empty map", in)
	}
}
