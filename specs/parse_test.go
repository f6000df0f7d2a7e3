//go:build decodewip

package specs

import (
	"fmt"
	"strings"
	"testing"
)

// diagWant is one expected diagnostic: code, and optionally path and line:col.
type diagWant struct {
	code string
	path string // "" = don't check
	line int    // 0 = don't check
	col  int
}

func hasDiag(ds Diagnostics, w diagWant) bool {
	for _, d := range ds {
		if d.Code != w.code {
			continue
		}
		if w.path != "" && d.Path != w.path {
			continue
		}
		if w.line != 0 && (d.Line != w.line || d.Column != w.col) {
			continue
		}
		return true
	}
	return false
}

func dump(ds Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "  %s [path %s]\n", d.String(), d.Path)
	}
	return b.String()
}

// checkDiags asserts that every wanted diagnostic is present and that every
// diagnostic has a code, an error type matching the code, and a message.
func checkDiags(t *testing.T, ds Diagnostics, want ...diagWant) {
	t.Helper()
	for _, w := range want {
		if !hasDiag(ds, w) {
			t.Errorf("missing diagnostic %+v; got:\n%s", w, dump(ds))
		}
	}
	for _, d := range ds {
		if d.Code == "" || d.Message == "" || d.ErrorType != ErrorTypeOf(d.Code) || d.File != "t.yaml" {
			t.Errorf("malformed diagnostic %+v", d)
		}
	}
}

func mustParse(t *testing.T, src string) *Spec {
	t.Helper()
	s, ds := Parse("t.yaml", []byte(src))
	if s == nil || ds.HasErrors() {
		t.Fatalf("unexpected diagnostics:\n%s", dump(ds))
	}
	return s
}

const base02 = `version: "0.2"
contracts:
  Out:
    label: {type: string}
    score: {type: number}
functions:
  work:
    mode: infer
    intent: "Do {text}"
    input: {text: {type: string}}
    output: Out
    ensure: ["result.score > 0.5"]
  approve:
    mode: gate
flows:
  main:
    input: {text: {type: string}}
    output: Out
    steps:
      - id: a
        function: work
        inputs: {text: "$.input.text"}
`

