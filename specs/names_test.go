package specs

import (
	"strconv"
	"strings"
	"testing"
)

// TestControlCharNames: every name (keys and fields that name something)
// with a C0, DEL or C1 control character is an ir_validation_error
// invalid-name at the name, and nothing printed repeats the character.
func TestControlCharNames(t *testing.T) {
	// q quotes a YAML double-quoted string carrying the control character.
	q := func(s string) string { return strconv.Quote(s) }
	tests := []struct {
		name, src, path string
	}{
		{"step-id-esc", strings.Replace(parseBase02, "- id: a", "- id: "+q("a\x1b[2J"), 1), "flows.main.steps.0.id"},
		{"step-id-nul", strings.Replace(parseBase02, "- id: a", "- id: "+q("a\x00"), 1), "flows.main.steps.0.id"},
		{"step-id-c1", strings.Replace(parseBase02, "- id: a", "- id: "+q("a\u009b2J"), 1), "flows.main.steps.0.id"},
		{"flow-name", strings.Replace(parseBase02, "  main:\n", "  "+q("main\x7f")+":\n", 1), `flows.main\x7f`},
		{"function-name", strings.Replace(parseBase02, "  approve:\n", "  "+q("appr\u0085ove")+":\n", 1), `functions.appr\x85ove`},
		{"contract-name", strings.Replace(parseBase02, "  Out:\n", "  "+q("Out\x1b")+":\n", 1), `contracts.Out\x1b`},
		{"contract-field", strings.Replace(parseBase02, "    label:", "    "+q("lab\tel")+":", 1), `contracts.Out.lab\x09el`},
		{"param", strings.Replace(parseBase02, "input: {text: {type: string}}\n    output: Out\n    steps", "input: {"+q("te\rxt")+": {type: string}}\n    output: Out\n    steps", 1), `flows.main.input.te\x0dxt`},
		{"function-ref", strings.Replace(parseBase02, "function: work", "function: "+q("work\x1b"), 1), "flows.main.steps.0.function"},
		{"output-ref", strings.Replace(parseBase02, "    output: Out\n    ensure", "    output: "+q("Out\x00")+"\n    ensure", 1), "functions.work.output"},
		{"next", parseBase02 + "        next: " + q("a\x1b") + "\n", "flows.main.steps.0.next"},
		{"on-fail", parseBase02 + "        on_fail: " + q("a\x1b") + "\n", "flows.main.steps.0.on_fail"},
		{"depends-on", parseBase02 + "      - {id: b, intent: x, depends_on: [a, " + q("a\x1b") + "]}\n", "flows.main.steps.1.depends_on.1"},
		{"gate-on-revise", parseBase02 + "      - {id: g, function: approve, on_approve: ~, on_revise: " + q("a\x07") + ", on_kill: ~}\n", "flows.main.steps.1.on_revise"},
		{"gate-id", parseBase02 + "      - {id: " + q("g\x1b]0;x\x07") + ", function: approve, on_approve: ~, on_revise: a, on_kill: ~}\n", "flows.main.steps.1.id"},
		{"agent", parseBase02 + "      - {id: b, intent: x, agent: " + q("claude\x1b") + "}\n", "flows.main.steps.1.agent"},
		{"model", strings.Replace(parseBase02, "    mode: infer\n", "    mode: infer\n    model: "+q("gpt\x9b")+"\n", 1), "functions.work.model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ds := Parse("t.yaml", []byte(tt.src), testCompile)
			if s != nil {
				t.Fatalf("spec accepted")
			}
			var found *Diagnostic
			for i := range ds {
				if ds[i].Code == CodeInvalidName {
					found = &ds[i]
				}
			}
			if found == nil {
				t.Fatalf("no invalid-name diagnostic:\n%s", ds.Error())
			}
			if found.ErrorType != ValidationError || found.Path != tt.path || found.Line == 0 ||
				!strings.Contains(found.Message, "contains the control character U+") || found.Suggestion == "" {
				t.Errorf("got %+v, want path %q", *found, tt.path)
			}
			for _, d := range ds {
				if r, bad := controlRune(d.String()); bad {
					t.Errorf("printed diagnostic contains U+%04X: %s", r, d)
				}
			}
		})
	}
}

func TestDiagnosticStringEscapesControls(t *testing.T) {
	d := Diagnostic{File: "a\x1b.yaml", Line: 1, Column: 2, Severity: SeverityError, Code: CodeUnknownField,
		Message: "unknown field 'x\x1b[2J'", Suggestion: "remove \u009b"}
	want := `a\x1b.yaml:1:2: error unknown-field: unknown field 'x\x1b[2J' (remove \x9b)`
	if got := d.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
