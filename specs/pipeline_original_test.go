package specs

import (
	"strings"
	"testing"
)

// originalPipelineSpec is the harness spec of the original's pipeline tests
// (test_pipeline.py _pipeline_spec, test_pipeline_route.py _route_spec,
// test_pipeline_fanout.py _fanout_spec): a seed function step, then a
// pipeline step over its output with the lines given.
func originalPipelineSpec(lines string) string {
	return `version: "0.3"
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
` + lines
}

// Every spec the original's pipeline tests parse (test_pipeline.py,
// test_pipeline_route.py, test_pipeline_fanout.py) has the same verdict
// here: valid, or refused (with our code; the original's message texts
// differ in "requires" for its "must have").
func TestOriginalPipelineSpecs(t *testing.T) {
	const good = `        stages:
          - {agent: claude, intent_template: "clean {item}"}
          - {agent: codex, intent_template: "verify {prev}"}
`
	const split = `          - {intent_template: "s {item}", fanout: {max: 4, require: all}}
`
	for _, c := range []struct {
		name  string
		lines string
		code  string // "" = valid
		msg   string
	}{
		// test_pipeline.py
		{"valid", good, "", ""},
		{"missing-source", strings.Replace(originalPipelineSpec(good), "        source: \"$.steps.seed.output.files\"\n", "", 1), CodeParallelRequires, "requires 'source'"},
		{"empty-stages", "        stages: []\n", CodeEmptyValue, ""},
		{"missing-stages", "", CodeParallelRequires, "requires 'stages'"},
		{"stage-without-intent-template", "        stages:\n          - {agent: claude}\n", CodeMissingField, ""},
		{"step-level-intent-template", good + "        intent_template: \"nope {item}\"\n", CodeParallelField, "must not have a step-level"},
		{"step-level-empty-intent-template", good + "        intent_template: \"\"\n", CodeParallelField, "must not have a step-level"},
		{"extra-stage-key", "        stages:\n          - {intent_template: \"x\", timeout: 5}\n", CodeUnknownField, ""},
		{"stage-timeout-and-cert", "        stages:\n          - {agent: claude, intent_template: \"c {item}\", task_timeout: 120}\n          - {agent: codex, intent_template: \"v {prev}\", task_reasoning_template: {}}\n", "", ""},
		{"stage-zero-timeout", "        stages:\n          - {intent_template: \"x\", task_timeout: 0}\n", CodeOutOfRange, ""},
		{"stage-malformed-cert", "        stages:\n          - {intent_template: \"x\", task_reasoning_template: {sections: []}}\n", CodeReasoningTemplate, "at least one section"},
		{"stage-unknown-key", "        stages:\n          - {intent_template: \"x\", bogus: 1}\n", CodeUnknownField, ""},
		// test_pipeline_route.py
		{"when-exit-when", "        stages:\n          - {intent_template: \"classify {item}\", exit_when: \"result_raw['sure'] == True\"}\n          - {intent_template: \"check {prev}\", when: \"prev_raw['label'] != 'spam'\"}\n", "", ""},
		{"stage0-when-prev", "        stages:\n          - {intent_template: \"x {item}\", when: \"prev_raw['k'] > 0\"}\n", CodeExprSyntax, ""},
		{"exit-when-prev", "        stages:\n          - {intent_template: \"x {item}\"}\n          - {intent_template: \"y {prev}\", exit_when: \"prev_raw['k'] > 0\"}\n", CodeExprSyntax, ""},
		{"when-unknown-name", "        stages:\n          - {intent_template: \"x {item}\"}\n          - {intent_template: \"y {prev}\", when: \"mystery > 0\"}\n", CodeExprSyntax, ""},
		{"stage0-exit-when-result", "        stages:\n          - {intent_template: \"x {item}\", exit_when: \"result_raw['done'] == True\"}\n", "", ""},
		{"when-not-string", "        stages:\n          - {intent_template: \"x {item}\"}\n          - {intent_template: \"y {prev}\", when: 123}\n", CodeWrongType, ""},
		// test_pipeline_fanout.py
		{"fanout-join", "        stages:\n          - {intent_template: \"list sections of {item}\", fanout: {max: 8, require: any}}\n          - {intent_template: \"summarize {item}\"}\n          - {intent_template: \"synthesize {prevs}\", join: true}\n", "", ""},
		{"fanout-require-int", "        stages:\n          - {intent_template: \"split {item}\", fanout: {max: 4, require: 2}}\n          - {intent_template: \"map {item}\"}\n          - {intent_template: \"reduce {prevs}\", join: true}\n", "", ""},
		{"fanout-without-join", "        stages:\n" + split + "          - {intent_template: \"map {item}\"}\n", CodePipelineStage, ""},
		{"join-without-fanout", "        stages:\n          - {intent_template: \"a {item}\"}\n          - {intent_template: \"reduce {prevs}\", join: true}\n", CodePipelineStage, ""},
		{"two-fanouts", "        stages:\n" + split + "          - {intent_template: \"s2 {item}\", fanout: {max: 4, require: all}}\n          - {intent_template: \"j {prevs}\", join: true}\n", CodePipelineStage, ""},
		{"join-before-fanout", "        stages:\n          - {intent_template: \"j {prevs}\", join: true}\n" + split + "          - {intent_template: \"m {item}\"}\n", CodePipelineStage, "must come after"},
		{"zero-lane-stages", "        stages:\n" + split + "          - {intent_template: \"j {prevs}\", join: true}\n", CodePipelineStage, "at least one per-lane stage"},
		{"fanout-max-zero", "        stages:\n          - {intent_template: \"s {item}\", fanout: {max: 0, require: all}}\n          - {intent_template: \"m {item}\"}\n          - {intent_template: \"j {prevs}\", join: true}\n", CodeOutOfRange, ""},
		{"fanout-require-bad", "        stages:\n          - {intent_template: \"s {item}\", fanout: {max: 4, require: \"most\"}}\n          - {intent_template: \"m {item}\"}\n          - {intent_template: \"j {prevs}\", join: true}\n", CodeInvalidValue, ""},
		{"when-on-fanout", "        stages:\n          - {intent_template: \"s {item}\", fanout: {max: 4, require: all}, when: \"True\"}\n          - {intent_template: \"m {item}\"}\n          - {intent_template: \"j {prevs}\", join: true}\n", CodePipelineStage, "inside the fanout region"},
		{"exit-when-on-lane", "        stages:\n" + split + "          - {intent_template: \"m {item}\", exit_when: \"result_raw['x'] == 1\"}\n          - {intent_template: \"j {prevs}\", join: true}\n", CodePipelineStage, "inside the fanout region"},
		{"exit-when-pre-fanout", "        stages:\n          - {intent_template: \"pre {item}\", exit_when: \"result_raw['stop'] == True\"}\n          - {intent_template: \"s {prev}\", fanout: {max: 4, require: any}}\n          - {intent_template: \"m {item}\"}\n          - {intent_template: \"j {prevs}\", join: true}\n", CodePipelineStage, "before a fanout region"},
		{"when-pre-fanout", "        stages:\n          - {intent_template: \"pre {item}\", when: \"item['ok'] == True\"}\n          - {intent_template: \"s {prev}\", fanout: {max: 4, require: all}}\n          - {intent_template: \"m {item}\"}\n          - {intent_template: \"j {prevs}\", join: true}\n", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := originalPipelineSpec(c.lines)
			if strings.HasPrefix(c.lines, "version:") {
				src = c.lines
			}
			_, ds := Parse("pipe.stratum.yaml", []byte(src), testCompile)
			if c.code == "" {
				if ds.HasErrors() {
					t.Fatalf("the original takes it; refused:\n%s", ds.Error())
				}
				return
			}
			for _, d := range ds {
				if d.Code == c.code && strings.Contains(d.Message, c.msg) {
					return
				}
			}
			t.Fatalf("the original refuses it; want %s %q, got:\n%s", c.code, c.msg, ds.Error())
		})
	}
}

