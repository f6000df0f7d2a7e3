package engine

import (
	"strings"
	"testing"

	"github.com/stratum-go/stratum/specs"
)

// certPipeline is the original's test_pipeline.py _pipeline_spec: a seed
// step, then a pipeline with the stages given (and step-level lines).
func certPipeline(t *testing.T, stepLines, stages string) *specs.Step {
	t.Helper()
	sp := mustParse(t, `version: "0.3"
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
`+stepLines+`        stages:
`+stages)
	return sp.Flows["f"].Steps[1]
}

const certX = `{sections: [{id: x, label: X, description: d}]}`

// The cert instructions of a pipeline task's effective certificate
// follow its rendered prompt (the original's STAGEOPTS: an explicit stage
// certificate whatever the agent, the step's on claude stages only); a
// parallel_dispatch task's prompt is left as rendered.
func TestTaskIntent(t *testing.T) {
	const must = "You MUST structure your response with these sections:"
	stepCert := "        task_reasoning_template: {sections: [{id: s, label: StepCert, description: from the step}]}\n"
	for _, c := range []struct {
		name, step, stages, task string
		want                     []string // headings injected; nil: none
	}{
		// test_cert_instructions_injected_for_pipeline: a stage's {} gets the default sections.
		{"stage-cert-defaults", "", `          - {agent: claude, intent_template: "do {item}", task_reasoning_template: {}}
          - {agent: codex, intent_template: "v {prev}"}
`, "pipe::item0::stage0", []string{"## Premises", "## Trace", "## Conclusion"}},
		{"stage-cert-codex", "", `          - {agent: claude, intent_template: "s0:{item}"}
          - {agent: codex, intent_template: "s1:{prev}", task_reasoning_template: ` + certX + `}
`, "pipe::item0::stage1", []string{"## X"}},
		{"no-cert-anywhere", "", `          - {agent: claude, intent_template: "s0:{item}"}
          - {agent: codex, intent_template: "s1:{prev}", task_reasoning_template: ` + certX + `}
`, "pipe::item0::stage0", nil},
		{"step-cert-claude", stepCert, `          - {agent: claude, intent_template: "s0:{item}"}
          - {agent: codex, intent_template: "s1:{prev}"}
`, "pipe::item0::stage0", []string{"## StepCert"}},
		{"step-cert-codex-gated", stepCert, `          - {agent: claude, intent_template: "s0:{item}"}
          - {agent: codex, intent_template: "s1:{prev}"}
`, "pipe::item0::stage1", nil},
		{"stage-overrides-step", stepCert, `          - {intent_template: "s0:{item}", task_reasoning_template: ` + certX + `}
`, "pipe::item0::stage0", []string{"## X"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			step := certPipeline(t, c.step, c.stages)
			got := TaskIntent(step, c.task, "do A")
			if !strings.HasPrefix(got, "do A") {
				t.Fatalf("prompt does not start with the rendered template: %q", got)
			}
			if c.want == nil {
				if got != "do A" {
					t.Fatalf("injected without a certificate: %q", got)
				}
				return
			}
			if !strings.Contains(got, must) {
				t.Fatalf("no instruction block: %q", got)
			}
			for _, h := range c.want {
				if !strings.Contains(got, "\n"+h+"\n") {
					t.Errorf("heading %q missing: %q", h, got)
				}
			}
			if strings.Contains(got, "StepCert") != (c.want[0] == "## StepCert") {
				t.Errorf("wrong template injected: %q", got)
			}
		})
	}
	// test_no_injection_for_parallel_dispatch
	sp := mustParse(t, `version: "0.3"
flows:
  f:
    input: {ts: {type: array}}
    steps:
      - id: pd
        type: parallel_dispatch
        source: "$.input.ts"
        agent: claude
        intent_template: "do {id}"
        task_reasoning_template: `+certX+`
`)
	if got := TaskIntent(sp.Flows["f"].Steps[0], "t1", "do t1"); got != "do t1" {
		t.Fatalf("parallel_dispatch prompt changed: %q", got)
	}
}

// A task stratum runs is checked against its certificate when it ends:
// a pipeline task against the effective one (an explicit codex stage's
// is checked, the step's is not on a codex stage); a parallel_dispatch
// task against the step's whatever the agent (the original's
// test_regression_codex_parallel_dispatch_still_certs).
func TestTaskCertificateViolations(t *testing.T) {
	stepCert := "        task_reasoning_template: " + certX + "\n"
	stages := `          - {agent: claude, intent_template: "s0:{item}"}
          - {agent: codex, intent_template: "s1:{prev}", task_reasoning_template: {sections: [{id: y, label: Y, description: d}]}}
          - {agent: codex, intent_template: "s2:{prev}"}
`
	pipe := certPipeline(t, stepCert, stages)
	sp := mustParse(t, `version: "0.3"
flows:
  f:
    input: {ts: {type: array}}
    steps:
      - id: pd
        type: parallel_dispatch
        source: "$.input.ts"
        agent: codex
        intent_template: "do {id}"
        task_reasoning_template: `+certX+`
`)
	pd := sp.Flows["f"].Steps[0]
	none := map[string]any{"artifact": "nothing"}
	for _, c := range []struct {
		name   string
		step   *specs.Step
		task   string
		result any
		want   string
	}{
		{"claude-stage-step-cert", pipe, "pipe::item0::stage0", none, "certificate missing section: X"},
		{"codex-stage-own-cert", pipe, "pipe::item0::stage1", none, "certificate missing section: Y"},
		{"codex-stage-step-cert-gated", pipe, "pipe::item0::stage2", none, ""},
		{"passes", pipe, "pipe::item0::stage1", map[string]any{"artifact": "## Y\nok"}, ""},
		{"reasoning-fallback", pipe, "pipe::item0::stage1", map[string]any{"reasoning": "## Y\nok"}, ""},
		{"nil-result", pipe, "pipe::item0::stage1", nil, "certificate missing section: Y"},
		{"codex-parallel-dispatch", pd, "t1", none, "certificate missing section: X"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(TaskCertificateViolations(c.step, c.task, c.result), "; ")
			if got != c.want {
				t.Fatalf("violations %q, want %q", got, c.want)
			}
		})
	}
}