func TestParseValid(t *testing.T) {
	tests := []struct {
		name string
		src  string
	}{
		{"readme-v01", `version: "0.1"
contracts:
  SentimentResult:
    label: {type: string}
    confidence: {type: number}
functions:
  classify:
    mode: infer
    intent: "Classify the sentiment of this text"
    input: {text: {type: string}}
    output: SentimentResult
    ensure:
      - "result.label != ''"
      - "result.confidence > 0.7"
    retries: 2
flows:
  run:
    input: {text: {type: string}}
    output: SentimentResult
    steps:
      - id: s1
        function: classify
        inputs: {text: "$.input.text"}
`},
		{"base02", base02},
		{"gate-and-loops", base02 + `      - id: fix
        intent: "Fix it"
        ensure: ["result.label != ''"]
        output_contract: Out
        on_fail: a
        next: review
        skip_if: "$.steps.review.output == None"
      - id: review
        function: approve
        on_approve: ~
        on_revise: a
        on_kill: ~
        policy: flag
        policy_fallback: gate
`},
		{"iteration", base02 + `      - id: hunt
        intent: "hunt"
        output_contract: Out
        max_iterations: 5
        exit_criterion: "result.score > 0.9"
        score_expr: "result.score"
        accumulate: "result.label"
        accumulate_key: "item.id"
`},
		{"flow-step", base02 + `      - id: sub
        flow: child
        inputs: {x: "$.steps.a.output.label"}
        ensure: ["result.ok"]
        on_fail: a
  child:
    input: {x: {type: string}}
    steps:
      - id: c1
        intent: "child work"
`},
		{"workflow", `version: "0.2"
workflow:
  name: code-review
  description: "Review"
  input:
    files: {type: array, required: true}
    depth: {type: string, required: false, default: standard}
flows:
  code-review:
    input: {files: {type: array}, depth: {type: string}}
    steps:
      - id: s
        intent: "Review {depth}"
`},
		{"parallel-v03", `version: "0.3"
contracts:
  TaskGraph:
    tasks: {type: array}
functions:
  noop:
    mode: compute
    intent: "noop"
    output: TaskGraph
    run: ["echo", "{}"]
flows:
  main:
    input: {goal: {type: string}}
    steps:
      - id: plan
        type: decompose
        agent: claude
        intent: "Split {goal}"
        output_contract: TaskGraph
        ensure: ["no_file_conflicts(result.tasks)"]
      - id: run
        type: parallel_dispatch
        source: "$.steps.plan.output.tasks"
        intent_template: "Do {description}"
        max_concurrent: 2
        require: 1
        isolation: none
      - id: tidy
        type: function
        function: noop
        cache: true
      - id: sh
        intent: "shell"
        run: {cmd: "echo '{}'", dir: ".", env: {A: "1"}}
`},
		{"extensions", `version: "0.2"
contracts:
  R:
    ok: {type: boolean}
    level: {type: string, enum: [low, high], optional: true}
    nested: {type: R2}
  R2:
    n: {type: integer, minimum: 0}
functions:
  g:
    mode: gate
    on_timeout: approve
    approver: human
    timeout: 60
  f:
    mode: infer
    intent: "Summarise the document"
    input: {doc: {type: string, opaque: true}}
    output: R
    budget: {ms: 1000, usd: 0, tokens: 500}
flows:
  main:
    input: {doc: {type: string, opaque: true}}
    steps:
      - id: s
        function: f
        inputs: {doc: "$.input.doc"}
      - id: gate
        function: g
        on_approve: null
        on_revise: s
        on_kill: ~
`},
		{"anchors-and-merge", `version: "0.2"
x-defaults: &defaults
  mode: infer
  output: Out
contracts:
  Out: {v: {type: string}}
functions:
  f:
    <<: *defaults
    intent: "hi"
flows:
  main:
    input: {}
    steps:
      - {id: a, function: f}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "anchors-and-merge" {
				// x-defaults is not a known top-level key: the spec is
				// rejected for it, but the merge itself must work.
				_, ds := Parse("t.yaml", []byte(tt.src))
				checkDiags(t, ds, diagWant{code: CodeUnknownField, path: "x-defaults", line: 2, col: 1})
				if len(ds) != 1 {
					t.Errorf("want exactly one diagnostic, got:\n%s", dump(ds))
				}
				return
			}
			mustParse(t, tt.src)
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []diagWant
	}{
		// --- versions and root ---
		{"missing-version", "flows: {}\n", []diagWant{{CodeMissingVersion, "version", 1, 1}}},
		{"unknown-version", "version: \"9.9\"\n", []diagWant{{CodeUnknownVersion, "version", 1, 10}}},
		{"version-float", "version: 0.2\nflows: {}\nbogus: 1\n", []diagWant{
			{CodeVersionNotString, "version", 1, 10}, {CodeUnknownField, "bogus", 3, 1}}},
		{"not-mapping", "- a\n- b\n", []diagWant{{CodeNotMapping, "root", 1, 1}}},
		{"duplicate-key", "version: \"0.2\"\nflows: {}\nflows: {}\n", []diagWant{{CodeDuplicateKey, "flows", 3, 1}}},
		{"workflow-in-01", "version: \"0.1\"\nworkflow: {name: x, description: y, input: {}}\n",
			[]diagWant{{CodeNeedsVersion, "workflow", 2, 1}}},
		{"unknown-top", "version: \"0.2\"\nflow: {}\n", []diagWant{{CodeUnknownField, "flow", 2, 1}}},

		// --- functions ---
		{"gate-in-01", strings.Replace(`version: "0.1"
functions:
  g: {mode: gate, intent: x, input: {}, output: O}
`, "", "", 1), []diagWant{{CodeNeedsVersion, "functions.g.mode", 3, 13}}},
		{"bad-mode", "version: \"0.2\"\nfunctions:\n  f: {mode: infr}\n", []diagWant{{CodeInvalidValue, "functions.f.mode", 3, 13}}},
		{"missing-mode", "version: \"0.2\"\nfunctions:\n  f: {intent: x}\n", []diagWant{{CodeMissingField, "functions.f", 3, 6}}},
		{"retries-zero", strings.Replace(base02, "    ensure: [", "    retries: 0\n    ensure: [", 1),
			[]diagWant{{CodeOutOfRange, "functions.work.retries", 12, 14}}},
		{"retries-string", strings.Replace(base02, "    ensure: [", "    retries: \"3\"\n    ensure: [", 1),
			[]diagWant{{CodeWrongType, "functions.work.retries", 12, 14}}},
		{"undefined-output", strings.Replace(base02, "    output: Out\n    ensure", "    output: Outt\n    ensure", 1),
			[]diagWant{{CodeUndefinedContract, "functions.work.output", 11, 13}}},
		{"gate-fn-fields", strings.Replace(base02, "    mode: gate\n", "    mode: gate\n    retries: 2\n    ensure: [\"true\"]\n", 1),
			[]diagWant{{CodeGateFunctionField, "functions.approve.retries", 15, 5}, {CodeGateFunctionField, "functions.approve.ensure", 16, 5}}},
		{"unknown-result-field", strings.Replace(base02, "result.score > 0.5", "result.scor > 0.5", 1),
			[]diagWant{{CodeUnknownResultField, "functions.work.ensure", 12, 14}}},
		{"expr-forbidden", strings.Replace(base02, "result.score > 0.5", "result.__class__", 1),
			[]diagWant{{CodeExprForbidden, "functions.work.ensure", 12, 22}}},
		{"guardrails", strings.Replace(base02, "    ensure: [", "    guardrails: [\"\", \"(\"]\n    ensure: [", 1),
			[]diagWant{{CodeEmptyGuardrail, "functions.work.guardrails", 12, 18}, {CodeInvalidRegex, "functions.work.guardrails", 12, 22}}},
		{"run-on-infer", strings.Replace(base02, "    ensure: [", "    run: echo\n    ensure: [", 1),
			[]diagWant{{CodeRunField, "functions.work.run", 12, 5}}},
		{"run-in-01", `version: "0.1"
functions:
  f: {mode: compute, intent: x, input: {}, output: O, run: echo}
`, []diagWant{{CodeNeedsVersion, "functions.f.run", 3, 55}}},
		{"on-timeout-not-gate", strings.Replace(base02, "    ensure: [", "    on_timeout: kill\n    ensure: [", 1),
			[]diagWant{{CodeGateFunctionField, "functions.work.on_timeout", 12, 5}}},
		{"on-timeout-bad", strings.Replace(base02, "    mode: gate\n", "    mode: gate\n    on_timeout: explode\n", 1),
			[]diagWant{{CodeInvalidValue, "functions.approve.on_timeout", 15, 17}}},
		{"opaque-inline", strings.Replace(base02, "input: {text: {type: string}}\n    output: Out\n    ensure", "input: {text: {type: string, opaque: true}}\n    output: Out\n    ensure", 1),
			[]diagWant{{CodeOpaqueInline, "functions.work.intent", 9, 13}}},
		{"cache-on-infer", strings.Replace(base02, "    ensure: [", "    cache: true\n    ensure: [", 1),
			[]diagWant{{CodeCacheField, "functions.work.cache", 12, 5}}},

		// --- contracts ---
		{"contract-field-typo", "version: \"0.2\"\ncontracts:\n  C:\n    a: {type: string, minLenght: 1}\n",
			[]diagWant{{CodeUnknownField, "contracts.C.a.minLenght", 4, 23}}},
		{"contract-field-not-map", "version: \"0.2\"\ncontracts:\n  C:\n    a: string\n",
			[]diagWant{{CodeWrongType, "contracts.C.a", 4, 8}}},

		// --- flows and steps, structural ---
		{"steps-empty", "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps: []\n",
			[]diagWant{{CodeEmptyValue, "flows.main.steps", 5, 12}}},
		{"steps-missing", "version: \"0.2\"\nflows:\n  main:\n    input: {}\n",
			[]diagWant{{CodeMissingField, "flows.main", 4, 5}}},
		{"step-unknown-field", base02 + "        polcy: gate\n",
			[]diagWant{{CodeUnknownField, "flows.main.steps.0.polcy", 23, 9}}},
		{"step-policy-enum", base02 + "      - {id: g, function: approve, on_approve: ~, on_revise: a, on_kill: ~, policy: auto}\n",
			[]diagWant{{CodeInvalidValue, "flows.main.steps.1.policy", 23, 85}}},
		{"input-number", base02 + "        inputs: {n: 5}\n", []diagWant{{CodeDuplicateKey, "flows.main.steps.0.inputs", 23, 9}}},
		{"input-number2", strings.Replace(base02, `inputs: {text: "$.input.text"}`, `inputs: {text: 5}`, 1),
			[]diagWant{{CodeWrongType, "flows.main.steps.0.inputs.text", 22, 24}}},
		{"empty-intent", base02 + "      - {id: b, intent: \"\"}\n", []diagWant{{CodeEmptyValue, "flows.main.steps.1.intent", 23, 25}}},
		{"intent-in-01", "version: \"0.1\"\nflows:\n  main:\n    input: {}\n    output: O\n    steps:\n      - {id: a, intent: x, inputs: {}}\n",
			[]diagWant{{CodeNeedsVersion, "flows.main.steps.0.intent", 7, 17}, {CodeMissingField, "flows.main.steps.0", 7, 9}}},
		{"type-in-02", base02 + "        type: function\n", []diagWant{{CodeNeedsVersion, "flows.main.steps.0.type", 23, 9}}},
		{"step-not-mapping", base02 + "      - just-a-string\n", []diagWant{{CodeWrongType, "flows.main.steps.1", 23, 9}}},
		{"workflow-name", `version: "0.2"
workflow: {name: Code_Review, description: d, input: {}}
flows:
  main: {input: {}, steps: [{id: a, intent: x}]}
`, []diagWant{{CodeInvalidName, "workflow.name", 2, 18}}},
		{"max-iterations-zero", base02 + "        max_iterations: 0\n", []diagWant{{CodeOutOfRange, "flows.main.steps.0.max_iterations", 23, 25}}},
		{"budget-usd-negative", base02 + "      - {id: b, intent: x, budget: {usd: -1}}\n", []diagWant{{CodeOutOfRange, "flows.main.steps.1.budget.usd", 23, 42}}},
		{"tokens-in-01", `version: "0.1"
functions:
  f: {mode: infer, intent: x, input: {}, output: O, budget: {tokens: 5}}
`, []diagWant{{CodeNeedsVersion, "functions.f.budget.tokens", 3, 62}}},

		// --- semantic: steps ---
		{"duplicate-step-id", base02 + "      - {id: a, intent: x}\n", []diagWant{{CodeDuplicateStepID, "flows.main.steps.a.id", 23, 14}}},
		{"undefined-function", base02 + "      - {id: b, function: wrk}\n", []diagWant{{CodeUndefinedFunction, "flows.main.steps.b.function", 23, 27}}},
		{"undefined-flow", base02 + "      - {id: b, flow: nope}\n", []diagWant{{CodeUndefinedFlow, "flows.main.steps.b.flow", 23, 23}}},
		{"undefined-step-depends", base02 + "        depends_on: [zz]\n", []diagWant{{CodeUndefinedStep, "flows.main.steps.a.depends_on", 23, 22}}},
		{"undefined-step-input", base02 + "      - {id: b, intent: x, inputs: {p: \"$.steps.q.output\"}}\n",
			[]diagWant{{CodeUndefinedStep, "flows.main.steps.b.inputs.p", 23, 40}}},
		{"undefined-step-skip-if", base02 + "      - {id: b, intent: x, skip_if: \"$.steps.q.output.x == 1\"}\n",
			[]diagWant{{CodeUndefinedStep, "flows.main.steps.b.skip_if", 23, 37}}},
		{"undefined-input", base02 + "      - {id: b, intent: x, inputs: {p: \"$.input.nope\"}}\n",
			[]diagWant{{CodeUndefinedInput, "flows.main.steps.b.inputs.p", 23, 40}}},
		{"bad-ref-no-output", base02 + "      - {id: b, intent: x, inputs: {p: \"$.steps.a.result\"}}\n",
			[]diagWant{{CodeBadRef, "flows.main.steps.b.inputs.p", 23, 40}}},
		{"bad-ref-root", base02 + "      - {id: b, intent: x, inputs: {p: \"$.foo\"}}\n",
			[]diagWant{{CodeBadRef, "flows.main.steps.b.inputs.p", 23, 40}}},
		{"cycle", base02 + "        depends_on: [b]\n      - {id: b, intent: x, inputs: {p: \"$.steps.a.output\"}}\n",
			[]diagWant{{CodeDependencyCycle, "flows.main.steps.a.depends_on", 20, 13}}},
		{"self-cycle", base02 + "        depends_on: [a]\n", []diagWant{{CodeDependencyCycle, "flows.main.steps.a.depends_on", 20, 13}}},
		{"recursive-flow", base02 + "      - {id: b, flow: main}\n", []diagWant{{CodeRecursiveFlow, "flows.main.steps.b.flow", 23, 23}}},
		{"step-mode-none", base02 + "      - {id: b, agent: x}\n", []diagWant{{CodeStepMode, "flows.main.steps.b", 23, 9}}},
		{"step-mode-two", base02 + "      - {id: b, intent: x, flow: main}\n", []diagWant{{CodeStepMode, "flows.main.steps.b", 23, 28}}},
		{"function-step-field", base02 + "        retries: 2\n", []diagWant{{CodeFunctionStepField, "flows.main.steps.a.retries", 23, 9}}},
		{"flow-step-field", base02 + "      - {id: b, flow: child, agent: claude}\n  child: {input: {}, steps: [{id: c, intent: x}]}\n",
			[]diagWant{{CodeFlowStepField, "flows.main.steps.b.agent", 23, 30}}},
		{"gate-step-field", base02 + "      - {id: g, function: approve, on_approve: ~, on_revise: a, on_kill: ~, on_fail: a}\n",
			[]diagWant{{CodeGateStepField, "flows.main.steps.g.on_fail", 23, 77}}},
		{"gate-routing-missing", base02 + "      - {id: g, function: approve, on_revise: a}\n",
			[]diagWant{{CodeGateRoutingMissing, "flows.main.steps.g.on_approve", 23, 9}, {CodeGateRoutingMissing, "flows.main.steps.g.on_kill", 23, 9}}},
		{"gate-revise-null", base02 + "      - {id: g, function: approve, on_approve: ~, on_revise: ~, on_kill: ~}\n",
			[]diagWant{{CodeGateReviseTarget, "flows.main.steps.g.on_revise", 23, 62}}},
		{"gate-revise-self", base02 + "      - {id: g, function: approve, on_approve: ~, on_revise: g, on_kill: ~}\n",
			[]diagWant{{CodeGateReviseTarget, "flows.main.steps.g.on_revise", 23, 62}}},
		{"gate-revise-later", strings.Replace(base02, "      - id: a\n", "      - {id: g, function: approve, on_approve: ~, on_revise: a, on_kill: ~}\n      - id: a\n", 1),
			[]diagWant{{CodeGateReviseTarget, "flows.main.steps.g.on_revise", 20, 62}}},
		{"not-a-gate", base02 + "        on_approve: ~\n", []diagWant{{CodeNotAGate, "flows.main.steps.a.on_approve", 23, 9}}},
		{"policy-fallback", base02 + "      - {id: g, function: approve, on_approve: ~, on_revise: a, on_kill: ~, policy_fallback: gate}\n",
			[]diagWant{{CodePolicyFallback, "flows.main.steps.g.policy_fallback", 23, 77}}},
		{"on-fail-unreachable", base02 + "      - {id: b, intent: x, on_fail: a}\n", []diagWant{{CodeOnFailUnreachable, "flows.main.steps.b.on_fail", 23, 28}}},
		{"on-fail-undefined", base02 + "      - {id: b, intent: x, ensure: [\"true\"], on_fail: zz}\n", []diagWant{{CodeUndefinedStep, "flows.main.steps.b.on_fail", 23, 55}}},
		{"iteration-field", base02 + "      - {id: b, intent: x, exit_criterion: \"result.x\", accumulate_key: \"item\"}\n",
			[]diagWant{{CodeIterationField, "flows.main.steps.b.exit_criterion", 23, 28}, {CodeIterationField, "flows.main.steps.b.accumulate_key", 23, 56}}},
		{"step-guardrail", base02 + "      - {id: b, intent: x, guardrails: [\"[\"]}\n", []diagWant{{CodeInvalidRegex, "flows.main.steps.b.guardrails", 23, 41}}},
		{"expr-syntax-step", base02 + "      - {id: b, intent: x, ensure: [\"len(result.x\"]}\n", []diagWant{{CodeExprSyntax, "flows.main.steps.b.ensure", 23, 41}}},
		{"inline-result-field", base02 + "      - {id: b, intent: x, output_contract: Out, ensure: [\"result.lable == 'x'\"]}\n",
			[]diagWant{{CodeUnknownResultField, "flows.main.steps.b.ensure", 23, 59}}},
		{"inline-undefined-contract", base02 + "      - {id: b, intent: x, output_contract: Nope}\n",
			[]diagWant{{CodeUndefinedContract, "flows.main.steps.b.output_contract", 23, 45}}},
		{"cache-field", base02 + "        cache: true\n", []diagWant{{CodeCacheField, "flows.main.steps.a.cache", 23, 9}}},
		{"run-field", base02 + "        run: echo\n", []diagWant{{CodeRunField, "flows.main.steps.a.run", 23, 9}}},
		{"run-bad-type", base02 + "      - {id: b, intent: x, run: 5}\n", []diagWant{{CodeWrongType, "flows.main.steps.1.run", 23, 33}}},
		{"opaque-inline-step", strings.Replace(base02, "    input: {text: {type: string}}\n    output: Out\n    steps", "    input: {text: {type: string, opaque: true}}\n    output: Out\n    steps", 1) +
			"      - {id: b, intent: \"use {t}\", inputs: {t: \"$.input.text\"}}\n",
			[]diagWant{{CodeOpaqueInline, "flows.main.steps.b.intent", 23, 25}}},
		{"invalid-output-schema", base02 + "        output_schema: {type: objekt}\n", []diagWant{{CodeInvalidSchema, "flows.main.steps.a.output_schema", 23, 24}}},
		{"parallel-field-v03", strings.Replace(base02, `"0.2"`, `"0.3"`, 1) + "        source: \"$.input.text\"\n",
			[]diagWant{{CodeParallelField, "flows.main.steps.a.source", 23, 9}}},
		{"parallel-requires", strings.Replace(base02, `"0.2"`, `"0.3"`, 1) + "      - {id: p, type: parallel_dispatch, source: \"$.steps.a.output\"}\n      - {id: d, type: decompose, intent: x}\n",
			[]diagWant{{CodeParallelRequires, "flows.main.steps.p.intent_template", 23, 9}, {CodeParallelRequires, "flows.main.steps.d.agent", 24, 9},
				{CodeParallelRequires, "flows.main.steps.d.output_contract", 24, 9}}},
		{"type-mismatch", strings.Replace(base02, `"0.2"`, `"0.3"`, 1) + "        type: inline\n", []diagWant{{CodeStepMode, "flows.main.steps.a.type", 23, 15}}},
		{"flow-output-undefined", strings.Replace(base02, "    output: Out\n    steps", "    output: Ot\n    steps", 1),
			[]diagWant{{CodeUndefinedContract, "flows.main.output", 18, 13}}},

		// --- workflow ---
		{"workflow-entry", `version: "0.2"
workflow: {name: wf, description: d, input: {}}
flows:
  a: {input: {}, steps: [{id: s, intent: x}]}
  b: {input: {}, steps: [{id: s, intent: x}]}
`, []diagWant{{CodeWorkflowEntry, "workflow.name", 2, 18}}},
		{"workflow-inputs", `version: "0.2"
workflow: {name: wf, description: d, input: {x: {type: string}}}
flows:
  a: {input: {y: {type: string}}, steps: [{id: s, intent: x}]}
`, []diagWant{{CodeWorkflowInputs, "workflow.input", 2, 38}}},
		{"workflow-missing-description", `version: "0.2"
workflow: {name: wf, input: {}}
flows:
  wf: {input: {}, steps: [{id: s, intent: x}]}
`, []diagWant{{CodeMissingField, "workflow", 2, 11}}},
		{"workflow-param-type", `version: "0.2"
workflow: {name: wf, description: d, input: {x: {type: strin}}}
flows:
  wf: {input: {x: {}}, steps: [{id: s, intent: x}]}
`, []diagWant{{CodeInvalidValue, "workflow.input.x.type", 2, 56}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ds := Parse("t.yaml", []byte(tt.src))
			if s != nil {
				t.Errorf("spec accepted; want rejection")
			}
			checkDiags(t, ds, tt.want...)
		})
	}
}
