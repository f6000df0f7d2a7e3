package specs

import (
	"reflect"
	"strings"
	"testing"
)

// Rules matched to the original's spec.py (paths, error types), and the
// constructs of its newer releases. The corpus goldens hold the messages;
// these rows hold the paths and classes goldens do not show.
func TestParseDropIn(t *testing.T) {
	v03 := strings.Replace(parseBase02, `"0.2"`, `"0.3"`, 1)
	tests := []struct {
		name string
		src  string
		want []wantDiag
	}{
		// on_fail: a reasoning_template is a check on claude steps only.
		{"cert-codex-on-fail", parseBase02 + "      - {id: b, agent: codex, intent: x, on_fail: a, reasoning_template: {}}\n",
			[]wantDiag{{CodeOnFailUnreachable, "flows.main.steps.b.on_fail", 23, 42}}},
		{"cert-no-template", parseBase02 + "      - {id: b, agent: claude, intent: x, on_fail: a}\n",
			[]wantDiag{{CodeOnFailUnreachable, "flows.main.steps.b.on_fail", 23, 43}}},
		// The original's schema rejects an empty guardrail (minLength 1).
		{"empty-guardrail-step", parseBase02 + "      - {id: b, intent: x, guardrails: [\"a\", \"\"]}\n",
			[]wantDiag{{CodeEmptyGuardrail, "flows.main.steps.1.guardrails.1", 23, 46}}},
		// Certificate templates: paths relative to the template, as the original.
		{"cert-no-sections", parseBase02 + "      - {id: b, intent: x, reasoning_template: {sections: []}}\n",
			[]wantDiag{{CodeReasoningTemplate, "reasoning_template.sections", 23, 59}}},
		{"cert-null-sections", parseBase02 + "      - {id: b, intent: x, reasoning_template: {sections: ~}}\n",
			[]wantDiag{{CodeReasoningTemplate, "reasoning_template.sections", 23, 59}}},
		{"cert-section-fields", parseBase02 + "      - {id: b, intent: x, reasoning_template: {sections: [{id: p, label: P, description: d}, {label: C}]}}\n",
			[]wantDiag{{CodeReasoningTemplate, "reasoning_template.sections[1]", 23, 95}, {CodeReasoningTemplate, "reasoning_template.sections[1]", 23, 95}}},
		{"cert-section-scalar", parseBase02 + "      - {id: b, intent: x, reasoning_template: {sections: [1]}}\n",
			[]wantDiag{{CodeReasoningTemplate, "reasoning_template.sections[0]", 23, 60}}},
		{"cert-sections-mapping", parseBase02 + "      - {id: b, intent: x, reasoning_template: {sections: {a: 1}}}\n",
			[]wantDiag{{CodeReasoningTemplate, "reasoning_template.sections[0]", 23, 59}}},
		{"cert-not-object", parseBase02 + "      - {id: b, intent: x, reasoning_template: [a]}\n",
			[]wantDiag{{CodeWrongType, "flows.main.steps.1.reasoning_template", 23, 48}}},
		{"task-cert-section", v03 + "      - {id: p, type: parallel_dispatch, source: \"$.steps.a.output\", intent_template: x, task_reasoning_template: {sections: [{id: s, label: S}]}}\n",
			[]wantDiag{{CodeReasoningTemplate, "task_reasoning_template.sections[0]", 23, -1}}},
		// Empty mode keys and parallel fields: the original's semantic rules.
		{"empty-function", parseBase02 + "      - {id: b, function: \"\"}\n", []wantDiag{{CodeStepMode, "flows.main.steps.b", 23, 27}}},
		{"empty-intent-template", v03 + "      - {id: p, type: parallel_dispatch, source: \"$.steps.a.output\", intent_template: \"\"}\n",
			[]wantDiag{{CodeParallelRequires, "flows.main.steps.p.intent_template", 23, -1}}},
		{"empty-decompose-intent", v03 + "      - {id: d, type: decompose, agent: claude, intent: \"\", output_contract: Out}\n",
			[]wantDiag{{CodeParallelRequires, "flows.main.steps.d.intent", 23, -1}}},
		// Newer constructs.
		// Pipeline steps (the original's STRAT-WORKFLOW-PIPELINE): its paths.
		{"pipeline-no-stages", v03 + "      - {id: p, type: pipeline, source: \"$.steps.a.output\"}\n",
			[]wantDiag{{CodeParallelRequires, "flows.main.steps.p.stages", 23, -1}}},
		{"stages-without-type", v03 + "      - {id: p, stages: [{intent_template: x}]}\n",
			[]wantDiag{{CodeStepMode, "flows.main.steps.p", 23, -1}}},
		{"stages-on-inline", v03 + "      - {id: p, intent: x, stages: [{intent_template: x}]}\n",
			[]wantDiag{{CodeParallelField, "flows.main.steps.p.stages", 23, -1}}},
		{"stage-key", v03 + "      - {id: p, type: pipeline, source: \"$.steps.a.output\", stages: [{intent_template: x, timeout: 5}]}\n",
			[]wantDiag{{CodeUnknownField, "flows.main.steps.1.stages.0.timeout", 23, -1}}},
		{"stage-when", v03 + "      - {id: p, type: pipeline, source: \"$.steps.a.output\", stages: [{intent_template: x}, {intent_template: y, when: \"nope\"}]}\n",
			[]wantDiag{{CodeExprSyntax, "flows.main.steps.p.stages[1].when", 23, -1}}},
		{"stage-prev-first", v03 + "      - {id: p, type: pipeline, source: \"$.steps.a.output\", stages: [{intent_template: \"{prev}\"}]}\n",
			[]wantDiag{{CodePipelineStage, "flows.main.steps.p.stages[0].intent_template", 23, -1}}},
		{"version-1", "version: 1\nflows: {}\n", []wantDiag{{CodeUnsupported, "version", 1, 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ds := Parse("t.yaml", []byte(tt.src), testCompile)
			if s != nil {
				t.Errorf("spec accepted; want rejection")
			}
			expectDiags(t, ds, tt.want...)
			if len(ds) != len(tt.want) {
				t.Errorf("want exactly %d diagnostics (no cascade), got:\n%s", len(tt.want), dumpDiags(ds))
			}
		})
	}
}

// The error types of the changed codes are the original's.
func TestDropInErrorTypes(t *testing.T) {
	for code, want := range map[string]ErrorType{
		CodeEmptyGuardrail: ValidationError, CodeUnsupported: ValidationError,
		CodeReasoningTemplate: SemanticError, CodeOnFailUnreachable: SemanticError, CodeStepMode: SemanticError,
	} {
		if got := ErrorTypeOf(code); got != want {
			t.Errorf("%s: %s, want %s", code, got, want)
		}
	}
}

// Certificate templates get the original's defaults; claude steps with one
// may route on_fail without ensure.
func TestCertTemplateDefaults(t *testing.T) {
	s := mustParseSpec(t, parseBase02+`      - id: b
        intent: x
        on_fail: a
        reasoning_template: {require_citations: true}
      - id: c
        agent: "claude:reviewer"
        intent: x
        on_fail: a
        reasoning_template:
          sections: [{id: v, label: Verdict, description: d, extra: kept}]
`)
	steps := s.Flows["main"].Steps
	got := steps[1].ReasoningTemplate.(map[string]any)
	var labels []string
	for _, sec := range got["sections"].([]any) {
		labels = append(labels, sec.(map[string]any)["label"].(string))
	}
	if !reflect.DeepEqual(labels, []string{"Premises", "Trace", "Conclusion"}) || got["require_citations"] != true {
		t.Errorf("defaults not applied: %v", got)
	}
	got = steps[2].ReasoningTemplate.(map[string]any)
	secs := got["sections"].([]any)
	if len(secs) != 1 || secs[0].(map[string]any)["extra"] != "kept" || got["require_citations"] != false {
		t.Errorf("template %v", got)
	}
	if steps[0].ReasoningTemplate != nil {
		t.Errorf("step without a template got %v", steps[0].ReasoningTemplate)
	}
}

// policy_fallback: a flag/skip policy on an approver: human gate needs
// policy_fallback: gate; a fallback of flag or skip is a warning (a failed
// policy always waits for a reviewer).
func TestPolicyFallbackRules(t *testing.T) {
	human := strings.Replace(parseBase02, "    mode: gate\n", "    mode: gate\n    approver: human\n", 1)
	gate := func(base, extra string) string {
		return base + "      - {id: g, function: approve, depends_on: [a], on_approve: ~, on_revise: a, on_kill: ~" + extra + "}\n"
	}
	tests := []struct {
		name, src string
		code      string // "" : no diagnostic
		sev       Severity
	}{
		{"human-flag", gate(human, ", policy: flag"), CodePolicyHuman, SeverityError},
		{"human-skip", gate(human, ", policy: skip"), CodePolicyHuman, SeverityError},
		{"human-flag-fallback-gate", gate(human, ", policy: flag, policy_fallback: gate"), "", ""},
		{"human-gate-policy", gate(human, ", policy: gate"), "", ""},
		{"any-flag", gate(parseBase02, ", policy: flag"), "", ""},
		{"any-flag-fallback-gate", gate(parseBase02, ", policy: flag, policy_fallback: gate"), "", ""},
		{"fallback-skip", gate(parseBase02, ", policy: flag, policy_fallback: skip"), CodePolicyFallback, SeverityWarning},
		{"human-fallback-flag", gate(human, ", policy: skip, policy_fallback: flag"), CodePolicyFallback, SeverityWarning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := Parse("t.yaml", []byte(tt.src), testCompile)
			if tt.code == "" {
				if len(ds) != 0 {
					t.Fatalf("want no diagnostics, got:\n%s", dumpDiags(ds))
				}
				return
			}
			if len(ds) != 1 || ds[0].Code != tt.code || ds[0].Severity != tt.sev {
				t.Fatalf("want one %s %s, got:\n%s", tt.sev, tt.code, dumpDiags(ds))
			}
		})
	}
}