// The original's merge-queue specs (integration/test_parallel_schema.py
// _VALID_V03_SPEC with the lines its tests add, test_par_merge_queue.py
// _SPEC_GATE_SURFACE): the same verdicts here.
func TestOriginalMergeQueueSpecs(t *testing.T) {
	const base = `version: "0.3"
contracts:
  TaskGraph:
    tasks: {type: array}
  PhaseResult:
    outcome: {type: string}
functions:
  work:
    mode: infer
    intent: "Produce output"
    input: {}
    output: PhaseResult
flows:
  build:
    input: {plan: {type: string}}
    output: PhaseResult
    steps:
      - id: do_work
        function: work
        inputs: {plan: "$.input.plan"}
      - id: analyze
        type: decompose
        agent: claude
        intent: "Analyze the plan and produce a TaskGraph"
        output_contract: TaskGraph
        ensure:
          - "no_file_conflicts(result.tasks)"
        depends_on: [do_work]
      - id: execute
        type: parallel_dispatch
        source: "$.steps.analyze.output.tasks"
        agent: claude
        max_concurrent: 3
        isolation: worktree
        require: all
        merge: sequential_apply
        intent_template: "Implement: {task.description}"
        depends_on: [analyze]
`
	const at = "        isolation: worktree\n"
	for _, c := range []struct {
		name, add, code string
	}{
		{"no-gate", "", ""},
		{"literal-list", `        pre_merge_verify: ["pnpm lint", "pnpm build"]` + "\n", ""},
		{"input-reference", `        pre_merge_verify: "$.input.pre_merge_gate"` + "\n", ""},
		{"bare-string", `        pre_merge_verify: "pnpm build"` + "\n", ""},
		{"scalar-int", "        pre_merge_verify: 5\n", CodeWrongType},
		// The rest of the original's schema (oneOf: a list of non-empty
		// strings, or a string).
		{"null", "        pre_merge_verify: ~\n", CodeWrongType},
		{"mapping", "        pre_merge_verify: {cmd: x}\n", CodeWrongType},
		{"list-int", "        pre_merge_verify: [\"pnpm lint\", 5]\n", CodeWrongType},
		{"list-empty-command", "        pre_merge_verify: [\"pnpm lint\", \"\"]\n", CodeEmptyValue},
		{"empty-list", "        pre_merge_verify: []\n", ""},
		{"defer-advance", "        defer_advance: true\n", ""},
		{"defer-advance-string", "        defer_advance: \"true\"\n", CodeWrongType},
		{"capture-diff", "        capture_diff: true\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(base, at, at+c.add, 1)
			_, ds := Parse("mq.stratum.yaml", []byte(src), testCompile)
			if c.code == "" {
				if ds.HasErrors() {
					t.Fatalf("the original takes it; refused:\n%s", ds.Error())
				}
				return
			}
			for _, d := range ds {
				if d.Code == c.code {
					return
				}
			}
			t.Fatalf("the original refuses it; want %s, got:\n%s", c.code, ds.Error())
		})
	}
}
