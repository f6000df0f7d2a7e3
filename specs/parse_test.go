package specs

import (
	"fmt"
	"strings"
	"testing"
)

// wantDiag is one expected diagnostic: code, and optionally path and line:col.
type wantDiag struct {
	code string
	path string // "" = don't check
	line int    // 0 = don't check
	col  int    // -1 = any column on that line
}

func diagPresent(ds Diagnostics, w wantDiag) bool {
	for _, d := range ds {
		if d.Code != w.code {
			continue
		}
		if w.path != "" && d.Path != w.path {
			continue
		}
		if w.line != 0 && (d.Line != w.line || (w.col >= 0 && d.Column != w.col)) {
			continue
		}
		return true
	}
	return false
}

func dumpDiags(ds Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "  %s [path %s]\n", d.String(), d.Path)
	}
	return b.String()
}

// checkDiags asserts that every wanted diagnostic is present and that every
// diagnostic has a code, an error type matching the code, and a message.
func expectDiags(t *testing.T, ds Diagnostics, want ...wantDiag) {
	t.Helper()
	for _, w := range want {
		if !diagPresent(ds, w) {
			t.Errorf("missing diagnostic %+v; got:\n%s", w, dumpDiags(ds))
		}
	}
	for _, d := range ds {
		if d.Code == "" || d.Message == "" || d.ErrorType != ErrorTypeOf(d.Code) || d.File != "t.yaml" {
			t.Errorf("malformed diagnostic %+v", d)
		}
	}
}

func mustParseSpec(t *testing.T, src string) *Spec {
	t.Helper()
	s, ds := Parse("t.yaml", []byte(src), testCompile)
	if s == nil || ds.HasErrors() {
		t.Fatalf("unexpected diagnostics:\n%s", dumpDiags(ds))
	}
	return s
}

