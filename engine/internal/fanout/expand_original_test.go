package fanout

import (
	"reflect"
	"testing"

	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// pipelineStep parses the original's test harness spec (test_pipeline.py
// _pipeline_spec) with the stages given and returns its pipeline step.
func pipelineStep(t *testing.T, stages string) *specs.Step {
	t.Helper()
	sp, ds := specs.Parse("p.stratum.yaml", []byte(`version: "0.3"
contracts:
  Out: {v: {type: string}}
functions:
  seed: {mode: infer, intent: "x", input: {}, output: Out}
flows:
  f:
    input: {}
    output: Out
    steps:
      - id: seed
        function: seed
        inputs: {}
      - id: pipe
        type: pipeline
        source: "$.steps.seed.output.files"
        require: all
        depends_on: [seed]
        stages:
`+stages), exprlang.Compile)

	if sp == nil || ds.HasErrors() {
		t.Fatal(ds.Error())
	}
	return sp.Flows["f"].Steps[1]
}

func byID(tasks []Task) map[string]Task {
	out := map[string]Task{}
	for _, t := range tasks {
		out[t.ID] = t
	}
	return out
}

// The task graph of a pipeline, as the original's desugar tests check
// expand_pipeline_tasks: 3 items × 2 stages, a dict item's keys spread
// without clobbering the task's own (test_desugar_3x2_shape,
// test_desugar_scalar_and_dict_items); K lanes per lane stage, the first
// after the split, the join after every lane, stages outside the region
// once per item (test_pipeline_fanout.py test_desugar_*).
func TestExpandPipelineOriginal(t *testing.T) {
	step := pipelineStep(t, `          - {agent: claude, intent_template: "clean {item}"}
          - {agent: codex, intent_template: "verify {prev}"}
`)
	tasks, err := ExpandPipeline(step, []any{"a", "b", "c"})
	if err != nil || len(tasks) != 6 {
		t.Fatalf("%d tasks, %v", len(tasks), err)
	}
	ids := byID(tasks)
	s1 := ids["pipe::item1::stage1"]
	if !reflect.DeepEqual(s1.DependsOn, []string{"pipe::item1::stage0"}) || s1.Raw["_pipeline_item"] != 1 || s1.Raw["_pipeline_stage"] != 1 || s1.Raw["_agent"] != "codex" {
		t.Errorf("item1 stage1: %+v", s1)
	}
	if d := ids["pipe::item1::stage0"].DependsOn; len(d) != 0 {
		t.Errorf("item1 stage0 depends on %v", d)
	}
	tasks, err = ExpandPipeline(step, []any{"scalar", map[string]any{"name": "x", "id": "SHOULD_NOT_CLOBBER"}})
	if err != nil {
		t.Fatal(err)
	}
	ids = byID(tasks)
	if got := ids["pipe::item0::stage0"].Raw["item"]; got != "scalar" {
		t.Errorf("scalar item: %v", got)
	}
	d := ids["pipe::item1::stage0"].Raw
	if !reflect.DeepEqual(d["item"], map[string]any{"name": "x", "id": "SHOULD_NOT_CLOBBER"}) || d["name"] != "x" || d["id"] != "pipe::item1::stage0" {
		t.Errorf("dict item: %v", d)
	}

	fan := pipelineStep(t, `          - {intent_template: "pre {item}"}
          - {intent_template: "split {prev}", fanout: {max: 3, require: all}}
          - {intent_template: "map {item}"}
          - {intent_template: "map2 {prev}"}
          - {intent_template: "join {prevs}", join: true}
          - {intent_template: "post {prev}"}
`)
	tasks, err = ExpandPipeline(fan, []any{"d"})
	if err != nil {
		t.Fatal(err)
	}
	ids = byID(tasks)
	// pre, split, 3 lanes × 2 lane stages, join, post.
	if len(tasks) != 1+1+3*2+1+1 {
		t.Fatalf("%d tasks: %v", len(tasks), ids)
	}
	for id, want := range map[string][]string{
		"pipe::item0::stage1":        {"pipe::item0::stage0"},
		"pipe::item0::stage2::lane0": {"pipe::item0::stage1"},
		"pipe::item0::stage2::lane2": {"pipe::item0::stage1"},
		"pipe::item0::stage3::lane1": {"pipe::item0::stage2::lane1"},
		"pipe::item0::stage4":        {"pipe::item0::stage3::lane0", "pipe::item0::stage3::lane1", "pipe::item0::stage3::lane2"},
		"pipe::item0::stage5":        {"pipe::item0::stage4"},
	} {
		if got := ids[id].DependsOn; !reflect.DeepEqual(got, want) {
			t.Errorf("%s depends on %v, want %v", id, got, want)
		}
	}
	for id, role := range map[string]string{"pipe::item0::stage0": "plain", "pipe::item0::stage1": "split", "pipe::item0::stage2::lane0": "lane", "pipe::item0::stage4": "join", "pipe::item0::stage5": "plain"} {
		if got := ids[id].Raw["_pipeline_role"]; got != role {
			t.Errorf("%s role %v, want %s", id, got, role)
		}
	}
}
