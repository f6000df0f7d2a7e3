package specs

import (
	"path/filepath"
	"reflect"
	"testing"
)

// The original's pipeline specs (testdata/specs/valid/v03-pipeline-*,
// written from its tests) parse into stages with their keys, defaults
// and roles.
func TestPipelineIR(t *testing.T) {
	spec, ds := ParseFile(filepath.Join(validCorpusDir, "v03-pipeline-stages.stratum.yaml"), testCompile)
	if spec == nil {
		t.Fatalf("rejected:\n%s", render(ds))
	}
	s := spec.Flows["f"].Step("pipe")
	if s.Kind != KindPipeline || s.StepMode() != "parallel_dispatch" || !s.FansOut() {
		t.Fatalf("kind %s mode %s", s.Kind, s.StepMode())
	}
	if s.MaxConcurrent != 6 || s.Isolation != "none" || s.Require != "all" || s.Merge != "sequential_apply" || s.Retries != 2 || s.TaskTimeout != 600 {
		t.Errorf("step fields: %+v", s)
	}
	if len(s.Stages) != 4 {
		t.Fatalf("%d stages", len(s.Stages))
	}
	st := s.Stages[1]
	if st.Agent != "codex" || st.IntentTemplate != "verify {prev}" || st.TaskTimeout != 900 || st.When == nil || st.When.Source != "len(prev) > 0" {
		t.Errorf("stage 1: %+v", st)
	}
	if m, _ := st.TaskReasoningTemplate.(map[string]any); m == nil || m["sections"] == nil {
		t.Errorf("stage 1 certificate without the default sections: %v", st.TaskReasoningTemplate)
	}
	if s.Stages[2].ExitWhen == nil || s.Stages[0].When != nil {
		t.Errorf("predicates: %+v %+v", s.Stages[0], s.Stages[2])
	}
	for i := range s.Stages {
		if r := s.StageRole(i); r != "plain" {
			t.Errorf("stage %d role %s", i, r)
		}
	}

	spec, ds = ParseFile(filepath.Join(validCorpusDir, "v03-pipeline-fanout.stratum.yaml"), testCompile)
	if spec == nil {
		t.Fatalf("rejected:\n%s", render(ds))
	}
	s = spec.Flows["f"].Step("pipe")
	var roles []string
	for i := range s.Stages {
		roles = append(roles, s.StageRole(i))
	}
	if want := []string{"plain", "split", "lane", "lane", "join", "plain"}; !reflect.DeepEqual(roles, want) {
		t.Errorf("roles %v, want %v", roles, want)
	}
	if f := s.Stages[1].Fanout; f == nil || f.Max != 8 || f.Require != "any" {
		t.Errorf("fanout %+v", f)
	}
}

// Templates render as the original's str.format; anything unbound leaves
// the template as written.
func TestFormatTemplate(t *testing.T) {
	vars := map[string]any{
		"item": map[string]any{"title": "Intro", "tags": []any{"a", "b"}},
		"prev": "text", "n": 3.0, "list": []any{1.0, "x"},
	}
	for _, tt := range []struct {
		tpl, want string
		ok        bool
	}{
		{"plain", "plain", true},
		{"{prev}!", "text!", true},
		{"{item[title]} / {item.tags[1]}", "Intro / b", true},
		{"{item}", `{"tags":["a","b"],"title":"Intro"}`, true},
		{"{n} {list}", `3 [1,"x"]`, true},
		{"{{literal}} {prev}", "{literal} text", true},
		{"{missing} {prev}", "{missing} {prev}", false},
		{"{item[nope]}", "{item[nope]}", false},
		{"unbalanced } {prev}", "unbalanced } {prev}", false},
		{"{prev!r:>10}", "text", true},
	} {
		got, ok := FormatTemplate(tt.tpl, vars)
		if got != tt.want || ok != tt.ok {
			t.Errorf("FormatTemplate(%q) = %q, %v; want %q, %v", tt.tpl, got, ok, tt.want, tt.ok)
		}
	}
}