const parseBase02 = `version: "0.2"
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
		{"parseBase02", parseBase02},
		{"gate-and-loops", parseBase02 + `      - id: fix
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
		{"iteration", parseBase02 + `      - id: hunt
        intent: "hunt"
        output_contract: Out
        max_iterations: 5
        exit_criterion: "result.score > 0.9"
        score_expr: "result.score"
        accumulate: "result.label"
        accumulate_key: "item.id"
`},
		{"flow-step", parseBase02 + `      - id: sub
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
    on_timeout: revise
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
				_, ds := Parse("t.yaml", []byte(tt.src), testCompile)
				expectDiags(t, ds, wantDiag{code: CodeUnknownField, path: "x-defaults", line: 2, col: 1})
				if len(ds) != 1 {
					t.Errorf("want exactly one diagnostic, got:\n%s", dumpDiags(ds))
				}
				return
			}
			mustParseSpec(t, tt.src)
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []wantDiag
	}{
		// --- versions and root ---
		{"missing-version", "flows: {}\n", []wantDiag{{CodeMissingVersion, "version", 1, 1}}},
		{"unknown-version", "version: \"9.9\"\n", []wantDiag{{CodeUnknownVersion, "version", 1, 10}}},
		{"version-float", "version: 0.2\nflows: {}\nbogus: 1\n", []wantDiag{
			{CodeVersionNotString, "version", 1, 10}, {CodeUnknownField, "bogus", 3, 1}}},
		{"not-mapping", "- a\n- b\n", []wantDiag{{CodeNotMapping, "root", 1, 1}}},
		{"duplicate-key", "version: \"0.2\"\nflows: {}\nflows: {}\n", []wantDiag{{CodeDuplicateKey, "flows", 3, 1}}},
		{"workflow-in-01", "version: \"0.1\"\nworkflow: {name: x, description: y, input: {}}\n",
			[]wantDiag{{CodeNeedsVersion, "workflow", 2, 1}}},
		{"unknown-top", "version: \"0.2\"\nflow: {}\n", []wantDiag{{CodeUnknownField, "flow", 2, 1}}},

		// --- functions ---
		{"gate-in-01", strings.Replace(`version: "0.1"
functions:
  g: {mode: gate, intent: x, input: {}, output: O}
`, "", "", 1), []wantDiag{{CodeNeedsVersion, "functions.g.mode", 3, 13}}},
		{"bad-mode", "version: \"0.2\"\nfunctions:\n  f: {mode: infr}\n", []wantDiag{{CodeInvalidValue, "functions.f.mode", 3, 13}}},
		{"missing-mode", "version: \"0.2\"\nfunctions:\n  f: {intent: x}\n", []wantDiag{{CodeMissingField, "functions.f", 3, 3}}},
		{"retries-zero", strings.Replace(parseBase02, "    ensure: [", "    retries: 0\n    ensure: [", 1),
			[]wantDiag{{CodeOutOfRange, "functions.work.retries", 12, 14}}},
		{"retries-string", strings.Replace(parseBase02, "    ensure: [", "    retries: \"3\"\n    ensure: [", 1),
			[]wantDiag{{CodeWrongType, "functions.work.retries", 12, 14}}},
		{"undefined-output", strings.Replace(parseBase02, "    output: Out\n    ensure", "    output: Outt\n    ensure", 1),
			[]wantDiag{{CodeUndefinedContract, "functions.work.output", 11, 13}}},
		{"gate-fn-fields", strings.Replace(parseBase02, "    mode: gate\n", "    mode: gate\n    retries: 2\n    ensure: [\"true\"]\n", 1),
			[]wantDiag{{CodeGateFunctionField, "functions.approve.retries", 15, 5}, {CodeGateFunctionField, "functions.approve.ensure", 16, 5}}},
		{"unknown-result-field", strings.Replace(parseBase02, "result.score > 0.5", "result.scor > 0.5", 1),
			[]wantDiag{{CodeUnknownResultField, "functions.work.ensure", 12, 14}}},
		{"expr-forbidden", strings.Replace(parseBase02, "result.score > 0.5", "result.__class__", 1),
			[]wantDiag{{CodeExprForbidden, "functions.work.ensure", 12, 22}}},
		{"guardrails", strings.Replace(parseBase02, "    ensure: [", "    guardrails: [\"\", \"(\"]\n    ensure: [", 1),
			[]wantDiag{{CodeEmptyGuardrail, "functions.work.guardrails.0", 12, 18}, {CodeInvalidRegex, "functions.work.guardrails[1]", 12, 22}}},
		{"run-on-infer", strings.Replace(parseBase02, "    ensure: [", "    run: echo\n    ensure: [", 1),
			[]wantDiag{{CodeRunField, "functions.work.run", 12, 5}}},
		{"run-in-01", `version: "0.1"
functions:
  f: {mode: compute, intent: x, input: {}, output: O, run: echo}
`, []wantDiag{{CodeNeedsVersion, "functions.f.run", 3, 55}}},
		{"on-timeout-not-gate", strings.Replace(parseBase02, "    ensure: [", "    on_timeout: kill\n    ensure: [", 1),
			[]wantDiag{{CodeGateFunctionField, "functions.work.on_timeout", 12, 5}}},
		{"on-timeout-bad", strings.Replace(parseBase02, "    mode: gate\n", "    mode: gate\n    on_timeout: explode\n", 1),
			[]wantDiag{{CodeInvalidValue, "functions.approve.on_timeout", 15, 17}}},
		{"opaque-inline", strings.Replace(parseBase02, "input: {text: {type: string}}\n    output: Out\n    ensure", "input: {text: {type: string, opaque: true}}\n    output: Out\n    ensure", 1),
			[]wantDiag{{CodeOpaqueInline, "functions.work.intent", 9, 13}}},
		{"cache-on-infer", strings.Replace(parseBase02, "    ensure: [", "    cache: true\n    ensure: [", 1),
			[]wantDiag{{CodeCacheField, "functions.work.cache", 12, 5}}},

		// --- contracts ---
		{"contract-field-not-map", "version: \"0.2\"\ncontracts:\n  C:\n    a: string\n",
			[]wantDiag{{CodeWrongType, "contracts.C.a", 4, 8}}},

		// --- flows and steps, structural ---
		{"steps-empty", "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps: []\n",
			[]wantDiag{{CodeEmptyValue, "flows.main.steps", 5, 12}}},
		{"steps-missing", "version: \"0.2\"\nflows:\n  main:\n    input: {}\n",
			[]wantDiag{{CodeMissingField, "flows.main", 3, 3}}},
		{"step-unknown-field", parseBase02 + "        polcy: gate\n",
			[]wantDiag{{CodeUnknownField, "flows.main.steps.0.polcy", 23, 9}}},
		{"step-policy-enum", parseBase02 + "      - {id: g, function: approve, on_approve: ~, on_revise: a, on_kill: ~, policy: auto}\n",
			[]wantDiag{{CodeInvalidValue, "flows.main.steps.1.policy", 23, 85}}},
		{"input-number", parseBase02 + "        inputs: {n: 5}\n", []wantDiag{{CodeDuplicateKey, "flows.main.steps.0.inputs", 23, 9}}},
		{"input-number2", strings.Replace(parseBase02, `inputs: {text: "$.input.text"}`, `inputs: {text: 5}`, 1),
			[]wantDiag{{CodeWrongType, "flows.main.steps.0.inputs.text", 22, 24}}},
		// An empty intent is no step mode (the original's semantic rule).
		{"empty-intent", parseBase02 + "      - {id: b, intent: \"\"}\n", []wantDiag{{CodeStepMode, "flows.main.steps.b", 23, 25}}},
		{"intent-in-01", "version: \"0.1\"\nflows:\n  main:\n    input: {}\n    output: O\n    steps:\n      - {id: a, intent: x, inputs: {}}\n",
			[]wantDiag{{CodeNeedsVersion, "flows.main.steps.0.intent", 7, 17}, {CodeMissingField, "flows.main.steps.0", 7, 9}}},
		{"type-in-02", parseBase02 + "        type: function\n", []wantDiag{{CodeNeedsVersion, "flows.main.steps.0.type", 23, 9}}},
		{"step-not-mapping", parseBase02 + "      - just-a-string\n", []wantDiag{{CodeWrongType, "flows.main.steps.1", 23, 9}}},
		{"workflow-name", `version: "0.2"
workflow: {name: Code_Review, description: d, input: {}}
flows:
  main: {input: {}, steps: [{id: a, intent: x}]}
`, []wantDiag{{CodeInvalidName, "workflow.name", 2, 18}}},
		{"max-iterations-zero", parseBase02 + "        max_iterations: 0\n", []wantDiag{{CodeOutOfRange, "flows.main.steps.0.max_iterations", 23, 25}}},
		{"budget-usd-negative", parseBase02 + "      - {id: b, intent: x, budget: {usd: -1}}\n", []wantDiag{{CodeOutOfRange, "flows.main.steps.1.budget.usd", 23, 42}}},
		{"tokens-in-01", `version: "0.1"
functions:
  f: {mode: infer, intent: x, input: {}, output: O, budget: {tokens: 5}}
`, []wantDiag{{CodeNeedsVersion, "functions.f.budget.tokens", 3, 62}}},

		// --- semantic: steps ---
		{"duplicate-step-id", parseBase02 + "      - {id: a, intent: x}\n", []wantDiag{{CodeDuplicateStepID, "flows.main.steps.a.id", 23, 14}}},
		{"undefined-function", parseBase02 + "      - {id: b, function: wrk}\n", []wantDiag{{CodeUndefinedFunction, "flows.main.steps.b.function", 23, 27}}},
		{"undefined-flow", parseBase02 + "      - {id: b, flow: nope}\n", []wantDiag{{CodeUndefinedFlow, "flows.main.steps.b.flow", 23, 23}}},
		{"undefined-step-depends", parseBase02 + "        depends_on: [zz]\n", []wantDiag{{CodeUndefinedStep, "flows.main.steps.a.depends_on", 23, 22}}},
		{"undefined-step-input", parseBase02 + "      - {id: b, intent: x, inputs: {p: \"$.steps.q.output\"}}\n",
			[]wantDiag{{CodeUndefinedStep, "flows.main.steps.b.inputs.p", 23, 40}}},
		{"undefined-step-skip-if", parseBase02 + "      - {id: b, intent: x, skip_if: \"$.steps.q.output.x == 1\"}\n",
			[]wantDiag{{CodeUndefinedStep, "flows.main.steps.b.skip_if", 23, 37}}},
		{"undefined-input", parseBase02 + "      - {id: b, intent: x, inputs: {p: \"$.input.nope\"}}\n",
			[]wantDiag{{CodeUndefinedInput, "flows.main.steps.b.inputs.p", 23, 40}}},
		{"bad-ref-no-output", parseBase02 + "      - {id: b, intent: x, inputs: {p: \"$.steps.a.result\"}}\n",
			[]wantDiag{{CodeBadRef, "flows.main.steps.b.inputs.p", 23, 40}}},
		{"bad-ref-root", parseBase02 + "      - {id: b, intent: x, inputs: {p: \"$.foo\"}}\n",
			[]wantDiag{{CodeBadRef, "flows.main.steps.b.inputs.p", 23, 40}}},
		{"cycle", parseBase02 + "        depends_on: [b]\n      - {id: b, intent: x, inputs: {p: \"$.steps.a.output\"}}\n",
			[]wantDiag{{CodeDependencyCycle, "flows.main.steps.a.depends_on", 20, 13}}},
		{"self-cycle", parseBase02 + "        depends_on: [a]\n", []wantDiag{{CodeDependencyCycle, "flows.main.steps.a.depends_on", 20, 13}}},
		{"recursive-flow", parseBase02 + "      - {id: b, flow: main}\n", []wantDiag{{CodeRecursiveFlow, "flows.main.steps.b.flow", 23, 23}}},
		{"step-mode-none", parseBase02 + "      - {id: b, agent: x}\n", []wantDiag{{CodeStepMode, "flows.main.steps.b", 23, 9}}},
		{"step-mode-two", parseBase02 + "      - {id: b, intent: x, flow: main}\n", []wantDiag{{CodeStepMode, "flows.main.steps.b", 23, 28}}},
		{"function-step-field", parseBase02 + "        retries: 2\n", []wantDiag{{CodeFunctionStepField, "flows.main.steps.a.retries", 23, 9}}},
		{"flow-step-field", parseBase02 + "      - {id: b, flow: child, agent: claude}\n  child: {input: {}, steps: [{id: c, intent: x}]}\n",
			[]wantDiag{{CodeFlowStepField, "flows.main.steps.b.agent", 23, 30}}},
		{"gate-step-field", parseBase02 + "      - {id: g, function: approve, on_approve: ~, on_revise: a, on_kill: ~, on_fail: a}\n",
			[]wantDiag{{CodeGateStepField, "flows.main.steps.g.on_fail", 23, 77}}},
		{"gate-routing-missing", parseBase02 + "      - {id: g, function: approve, on_revise: a}\n",
			[]wantDiag{{CodeGateRoutingMissing, "flows.main.steps.g.on_approve", 23, 9}, {CodeGateRoutingMissing, "flows.main.steps.g.on_kill", 23, 9}}},
		{"gate-revise-null", parseBase02 + "      - {id: g, function: approve, on_approve: ~, on_revise: ~, on_kill: ~}\n",
			[]wantDiag{{CodeGateReviseTarget, "flows.main.steps.g.on_revise", 23, 62}}},
		{"gate-revise-self", parseBase02 + "      - {id: g, function: approve, on_approve: ~, on_revise: g, on_kill: ~}\n",
			[]wantDiag{{CodeGateReviseTarget, "flows.main.steps.g.on_revise", 23, 62}}},
		{"gate-revise-later", strings.Replace(parseBase02, "      - id: a\n", "      - {id: g, function: approve, on_approve: ~, on_revise: a, on_kill: ~}\n      - id: a\n", 1),
			[]wantDiag{{CodeGateReviseTarget, "flows.main.steps.g.on_revise", 20, 62}}},
		{"not-a-gate", parseBase02 + "        on_approve: ~\n", []wantDiag{{CodeNotAGate, "flows.main.steps.a.on_approve", 23, 9}}},
		{"policy-fallback", parseBase02 + "      - {id: g, function: approve, on_approve: ~, on_revise: a, on_kill: ~, policy_fallback: gate}\n",
			[]wantDiag{{CodePolicyFallback, "flows.main.steps.g.policy_fallback", 23, 77}}},
		{"on-fail-unreachable", parseBase02 + "      - {id: b, intent: x, on_fail: a}\n", []wantDiag{{CodeOnFailUnreachable, "flows.main.steps.b.on_fail", 23, 28}}},
		{"on-fail-undefined", parseBase02 + "      - {id: b, intent: x, ensure: [\"true\"], on_fail: zz}\n", []wantDiag{{CodeUndefinedStep, "flows.main.steps.b.on_fail", 23, 55}}},
		{"iteration-field", parseBase02 + "      - {id: b, intent: x, exit_criterion: \"result.x\", accumulate_key: \"item\"}\n",
			[]wantDiag{{CodeIterationField, "flows.main.steps.b.exit_criterion", 23, 28}, {CodeIterationField, "flows.main.steps.b.accumulate_key", 23, 56}}},
		{"step-guardrail", parseBase02 + "      - {id: b, intent: x, guardrails: [\"[\"]}\n", []wantDiag{{CodeInvalidRegex, "flows.main.steps.b.guardrails[0]", 23, 41}}},
		{"expr-syntax-step", parseBase02 + "      - {id: b, intent: x, ensure: [\"len(result.x\"]}\n", []wantDiag{{CodeExprSyntax, "flows.main.steps.b.ensure", 23, -1}}},
		{"inline-result-field", parseBase02 + "      - {id: b, intent: x, output_contract: Out, ensure: [\"result.lable == 'x'\"]}\n",
			[]wantDiag{{CodeUnknownResultField, "flows.main.steps.b.ensure", 23, 59}}},
		{"inline-undefined-contract", parseBase02 + "      - {id: b, intent: x, output_contract: Nope}\n",
			[]wantDiag{{CodeUndefinedContract, "flows.main.steps.b.output_contract", 23, 45}}},
		{"cache-field", parseBase02 + "        cache: true\n", []wantDiag{{CodeCacheField, "flows.main.steps.a.cache", 23, 9}}},
		{"run-field", parseBase02 + "        run: echo\n", []wantDiag{{CodeRunField, "flows.main.steps.a.run", 23, 9}}},
		{"run-bad-type", parseBase02 + "      - {id: b, intent: x, run: 5}\n", []wantDiag{{CodeWrongType, "flows.main.steps.1.run", 23, 33}}},
		{"opaque-inline-step", strings.Replace(parseBase02, "    input: {text: {type: string}}\n    output: Out\n    steps", "    input: {text: {type: string, opaque: true}}\n    output: Out\n    steps", 1) +
			"      - {id: b, intent: \"use {t}\", inputs: {t: \"$.input.text\"}}\n",
			[]wantDiag{{CodeOpaqueInline, "flows.main.steps.b.intent", 23, 25}}},
		{"invalid-output-schema", parseBase02 + "        output_schema: {type: objekt}\n", []wantDiag{{CodeInvalidSchema, "flows.main.steps.a.output_schema", 23, 31}}},
		{"parallel-field-v03", strings.Replace(parseBase02, `"0.2"`, `"0.3"`, 1) + "        source: \"$.input.text\"\n",
			[]wantDiag{{CodeParallelField, "flows.main.steps.a.source", 23, 9}}},
		{"parallel-requires", strings.Replace(parseBase02, `"0.2"`, `"0.3"`, 1) + "      - {id: p, type: parallel_dispatch, source: \"$.steps.a.output\"}\n      - {id: d, type: decompose, intent: x}\n",
			[]wantDiag{{CodeParallelRequires, "flows.main.steps.p.intent_template", 23, 9}, {CodeParallelRequires, "flows.main.steps.d.agent", 24, 9},
				{CodeParallelRequires, "flows.main.steps.d.output_contract", 24, 9}}},
		{"type-mismatch", strings.Replace(parseBase02, `"0.2"`, `"0.3"`, 1) + "        type: inline\n", []wantDiag{{CodeStepMode, "flows.main.steps.a.type", 23, 15}}},
		{"flow-output-undefined", strings.Replace(parseBase02, "    output: Out\n    steps", "    output: Ot\n    steps", 1),
			[]wantDiag{{CodeUndefinedContract, "flows.main.output", 18, 13}}},

		// --- workflow ---
		{"workflow-entry", `version: "0.2"
workflow: {name: wf, description: d, input: {}}
flows:
  a: {input: {}, steps: [{id: s, intent: x}]}
  b: {input: {}, steps: [{id: s, intent: x}]}
`, []wantDiag{{CodeWorkflowEntry, "workflow.name", 2, 18}}},
		{"workflow-inputs", `version: "0.2"
workflow: {name: wf, description: d, input: {x: {type: string}}}
flows:
  a: {input: {y: {type: string}}, steps: [{id: s, intent: x}]}
`, []wantDiag{{CodeWorkflowInputs, "workflow.input", 2, 38}}},
		{"workflow-missing-description", `version: "0.2"
workflow: {name: wf, input: {}}
flows:
  wf: {input: {}, steps: [{id: s, intent: x}]}
`, []wantDiag{{CodeMissingField, "workflow", 2, 1}}},
		{"workflow-param-type", `version: "0.2"
workflow: {name: wf, description: d, input: {x: {type: strin}}}
flows:
  wf: {input: {x: {}}, steps: [{id: s, intent: x}]}
`, []wantDiag{{CodeInvalidValue, "workflow.input.x.type", 2, 56}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ds := Parse("t.yaml", []byte(tt.src), testCompile)
			if s != nil {
				t.Errorf("spec accepted; want rejection")
			}
			expectDiags(t, ds, tt.want...)
		})
	}
}

func TestKahnOrder(t *testing.T) {
	tests := []struct {
		name  string
		steps string
		want  []string
	}{
		{"fifo", `
      - {id: a, intent: x}
      - {id: b, intent: x, depends_on: [a]}
      - {id: c, intent: x}
`, []string{"a", "c", "b"}},
		{"input-ref-edge", `
      - {id: a, intent: x, inputs: {p: "$.steps.b.output"}}
      - {id: b, intent: x}
`, []string{"b", "a"}},
		{"skip-if-not-an-edge", `
      - {id: a, intent: x, skip_if: "$.steps.b.output.done == True"}
      - {id: b, intent: x}
`, []string{"a", "b"}},
		{"diamond", `
      - {id: d, intent: x, depends_on: [b, c]}
      - {id: c, intent: x, depends_on: [a]}
      - {id: b, intent: x, depends_on: [a]}
      - {id: a, intent: x}
`, []string{"a", "c", "b", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParseSpec(t, "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:"+tt.steps)
			var got []string
			for _, st := range s.Flows["main"].OrderedSteps() {
				got = append(got, st.ID)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNormalise(t *testing.T) {
	s := mustParseSpec(t, `version: "0.3"
contracts:
  Out: {score: {type: number}, tags: {type: array, optional: true}}
  Tasks: {tasks: {type: array}}
functions:
  work:
    mode: infer
    intent: "Work on {text}"
    input: {text: {type: string}}
    output: Out
    ensure: ["result.score > 0.5"]
    guardrails: ["Secret"]
    model: m1
    budget: {ms: 100, usd: 0.5}
  calc:
    mode: compute
    intent: calc
    output: Out
    retries: 5
    run: "echo '{\"score\": 1}'"
  gate:
    mode: gate
    timeout: 30
flows:
  main:
    input: {text: {type: string}, secret: {type: string, opaque: true, required: true, default: "x"}}
    steps:
      - {id: w, function: work, inputs: {text: "$.input.text"}}
      - {id: c, function: calc}
      - {id: i, intent: inline, output_schema: {type: object, required: [ok]}}
      - {id: f, flow: child}
      - {id: d, type: decompose, agent: claude, intent: split, output_contract: Tasks}
      - {id: p, type: parallel_dispatch, source: "$.steps.d.output.tasks", intent_template: "do {id}"}
      - {id: g, function: gate, on_approve: ~, on_revise: w, on_kill: ~}
  child:
    input: {}
    steps:
      - {id: x, intent: x, run: [echo, "{}"]}
`)
	main := s.Flows["main"]
	st := func(id string) *Step { return main.Step(id) }
	w := st("w")
	if w.Kind != KindFunction || w.Fn != s.Functions["work"] || w.Intent != "Work on {text}" || w.Retries != 3 ||
		len(w.Ensure) != 1 || w.Model != "m1" || w.Budget == nil || w.Budget.MS != 100 || *w.Budget.USD != 0.5 ||
		w.OutputContract != "Out" || len(w.Guardrails) != 1 {
		t.Errorf("function step not normalised: %+v", w)
	}
	if !w.Guardrails[0].Re.MatchString("a\nsecret here") {
		t.Errorf("guardrail is not case-insensitive/multiline")
	}
	if w.Ensure[0].Pos.Line != 11 || w.Ensure[0].Kind != ExprEnsure {
		t.Errorf("ensure pos/kind = %+v", w.Ensure[0])
	}
	if c := st("c"); c.Retries != 5 || c.Fn.Run == nil || c.Fn.Run.Shell == "" {
		t.Errorf("compute step: %+v", c)
	}
	if i := st("i"); i.Kind != KindInline || i.Retries != 1 || i.Schema == nil || i.OutputSchema["type"] != "object" {
		t.Errorf("inline step: %+v", i)
	}
	if f := st("f"); f.Kind != KindFlow || f.Retries != 1 {
		t.Errorf("flow step: %+v", f)
	}
	if d := st("d"); d.Kind != KindDecompose || d.Retries != 2 || d.Type != "decompose" {
		t.Errorf("decompose step: %+v", d)
	}
	if p := st("p"); p.Kind != KindParallelDispatch || p.Retries != 2 || p.MaxConcurrent != 3 || p.Isolation != "worktree" ||
		p.Require != "all" || p.Merge != "sequential_apply" {
		t.Errorf("parallel step: %+v", p)
	}
	if g := st("g"); !g.IsGate() || g.Fn.OnTimeout != "kill" || g.Fn.Approver != "any" || g.Fn.Timeout != 30 || g.OnRevise != "w" {
		t.Errorf("gate step: %+v / %+v", g, g.Fn)
	}
	if x := s.Flows["child"].Steps[0]; x.Run == nil || strings.Join(x.Run.Argv, " ") != "echo {}" {
		t.Errorf("inline run: %+v", x.Run)
	}
	sec := main.Input[1]
	if !sec.Opaque || !sec.Required || !sec.HasDefault || sec.Default != "x" || sec.Schema["type"] != "string" || sec.Schema["opaque"] != nil {
		t.Errorf("param: %+v", sec)
	}
	if got := strings.Join(s.FlowNames, ","); got != "main,child" {
		t.Errorf("FlowNames = %s", got)
	}
	if got := strings.Join(s.FunctionNames, ","); got != "work,calc,gate" {
		t.Errorf("FunctionNames = %s", got)
	}
	if s.Contracts["Out"].Schema == nil || s.Contracts["Out"].Hash == "" || !s.Contracts["Out"].Field("tags").Optional {
		t.Errorf("contract not built: %+v", s.Contracts["Out"])
	}
	if s.Version != "0.3" || string(s.Source) == "" || s.File != "t.yaml" {
		t.Errorf("spec header: %q %q", s.Version, s.File)
	}
}

func TestPositions(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want wantDiag
	}{
		{"expr-plain", parseBase02 + "      - id: b\n        intent: x\n        ensure: [result.__x]\n",
			wantDiag{CodeExprForbidden, "flows.main.steps.b.ensure", 25, 25}},
		{"expr-double-quoted-escapes", parseBase02 + `      - {id: b, intent: x, ensure: ["result.a != \"\" and result.__x"]}` + "\n",
			wantDiag{CodeExprForbidden, "flows.main.steps.b.ensure", 23, 66}},
		{"expr-single-quoted-escapes", parseBase02 + `      - {id: b, intent: x, ensure: ['result.a != '''' and result.__x']}` + "\n",
			wantDiag{CodeExprForbidden, "flows.main.steps.b.ensure", 23, 66}},
		{"expr-block-scalar", parseBase02 + "      - id: b\n        intent: x\n        skip_if: >\n          result.__x\n",
			wantDiag{CodeExprForbidden, "flows.main.steps.b.skip_if", 25, 18}},
		{"yaml-syntax-real-line", "version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - id: a\n        intent: x\n      - id: b\n        intent: \"unclosed\n",
			wantDiag{CodeYAMLSyntax, "root", 9, 1}},
		{"empty-key-path", "version: \"0.2\"\n\"\": 1\n", wantDiag{CodeUnknownField, `""`, 2, 1}},
		{"schema-error-node", parseBase02 + "        output_schema:\n          type: object\n          required: done\n",
			wantDiag{CodeInvalidSchema, "flows.main.steps.a.output_schema", 25, 21}},
		{"unknown-type-in-items", "version: \"0.2\"\ncontracts:\n  R:\n    xs: {type: array, items: {type: Finding}}\n",
			wantDiag{CodeUnknownType, "contracts.R.xs", 4, 37}},
		{"missing-field-at-parent-key", "version: \"0.2\"\nfunctions:\n  f:\n    intent: x\n", wantDiag{CodeMissingField, "functions.f", 3, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := Parse("t.yaml", []byte(tt.src), testCompile)
			expectDiags(t, ds, tt.want)
		})
	}
}

func TestSuggestions(t *testing.T) {
	tests := []struct {
		name, src, code, sugg string
	}{
		{"alias-cwd", parseBase02 + "      - {id: b, intent: x, run: {cmd: ls, cwd: /tmp}}\n", CodeUnknownField, `did you mean "dir"?`},
		{"alias-type-on-function", "version: \"0.2\"\nfunctions:\n  f: {type: infer}\n", CodeUnknownField, `did you mean "mode"?`},
		{"typo", parseBase02 + "        depend_on: [a]\n", CodeUnknownField, `did you mean "depends_on"?`},
		{"unrelated", parseBase02 + "        colour: red\n", CodeUnknownField, "Remove unrecognised fields"},
		{"enum", parseBase02 + "      - {id: g, function: approve, on_approve: ~, on_revise: a, on_kill: ~, policy: flg}\n", CodeInvalidValue,
			`Allowed values: [gate, flag, skip] (did you mean "flag"?)`},
		{"missing-required-lists-missing", "version: \"0.1\"\nfunctions:\n  f: {mode: infer}\n", CodeMissingField, "Add required field(s): [intent, input, output]"},
		{"unknown-version", "version: \"0.4\"\n", CodeUnknownVersion, `Use version: "0.3"`},
		{"version-not-string", "version: 0.3\n", CodeVersionNotString, `Quote it: version: "0.3"`},
		{"undefined-step", parseBase02 + "        depends_on: [aa]\n", CodeUndefinedStep, `did you mean "a"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := Parse("t.yaml", []byte(tt.src), testCompile)
			for _, d := range ds {
				if d.Code == tt.code && d.Suggestion == tt.sugg {
					return
				}
			}
			t.Errorf("want %s with suggestion %q; got:\n%s", tt.code, tt.sugg, dumpDiags(ds))
		})
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"depends_on", "depend_on", 1}, {"ab", "ba", 1}, {"ensure", "ensrue", 1}, {"é", "e", 1}} {
		if got := editDistance(tt.a, tt.b); got != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
}

func TestScalarTypes(t *testing.T) {
	step := func(extra string) string { return parseBase02 + "      - {id: b, intent: x, " + extra + "}\n" }
	tests := []struct {
		name string
		src  string
		want wantDiag
		msg  string
	}{
		{"bool-not-bool", step("cache: yes please"), wantDiag{CodeWrongType, "flows.main.steps.1.cache", 23, 35}, "'yes please' is not of type 'boolean'"},
		{"int-as-float-ok", step("retries: 2.0, depends_on: [zz]"), wantDiag{CodeUndefinedStep, "flows.main.steps.b.depends_on", 23, 55}, ""},
		{"int-fraction", step("retries: 2.5"), wantDiag{CodeWrongType, "flows.main.steps.1.retries", 23, 37}, "2.5 is not of type 'integer'"},
		{"int-huge", step("retries: 99999999999999999999999"), wantDiag{CodeWrongType, "flows.main.steps.1.retries", 23, 37}, ""},
		{"number-string", step("budget: {usd: cheap}"), wantDiag{CodeWrongType, "flows.main.steps.1.budget.usd", 23, 42}, "'cheap' is not of type 'number'"},
		{"list-item-not-string", step("ensure: [true, 1]"), wantDiag{CodeWrongType, "flows.main.steps.1.ensure.0", 23, 37}, "True is not of type 'string'"},
		{"null-intent", "version: \"0.2\"\nflows:\n  m:\n    input: {}\n    steps: [{id: a, intent: ~}]\n", wantDiag{CodeWrongType, "flows.m.steps.0.intent", 5, 29}, "None is not of type 'string'"},
		{"mapping-as-string", step("model: {a: 1}"), wantDiag{CodeWrongType, "flows.main.steps.1.model", 23, 35}, "{…} is not of type 'string'"},
		{"seq-as-object", step("output_schema: [1]"), wantDiag{CodeWrongType, "flows.main.steps.1.output_schema", 23, 43}, "[…] is not of type 'object'"},
		{"require-zero", strings.Replace(step("type: parallel_dispatch, source: \"$.steps.a.output\", intent_template: t, require: 0"), `"0.2"`, `"0.3"`, 1),
			wantDiag{CodeOutOfRange, "flows.main.steps.1.require", 23, -1}, ""},
		{"run-empty-argv", step("run: []"), wantDiag{CodeEmptyValue, "flows.main.steps.1.run", 23, 33}, ""},
		{"run-mapping-no-cmd", step("run: {dir: x}"), wantDiag{CodeMissingField, "flows.main.steps.1.run", 23, 28}, ""},
		{"env-not-string", step("run: {cmd: ls, env: {A: 1}}"), wantDiag{CodeWrongType, "flows.main.steps.1.run.env.A", 23, 52}, ""},
		{"param-not-mapping", "version: \"0.2\"\nflows:\n  m:\n    input: {x: string}\n    steps: [{id: a, intent: i}]\n", wantDiag{CodeWrongType, "flows.m.input.x", 4, 16}, ""},
		{"contract-values-not-list", "version: \"0.2\"\ncontracts:\n  C: {a: {type: string, values: x}}\n", wantDiag{CodeWrongType, "contracts.C.a.values", 3, 33}, ""},
		{"contract-not-mapping", "version: \"0.2\"\ncontracts:\n  C: 5\n", wantDiag{CodeWrongType, "contracts.C", 3, 6}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := Parse("t.yaml", []byte(tt.src), testCompile)
			expectDiags(t, ds, tt.want)
			if tt.msg != "" {
				found := false
				for _, d := range ds {
					found = found || (d.Code == tt.want.code && d.Message == tt.msg)
				}
				if !found {
					t.Errorf("want message %q; got:\n%s", tt.msg, dumpDiags(ds))
				}
			}
		})
	}
}

func TestOutputSchemaValues(t *testing.T) {
	s := mustParseSpec(t, `version: "0.2"
flows:
  m:
    input: {}
    steps:
      - id: a
        intent: x
        output_schema:
          type: object
          required: [n]
          properties:
            n: {type: integer, minimum: 1, maximum: 1.5e3}
            b: {type: boolean, default: false}
            z: {type: "null", default: ~}
            s: {type: string, const: "2024-01-01"}
`)
	os := s.Flows["m"].Steps[0].OutputSchema
	props := os["properties"].(map[string]any)
	n := props["n"].(map[string]any)
	if n["minimum"] != 1 || n["maximum"] != 1500.0 || os["required"].([]any)[0] != "n" {
		t.Errorf("numbers decoded wrong: %#v", n)
	}
	if props["b"].(map[string]any)["default"] != false || props["z"].(map[string]any)["default"] != nil {
		t.Errorf("bool/null decoded wrong: %#v", props)
	}
	if props["s"].(map[string]any)["const"] != "2024-01-01" {
		t.Errorf("string decoded wrong: %#v", props["s"])
	}
	if s.Flows["m"].Steps[0].Schema == nil {
		t.Errorf("schema not compiled")
	}
}

// TestReportsEveryProblem: one spec with problems of every stage gets all of
// them, sorted by position.
func TestReportsEveryProblem(t *testing.T) {
	src := `version: "0.2"
contracts:
  Out: {score: {type: numbr}}
functions:
  f: {mode: infer, intent: x, output: Out, ensure: ["result.scor > 1"], retries: 0}
flows:
  main:
    input: {}
    steps:
      - {id: a, function: f, inputs: {x: "$.input.nope"}, polcy: gate}
      - {id: a, intent: y, depends_on: [zz]}
`
	_, ds := Parse("t.yaml", []byte(src), testCompile)
	want := []string{CodeUnknownType, CodeUnknownResultField, CodeOutOfRange, CodeUndefinedInput, CodeUnknownField,
		CodeDuplicateStepID, CodeUndefinedStep}
	var got []string
	for _, d := range ds {
		got = append(got, d.Code)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("codes = %v\nwant    %v\n%s", got, want, dumpDiags(ds))
	}
	for i := 1; i < len(ds); i++ {
		if ds[i-1].Line > ds[i].Line || (ds[i-1].Line == ds[i].Line && ds[i-1].Column > ds[i].Column) {
			t.Errorf("not sorted: %v before %v", ds[i-1], ds[i])
		}
	}
}

// TestParseConcurrent: Parse is safe to call from many goroutines (the MCP
// server validates specs concurrently); run with -race.
func TestParseConcurrent(t *testing.T) {
	src := []byte(genLargeSpec(20, 2, 100))
	done := make(chan error, 8)
	for range 8 {
		go func() {
			s, ds := Parse("c.yaml", src, testCompile)
			if s == nil {
				done <- fmt.Errorf("rejected: %v", ds)
				return
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// An unknown key on a contract field is a warning, not an error: the
// original accepts extra keys there, and a spec valid for it stays valid.
func TestContractFieldUnknownKeyWarns(t *testing.T) {
	src := "version: \"0.2\"\ncontracts:\n  C:\n    a: {type: string, minLenght: 1}\nflows:\n  main:\n    input: {}\n    steps:\n      - id: s\n        intent: x\n        output_contract: C\n"
	sp, ds := Parse("w.stratum.yaml", []byte(src), testCompile)
	if sp == nil {
		t.Fatalf("spec rejected:\n%s", ds.Error())
	}
	if len(ds) != 1 || ds[0].Severity != SeverityWarning || ds[0].Code != CodeUnknownField ||
		ds[0].Path != "contracts.C.a.minLenght" || ds[0].Line != 4 || ds[0].Column != 23 ||
		!strings.Contains(ds[0].Suggestion, "minLength") {
		t.Fatalf("want one unknown-field warning at 4:23 suggesting minLength, got:\n%s", ds.Error())
	}
	if _, ok := sp.Contracts["C"].Field("a").Keywords["minLenght"]; ok {
		t.Error("the unknown key must not reach the compiled schema")
	}
}

// The workflow-inputs message lists the keys as Python prints a list of str.
func TestWorkflowInputsMessage(t *testing.T) {
	_, ds := Parse("w.stratum.yaml", []byte(`version: "0.2"
workflow: {name: wf, description: d, input: {x: {type: string}}}
flows:
  a: {input: {"it's": {type: string}}, steps: [{id: s, intent: x}]}
`), testCompile)

	want := `Workflow input keys ['x'] do not match entry flow 'a' input keys ["it's"]`
	for _, d := range ds {
		if d.Code == CodeWorkflowInputs {
			if d.Message != want {
				t.Fatalf("message %q, want %q", d.Message, want)
			}
			return
		}
	}
	t.Fatalf("no %s diagnostic:\n%s", CodeWorkflowInputs, dumpDiags(ds))
}
