package specs

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fuzzFile is the file name FuzzParse passes to Parse.
const fuzzFile = "fuzz.stratum.yaml"

// fuzzNasty are small hostile or odd inputs that seed FuzzParse in addition
// to the committed corpus under testdata/fuzz/FuzzParse and the spec corpora.
var fuzzNasty = []string{
	"",
	" ",
	"\n\n\n",
	"~",
	"null",
	"[]",
	"{}",
	"- 1\n- 2\n",
	"version: \"0.2\"",
	"version: 0.2",
	"version: !!binary AAAA",
	"version: !!python/object:os.system \"0.2\"",
	"version: &v \"0.2\"\nflows: *v\n",
	"version: \"0.2\"\nflows: &a {x: *a}\n",
	"a: &a [*a]\n",
	"? [a, b]\n: c\nversion: \"0.2\"\n",
	"version: \"0.2\"\n---\nversion: \"0.2\"\n",
	"--- |\n  text\n",
	"%YAML 1.2\n---\nversion: \"0.2\"\n",
	"\xef\xbb\xbfversion: \"0.2\"\n",
	"version: \"0.2\"\r\nflows:\r\n  m:\r\n    input: {}\r\n    steps: [{id: s, intent: x}]\r\n",
	"version: \"0.2\"\nflows:\n\tm: {}\n",
	"\xff\xfe\x00v",
	"version: \"0.2\"\x00\n",
	"version: \"0.2\"\nflows: {m: {input: {}, steps: [{id: s, intent: \"x\", skip_if: \"$.steps.s.output.__class__\"}]}}\n",
	"version: \"0.2\"\nflows: {m: {input: {}, steps: [{id: s, intent: \"x\", ensure: [\"((((((((((((((((((((1))))))))))))))))))))\"]}]}}\n",
	"version: \"0.2\"\nflows: {m: {input: {}, steps: [{id: s, intent: \"x\", inputs: {a: \"$.steps.s.output\"}}]}}\n",
	"version: \"0.2\"\nflows: {m: {input: {}, steps: [{id: s, flow: m}]}}\n",
	"version: \"0.2\"\ncontracts: {A: {b: {type: A}}}\n",
	"version: \"0.2\"\ncontracts: {A: {b: {type: object, items: {type: A}}}}\n",
	"version: \"0.3\"\nflows: {m: {input: {}, steps: [{id: s, type: parallel_dispatch, source: \"$\", intent_template: \"{\"}]}}\n",
	"version: \"0.2\"\nflows: {m: {input: {}, steps: [{id: s, intent: x, guardrails: [\"(?P<\", \"\\\\\"]}]}}\n",
	"version: \"0.2\"\nworkflow: {name: \"\", description: \"\", input: {}}\n",
	"version: \"0.2\"\nflows: {m: {input: {}, steps: [{id: s, intent: x, output_schema: {$ref: \"#/x\"}}]}}\n",
	"version: \"0.2\"\nflows: {m: {input: {}, steps: [{id: s, intent: x, output_schema: {$ref: \"http://example.com/s.json\"}}]}}\n",
	"version: \"0.2\"\nflows: {m: {input: {}, steps: [{id: s, intent: x, output_schema: {pattern: \"(\"}}]}}\n",
	"version: \"0.2\"\nfunctions: {f: {mode: compute, run: {cmd: [], env: {\"\": \"\"}}}}\n",
	"version: \"0.2\"\n" + strings.Repeat("x: 1\n", 3),
	"version: \"0.2\"\nx: " + strings.Repeat("[", 64) + strings.Repeat("]", 64) + "\n",
	"version: \"0.2\"\nx: " + strings.Repeat("{a: ", 40) + "1" + strings.Repeat("}", 40) + "\n",
	"version: \"0.2\"\nl0: &l0 [a, a]\nl1: &l1 [*l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0]\nl2: &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]\nl3: &l3 [*l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2]\nl4: [*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3]\n",
}

// FuzzParse decodes and validates arbitrary bytes. Parse must never panic
// (nor recover from a panic of its own), must return in bounded time, and
// must keep its contract: every diagnostic is complete (code from CODES.md in
// its class, severity, message, path, position, file), diagnostics are sorted
// and deterministic, a Spec comes back exactly when there is no error, and a
// Spec is internally consistent.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzNasty {
		f.Add([]byte(s))
	}
	for _, dir := range []string{invalidCorpusDir, validCorpusDir, examplesDir} {
		files, _ := filepath.Glob(filepath.Join(dir, specGlob))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		start := time.Now()
		spec, ds := Parse(fuzzFile, src, testCompile)
		// A hang detector, not a benchmark: the fuzzer's inputs are small.
		if d := time.Since(start); d > parseTimeout {
			t.Fatalf("Parse took %v on %d bytes", d, len(src))
		}
		checkDiagnosticShape(t, fuzzFile, ds)
		if spec != nil && ds.HasErrors() {
			t.Fatalf("Spec returned together with errors:\n%s", render(ds))
		}
		if spec == nil && !ds.HasErrors() {
			t.Fatalf("no Spec and no error; diagnostics:\n%s", render(ds))
		}
		for _, d := range ds {
			if d.ErrorType == ParseError && len(ds) > 1 {
				// "nothing else is checked after these"
				t.Fatalf("a parse error must be the only diagnostic:\n%s", render(ds))
			}
		}
		spec2, ds2 := Parse(fuzzFile, slices.Clone(src), testCompile)
		if !slices.Equal(ds, ds2) || (spec == nil) != (spec2 == nil) {
			t.Fatalf("Parse is not deterministic:\n--- first\n%s--- second\n%s", render(ds), render(ds2))
		}
		if spec == nil {
			return
		}
		if !bytes.Equal(spec.Source, src) {
			t.Fatalf("Spec.Source differs from the input")
		}
		checkSpecShape(t, spec)
	})
}
