package specs

// The spec corpus: testdata/specs/invalid (one rule per file, with goldens),
// testdata/specs/valid and specs/examples (every feature, must validate), and
// hostile inputs generated here (too large, alias bombs, deep nesting) rather
// than committed.
//
// Regenerate the goldens with
//
//	go test ./specs -run TestCorpus -update
//
// and review every changed line before committing it: a golden is a claim that
// the diagnostic is right (code, line:col, message, suggestion).

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	invalidCorpusDir = "../testdata/specs/invalid"
	validCorpusDir   = "../testdata/specs/valid"
	warningCorpusDir = "../testdata/specs/warning"
	examplesDir      = "examples"
	specGlob         = "*.stratum.yaml"
	expectPrefix     = "# expect:"
)

func init() {
	// Other golden tests in this package may define -update as well; the flag
	// is shared, so define it only once (package variables are initialised
	// before any init function runs).
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

// updateGoldens reports whether -update was given.
func updateGoldens() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// codeClass is the agreed diagnostic code list (CODES.md) with the error
// type each code belongs to. It is written out here on purpose, independently
// of codes.go, so that the corpus checks the validator against the agreement.
var codeClass = map[string]ErrorType{
	"empty": ParseError, "invalid-utf8": ParseError, "too-large": ParseError,
	"yaml-tab": ParseError, "yaml-syntax": ParseError, "yaml-aliases": ParseError,
	"too-deep": ParseError, "multiple-documents": ParseError,

	"not-mapping": ValidationError, "missing-version": ValidationError,
	"unknown-version": ValidationError, "version-not-string": ValidationError,
	"unknown-field": ValidationError, "needs-version": ValidationError,
	"missing-field": ValidationError, "wrong-type": ValidationError,
	"invalid-value": ValidationError, "out-of-range": ValidationError,
	"duration-too-long": ValidationError,
	"empty-value":       ValidationError, "invalid-name": ValidationError,
	"duplicate-key": ValidationError, "empty-guardrail": ValidationError,
	"unsupported": ValidationError,

	"duplicate-step-id": SemanticError, "undefined-function": SemanticError,
	"undefined-contract": SemanticError, "undefined-flow": SemanticError,
	"undefined-step": SemanticError, "undefined-input": SemanticError,
	"bad-ref": SemanticError, "dependency-cycle": SemanticError,
	"recursive-flow": SemanticError, "step-mode": SemanticError,
	"gate-function-field": SemanticError, "gate-step-field": SemanticError,
	"gate-routing-missing": SemanticError, "gate-revise-target": SemanticError,
	"not-a-gate": SemanticError, "policy-fallback": SemanticError,
	"function-step-field": SemanticError, "flow-step-field": SemanticError,
	"parallel-field": SemanticError, "parallel-requires": SemanticError,
	"on-fail-unreachable": SemanticError, "iteration-field": SemanticError,
	"invalid-regex": SemanticError, "reasoning-template": SemanticError, "judge-predicate": SemanticError,
	"expr-syntax": SemanticError, "expr-forbidden": SemanticError,
	"unknown-result-field": SemanticError, "unknown-type": SemanticError,
	"contract-cycle": SemanticError, "invalid-schema": SemanticError,
	"contract-depth": SemanticError, "contract-size": SemanticError,
	"workflow-entry": SemanticError, "workflow-inputs": SemanticError,
	"cache-field": SemanticError, "run-field": SemanticError,
	"opaque-inline": SemanticError, "policy-human": SemanticError,
	"pipeline-stage": SemanticError,

	// Warnings (severity warning; errors under validate --strict).
	"routing-target-runs": SemanticError, "unchecked-keyword": SemanticError,
	"isolation-branch": SemanticError,
}

// parseTimeout bounds one Parse call in these tests. It is a hang detector,
// not a performance assertion: every corpus file parses in milliseconds.
const parseTimeout = 10 * time.Second

// guardedParse runs fn in a goroutine and fails the test if it panics or does
// not return within parseTimeout.
func guardedParse(t *testing.T, what string, fn func() (*Spec, Diagnostics)) (*Spec, Diagnostics) {
	t.Helper()
	type result struct {
		spec  *Spec
		diags Diagnostics
		panic any
		stack string
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- result{panic: r}
			}
		}()
		s, ds := fn()
		ch <- result{spec: s, diags: ds}
	}()
	select {
	case r := <-ch:
		if r.panic != nil {
			t.Fatalf("%s: Parse panicked: %v", what, r.panic)
		}
		return r.spec, r.diags
	case <-time.After(parseTimeout):
		t.Fatalf("%s: Parse did not return within %v", what, parseTimeout)
		return nil, nil
	}
}

// checkDiagnosticShape asserts the invariants every diagnostic must satisfy,
// whatever the input: a known code in its agreed class, a severity, a message,
// a path, a non-negative position, the file name Parse was given.
func checkDiagnosticShape(t *testing.T, file string, ds Diagnostics) {
	t.Helper()
	for _, d := range ds {
		class, known := codeClass[d.Code]
		switch {
		case d.Code == "":
			t.Errorf("diagnostic without a code: %s", d)
		case !known:
			t.Errorf("diagnostic with a code outside CODES.md: %s", d)
		case d.ErrorType != class:
			t.Errorf("code %s has error type %q, want %q: %s", d.Code, d.ErrorType, class, d)
		}
		if d.Severity != SeverityError && d.Severity != SeverityWarning {
			t.Errorf("diagnostic with severity %q: %s", d.Severity, d)
		}
		if strings.TrimSpace(d.Message) == "" {
			t.Errorf("diagnostic without a message: %s", d)
		}
		if d.Path == "" {
			t.Errorf("diagnostic without a path: %s", d)
		}
		if d.Line < 0 || d.Column < 0 {
			t.Errorf("diagnostic with a negative position: %s", d)
		}
		if d.File != file {
			t.Errorf("diagnostic File = %q, want %q: %s", d.File, file, d)
		}
		if strings.Contains(d.Message, "internal validator error") {
			t.Errorf("validator recovered from a panic: %s", d)
		}
	}
	sorted := slices.Clone(ds)
	sorted.Sort()
	if !slices.Equal(sorted, ds) {
		t.Errorf("diagnostics are not sorted by position:\n%s", render(ds))
	}
}

// render formats diagnostics the way `stratum validate` prints them, with the
// file reduced to its base name so goldens do not depend on the checkout.
func render(ds Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		d.File = filepath.Base(d.File)
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// expectedCodes reads the `# expect: a, b` first line of a corpus file.
func expectedCodes(src []byte) ([]string, error) {
	line, _, _ := bytes.Cut(src, []byte("\n"))
	s := strings.TrimSpace(string(line))
	rest, ok := strings.CutPrefix(s, expectPrefix)
	if !ok {
		return nil, fmt.Errorf("first line %q is not %q", s, expectPrefix+" <code>[, <code>…]")
	}
	var codes []string
	for _, c := range strings.Split(rest, ",") {
		if c = strings.TrimSpace(c); c != "" {
			codes = append(codes, c)
		}
	}
	if len(codes) == 0 {
		return nil, fmt.Errorf("first line %q lists no code", s)
	}
	return codes, nil
}

func corpusFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, specGlob))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

func specName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".stratum.yaml")
}

// TestCorpusInvalid parses every invalid spec: it must be rejected, report
// each code its `# expect:` line lists, and print exactly its golden.
func TestCorpusInvalid(t *testing.T) {
	files := corpusFiles(t, invalidCorpusDir)
	if len(files) < 70 {
		t.Fatalf("invalid corpus has %d specs, want at least 70", len(files))
	}
	for _, path := range files {
		name := specName(path)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := expectedCodes(src)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if !strings.HasPrefix(name, want[0]+"-") {
				t.Errorf("file name %q does not start with its first expected code %q", name, want[0])
			}
			for _, c := range want {
				if _, ok := codeClass[c]; !ok {
					t.Fatalf("expect line names %q, which is not a code of CODES.md", c)
				}
			}

			spec, ds := guardedParse(t, path, func() (*Spec, Diagnostics) { return ParseFile(path, testCompile) })
			got := render(ds)
			if spec != nil {
				t.Errorf("invalid spec accepted (Spec != nil)")
			}
			if !ds.HasErrors() {
				t.Errorf("no error-severity diagnostic; got:\n%s", got)
			}
			checkDiagnosticShape(t, path, ds)
			have := map[string]bool{}
			for _, d := range ds {
				have[d.Code] = true
			}
			for _, c := range want {
				if !have[c] {
					t.Errorf("expected code %s is missing; got:\n%s", c, got)
				}
			}

			golden := strings.TrimSuffix(path, ".stratum.yaml") + ".golden"
			if updateGoldens() {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantText, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("missing golden (run with -update and review it): %v\ngot:\n%s", err, got)
			}
			if string(wantText) != got {
				t.Errorf("diagnostics differ from %s\n--- want\n%s--- got\n%s", filepath.Base(golden), wantText, got)
			}
		})
	}
}

// TestCorpusWarnings parses every spec of the warning corpus: it must be
// valid (a Spec, no error), report as warnings exactly the codes its
// `# expect:` line lists ("none": no diagnostic at all), and print exactly
// its golden.
func TestCorpusWarnings(t *testing.T) {
	files := corpusFiles(t, warningCorpusDir)
	if len(files) < 3 {
		t.Fatalf("warning corpus has %d specs, want at least 3", len(files))
	}
	for _, path := range files {
		t.Run(specName(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := expectedCodes(src)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			spec, ds := guardedParse(t, path, func() (*Spec, Diagnostics) { return ParseFile(path, testCompile) })
			got := render(ds)
			if spec == nil || ds.HasErrors() {
				t.Fatalf("a spec with warnings only must be valid; got:\n%s", got)
			}
			checkDiagnosticShape(t, path, ds)
			have := map[string]bool{}
			for _, d := range ds {
				have[d.Code] = true
				if d.Severity != SeverityWarning {
					t.Errorf("not a warning: %s", d)
				}
			}
			if want[0] == "none" {
				if len(ds) > 0 {
					t.Errorf("want no diagnostic; got:\n%s", got)
				}
				return
			}
			for _, c := range want {
				if !have[c] {
					t.Errorf("expected warning %s is missing; got:\n%s", c, got)
				}
			}
			golden := strings.TrimSuffix(path, ".stratum.yaml") + ".golden"
			if updateGoldens() {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantText, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("missing golden (run with -update and review it): %v\ngot:\n%s", err, got)
			}
			if string(wantText) != got {
				t.Errorf("diagnostics differ from %s\n--- want\n%s--- got\n%s", filepath.Base(golden), wantText, got)
			}
		})
	}
}

// TestCorpusGoldensHaveSpecs catches goldens left behind by a renamed spec.
func TestCorpusGoldensHaveSpecs(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join(invalidCorpusDir, "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range goldens {
		spec := strings.TrimSuffix(g, ".golden") + ".stratum.yaml"
		if _, err := os.Stat(spec); err != nil {
			t.Errorf("golden %s has no spec %s", filepath.Base(g), filepath.Base(spec))
		}
	}
}

// TestCorpusValid parses every valid spec and every shipped example: no
// error may be reported and a Spec must come back.
func TestCorpusValid(t *testing.T) {
	valid := corpusFiles(t, validCorpusDir)
	if len(valid) < 15 {
		t.Fatalf("valid corpus has %d specs, want at least 15", len(valid))
	}
	examples := corpusFiles(t, examplesDir)
	if len(examples) < 2 {
		t.Fatalf("specs/examples has %d specs, want at least 2", len(examples))
	}
	for _, path := range append(valid, examples...) {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+specName(path), func(t *testing.T) {
			spec, ds := guardedParse(t, path, func() (*Spec, Diagnostics) { return ParseFile(path, testCompile) })
			checkDiagnosticShape(t, path, ds)
			if ds.HasErrors() {
				t.Fatalf("valid spec rejected:\n%s", render(ds))
			}
			for _, d := range ds {
				t.Logf("warning: %s", d)
			}
			if spec == nil {
				t.Fatal("no error diagnostics but Spec == nil")
			}
			checkSpecShape(t, spec)
		})
	}
}

// checkSpecShape asserts the normalisation invariants every Spec must satisfy.
func checkSpecShape(t *testing.T, spec *Spec) {
	t.Helper()
	switch spec.Version {
	case Version01, Version02, Version03:
	default:
		t.Errorf("Spec.Version = %q", spec.Version)
	}
	if len(spec.FlowNames) != len(spec.Flows) {
		t.Errorf("FlowNames %v vs %d flows", spec.FlowNames, len(spec.Flows))
	}
	if len(spec.FunctionNames) != len(spec.Functions) {
		t.Errorf("FunctionNames %v vs %d functions", spec.FunctionNames, len(spec.Functions))
	}
	if len(spec.ContractNames) != len(spec.Contracts) {
		t.Errorf("ContractNames %v vs %d contracts", spec.ContractNames, len(spec.Contracts))
	}
	for _, name := range spec.FlowNames {
		fl := spec.Flows[name]
		if fl == nil {
			t.Errorf("flow %q listed but missing", name)
			continue
		}
		if len(fl.Order) != len(fl.Steps) {
			t.Errorf("flow %s: Order %v has %d entries for %d steps", name, fl.Order, len(fl.Order), len(fl.Steps))
		}
		seen := map[int]bool{}
		for _, i := range fl.Order {
			if i < 0 || i >= len(fl.Steps) || seen[i] {
				t.Errorf("flow %s: Order %v is not a permutation of the steps", name, fl.Order)
				break
			}
			seen[i] = true
		}
		for _, st := range fl.Steps {
			if st.ID == "" {
				t.Errorf("flow %s: step without id", name)
			}
			if !st.IsGate() && st.Retries < 1 {
				t.Errorf("flow %s step %s: effective Retries = %d, want >= 1", name, st.ID, st.Retries)
			}
			if st.Kind == KindFunction && st.Fn == nil {
				t.Errorf("flow %s step %s: function step without Fn", name, st.ID)
			}
		}
	}
}

// TestCorpusCoversEveryCode: every agreed code is exercised at least once,
// by a corpus file's expect line or by a generated hostile input.
func TestCorpusCoversEveryCode(t *testing.T) {
	covered := map[string]bool{}
	for _, path := range corpusFiles(t, invalidCorpusDir) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		codes, err := expectedCodes(src)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		for _, c := range codes {
			covered[c] = true
		}
	}
	for _, path := range corpusFiles(t, warningCorpusDir) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		codes, _ := expectedCodes(src)
		for _, c := range codes {
			covered[c] = true
		}
	}
	for _, g := range generatedHostile() {
		covered[g.code] = true
	}
	var missing []string
	for c := range codeClass {
		if !covered[c] {
			missing = append(missing, c)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("codes without a corpus case: %v", missing)
	}
}

type hostileCase struct {
	name string
	code string
	src  func() []byte
}

// generatedHostile are the inputs too big or too nasty to commit.
func generatedHostile() []hostileCase {
	return []hostileCase{
		{"empty-zero-bytes", "empty", func() []byte { return nil }},
		{"empty-whitespace", "empty", func() []byte { return []byte("  \n\n\t \n   ") }},
		{"too-large-comment-padding", "too-large", func() []byte {
			b := []byte("version: \"0.2\"\n")
			line := "# " + strings.Repeat("x", 1021) + "\n"
			for len(b) <= MaxSpecBytes {
				b = append(b, line...)
			}
			return b
		}},
		{"too-large-one-string", "too-large", func() []byte {
			return []byte("version: \"0.2\"\nflows: {main: {input: {}, steps: [{id: s, intent: \"" +
				strings.Repeat("a", MaxSpecBytes) + "\"}]}}\n")
		}},
		{"yaml-aliases-billion-laughs", "yaml-aliases", func() []byte { return aliasBomb(9, 9) }},
		{"yaml-aliases-wide", "yaml-aliases", func() []byte { return aliasBomb(4, 60) }},
		{"too-deep-block-mappings", "too-deep", func() []byte { return deepBlockMapping(50) }},
		{"too-deep-flow-sequences", "too-deep", func() []byte {
			return []byte("version: \"0.2\"\nx: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n")
		}},
		{"too-deep-very-deep-flow", "too-deep", func() []byte {
			return []byte("version: \"0.2\"\nx: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n")
		}},
		{"too-deep-in-output-schema", "too-deep", func() []byte { return deepOutputSchema(40) }},
		{"contract-depth-chain", "contract-depth", func() []byte { return []byte(contractChain(3000, 1)) }},
		{"contract-size-tree", "contract-size", func() []byte { return []byte(contractChain(40, 2)) }},
	}
}

// aliasBomb builds a billion-laughs document: levels of anchors, each a
// sequence of width aliases to the previous one, hung under a valid spec.
func aliasBomb(levels, width int) []byte {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\nbomb:\n  l0: &l0 [\"lol\"]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [", i, i)
		for j := 0; j < width; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("flows:\n  main:\n    input: {}\n    steps:\n      - id: s1\n        intent: \"hi\"\n")
	return []byte(b.String())
}

func deepBlockMapping(depth int) []byte {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\n")
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, "%sk%d:\n", strings.Repeat("  ", i), i)
	}
	fmt.Fprintf(&b, "%sleaf: 1\n", strings.Repeat("  ", depth))
	return []byte(b.String())
}

func deepOutputSchema(depth int) []byte {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - id: s1\n        intent: \"hi\"\n        output_schema:\n")
	ind := "          "
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, "%stype: object\n%sproperties:\n%s  p:\n", ind, ind, ind)
		ind += "    "
	}
	fmt.Fprintf(&b, "%stype: string\n", ind)
	return []byte(b.String())
}

// TestCorpusHostile feeds the generated hostile inputs to Parse (and the
// too-large ones also to ParseFile): each gets its code, in bounded time,
// without a panic.
func TestCorpusHostile(t *testing.T) {
	for _, c := range generatedHostile() {
		t.Run(c.name, func(t *testing.T) {
			src := c.src()
			const file = "hostile.stratum.yaml"
			spec, ds := guardedParse(t, c.name, func() (*Spec, Diagnostics) { return Parse(file, src, testCompile) })
			checkHostile(t, c, file, spec, ds)
			if c.code == "too-large" {
				path := filepath.Join(t.TempDir(), file)
				if err := os.WriteFile(path, src, 0o644); err != nil {
					t.Fatal(err)
				}
				spec, ds := guardedParse(t, c.name, func() (*Spec, Diagnostics) { return ParseFile(path, testCompile) })
				checkHostile(t, c, path, spec, ds)
			}
		})
	}
}

func checkHostile(t *testing.T, c hostileCase, file string, spec *Spec, ds Diagnostics) {
	t.Helper()
	if spec != nil {
		t.Errorf("hostile input accepted")
	}
	checkDiagnosticShape(t, file, ds)
	found := false
	for _, d := range ds {
		found = found || d.Code == c.code
	}
	if !found {
		t.Errorf("want code %s; got:\n%s", c.code, render(ds))
	}
	if len(ds) > 5 {
		t.Errorf("hostile input produced %d diagnostics; a parse error should stop checking", len(ds))
	}
}

// TestCorpusValidIR checks that the valid corpus normalises into the IR the
// engine relies on: execution order, per-kind defaults, effective fields of
// function steps, gate settings, extensions, workflows and contracts.
func TestCorpusValidIR(t *testing.T) {
	load := func(t *testing.T, name string) *Spec {
		t.Helper()
		path := filepath.Join(validCorpusDir, name+".stratum.yaml")
		spec, ds := guardedParse(t, path, func() (*Spec, Diagnostics) { return ParseFile(path, testCompile) })
		if spec == nil {
			t.Fatalf("%s rejected:\n%s", name, render(ds))
		}
		return spec
	}
	order := func(fl *Flow) []string {
		var ids []string
		for _, s := range fl.OrderedSteps() {
			ids = append(ids, s.ID)
		}
		return ids
	}
	step := func(t *testing.T, spec *Spec, flow, id string) *Step {
		t.Helper()
		fl := spec.Flows[flow]
		if fl == nil {
			t.Fatalf("no flow %q", flow)
		}
		s := fl.Step(id)
		if s == nil {
			t.Fatalf("flow %s has no step %q", flow, id)
		}
		return s
	}
	eq := func(t *testing.T, what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}

	t.Run("ordering", func(t *testing.T) {
		spec := load(t, "v02-ordering-diamond")
		eq(t, "kahn order", order(spec.Flows["kahn"]), []string{"a", "c", "b"})
		eq(t, "diamond order", order(spec.Flows["diamond"]), []string{"root", "left", "right", "join"})
		spec = load(t, "v02-skip-if-refs")
		// skip_if may read a later step; that is not an ordering edge.
		eq(t, "skip_if order", order(spec.Flows["release"]), []string{"tests", "notify", "deploy"})
		if step(t, spec, "release", "notify").SkipIf == nil {
			t.Error("notify: SkipIf not compiled")
		}
		eq(t, "skip reason", step(t, spec, "release", "deploy").SkipReason, "Tests failed or dry run")
	})

	t.Run("retry defaults and effective fields", func(t *testing.T) {
		spec := load(t, "v02-routing-loops")
		eq(t, "inline with retries", step(t, spec, "build", "write").Retries, 2)
		eq(t, "inline default", step(t, spec, "build", "review").Retries, 1)
		eq(t, "kind", step(t, spec, "build", "review").Kind, KindInline)
		eq(t, "on_fail", step(t, spec, "build", "review").OnFail, "fix")
		eq(t, "next", step(t, spec, "build", "fix").Next, "review")

		spec = load(t, "v02-flow-composition")
		test := step(t, spec, "deploy", "test")
		eq(t, "flow step retries", test.Retries, 1)
		eq(t, "flow step kind", test.Kind, KindFlow)
		eq(t, "flow step child", test.Flow, "integration_tests")

		spec = load(t, "v02-gates")
		eq(t, "function default retries", step(t, spec, "reviewed_work", "work").Retries, 3)
		spec = load(t, "v01-minimal")
		eq(t, "function retries", step(t, spec, "run", "s1").Retries, 2)

		spec = load(t, "v02-inline-full")
		scan := step(t, spec, "audit", "scan")
		eq(t, "effective retries", scan.Retries, 4)
		eq(t, "effective ensure", len(scan.Ensure), 1)
		eq(t, "effective guardrails", len(scan.Guardrails), 2)
		eq(t, "effective model", scan.Model, "openai/gpt-4o-mini")
		eq(t, "effective output contract", scan.OutputContract, "Analysis")
		eq(t, "function intent", scan.Intent, "Scan the code for leaked secrets")
		if len(scan.Guardrails) > 0 && !scan.Guardrails[0].Re.MatchString("API_KEY = 1") {
			t.Error("guardrails must compile case-insensitively")
		}
		an := step(t, spec, "audit", "analyse")
		eq(t, "inline agent", an.Agent, "claude")
		eq(t, "inline budget ms", an.Budget != nil && an.Budget.MS == 60000, true)
		if so := step(t, spec, "audit", "schema_only"); so.Schema == nil || so.OutputSchema == nil {
			t.Error("schema_only: output_schema not compiled")
		}
	})

	t.Run("parallel", func(t *testing.T) {
		spec := load(t, "v03-parallel")
		plan := step(t, spec, "build", "plan")
		eq(t, "decompose kind", plan.Kind, KindDecompose)
		eq(t, "decompose retries", plan.Retries, 2)
		impl := step(t, spec, "build", "implement")
		eq(t, "dispatch kind", impl.Kind, KindParallelDispatch)
		eq(t, "dispatch retries", impl.Retries, 2)
		eq(t, "max_concurrent", impl.MaxConcurrent, 4)
		eq(t, "task_timeout", impl.TaskTimeout, 1800)
		eq(t, "capture_diff", impl.CaptureDiff, true)
		be := step(t, spec, "build", "best_effort")
		eq(t, "default max_concurrent", be.MaxConcurrent, 3)
		eq(t, "require N", be.Require, "2")
		eq(t, "merge", be.Merge, "manual")
		eq(t, "isolation", be.Isolation, "none")
		eq(t, "default isolation", impl.Isolation, "worktree")
		eq(t, "default require", impl.Require, "all")
		eq(t, "source", impl.Source, "$.steps.plan.output.tasks")
	})

	t.Run("gates", func(t *testing.T) {
		spec := load(t, "v02-gates")
		rv := step(t, spec, "reviewed_work", "review")
		eq(t, "is gate", rv.IsGate(), true)
		eq(t, "on_revise", rv.OnRevise, "work")
		eq(t, "on_approve null", rv.OnApprove, "")
		eq(t, "timeout", rv.Fn.Timeout, 3600)
		eq(t, "max_rounds", spec.Flows["reviewed_work"].MaxRounds, 3)
		eq(t, "default on_timeout", rv.Fn.OnTimeout, "kill")
		eq(t, "default approver", rv.Fn.Approver, "any")

		spec = load(t, "v02-gate-policies")
		lint := step(t, spec, "publish", "lint")
		eq(t, "policy", lint.Policy, "flag")
		eq(t, "policy_fallback", lint.PolicyFallback, "gate")
		eq(t, "on_approve", lint.OnApprove, "edit")
		eq(t, "on_kill", lint.OnKill, "cleanup")
		if step(t, spec, "publish", "edit").SkipIf == nil {
			t.Error("gate skip_if not compiled")
		}
	})

	t.Run("extensions", func(t *testing.T) {
		spec := load(t, "v02-extensions")
		fn := spec.Functions
		if r := fn["count_shell"].Run; r == nil || r.Shell == "" || r.Argv != nil {
			t.Errorf("count_shell run = %+v, want a shell command", r)
		}
		if r := fn["count_argv"].Run; r == nil || r.Shell != "" || fmt.Sprint(r.Argv) != `[echo {"n": 1}]` {
			t.Errorf("count_argv run = %+v, want argv", r)
		}
		if r := fn["count_map"].Run; r == nil || r.Shell == "" || r.Dir != "." || r.Env["WEIGHT"] != "2" {
			t.Errorf("count_map run = %+v, want shell + dir + env", r)
		}
		if r := step(t, spec, "main", "check").Run; r == nil || len(r.Argv) != 3 {
			t.Errorf("inline argv run = %+v", r)
		}
		if r := step(t, spec, "main", "inline_map").Run; r == nil || len(r.Argv) != 2 || r.Env["MODE"] != "strict" {
			t.Errorf("inline mapping run = %+v", r)
		}
		eq(t, "on_timeout revise", fn["human_gate"].OnTimeout, "revise")
		eq(t, "approver", fn["human_gate"].Approver, "human")
		eq(t, "on_timeout approve", fn["any_gate"].OnTimeout, "approve")
		var doc *Param
		for _, p := range fn["judge"].Input {
			if p.Name == "document" {
				doc = p
			}
		}
		if doc == nil || !doc.Opaque {
			t.Errorf("judge.document opaque = %+v", doc)
		}
		if b := fn["judge"].Budget; b == nil || b.Tokens != 20000 || b.USD == nil || *b.USD != 0.05 || b.MS != 30000 {
			t.Errorf("judge budget = %+v", b)
		}
		if b := spec.Flows["main"].Budget; b == nil || b.Tokens != 100000 {
			t.Errorf("flow budget = %+v", b)
		}
	})

	t.Run("iterations", func(t *testing.T) {
		spec := load(t, "v02-iterations")
		h := step(t, spec, "polish", "hunt")
		eq(t, "max_iterations", h.MaxIterations, 20)
		if h.Accumulate == nil || h.AccumulateKey == nil || h.ExitCriterion == nil {
			t.Errorf("hunt: accumulate/accumulate_key/exit_criterion not compiled")
		}
		if step(t, spec, "polish", "scored").ScoreExpr == nil {
			t.Error("scored: score_expr not compiled")
		}
	})

	t.Run("workflows", func(t *testing.T) {
		spec := load(t, "v02-workflow")
		if spec.Workflow == nil {
			t.Fatal("no workflow")
		}
		eq(t, "entry flow (by name)", spec.Workflow.EntryFlow, "code-review")
		eq(t, "workflow inputs", len(spec.Workflow.Input), 2)
		for _, p := range spec.Workflow.Input {
			if p.Name == "depth" && (!p.HasDefault || p.Default != "standard" || p.Required) {
				t.Errorf("depth param = %+v", p)
			}
			if p.Name == "files" && !p.Required {
				t.Errorf("files param = %+v", p)
			}
		}
		spec = load(t, "v02-workflow-single-flow")
		eq(t, "entry flow (only flow)", spec.Workflow.EntryFlow, "main")
	})

	t.Run("contracts", func(t *testing.T) {
		spec := load(t, "v02-nested-contracts")
		r := spec.Contracts["Report"]
		if r == nil {
			t.Fatal("no Report contract")
		}
		eq(t, "nested type", r.Field("author").Type, "Author")
		eq(t, "optional (required: false)", r.Field("notes").Optional, true)
		eq(t, "opaque field", r.Field("raw").Opaque, true)
		eq(t, "optional", spec.Contracts["Author"].Field("email").Optional, true)
		eq(t, "values", fmt.Sprint(spec.Contracts["Finding"].Field("severity").Values), "[low medium high]")
		if r.Schema == nil || len(r.Hash) != 12 {
			t.Errorf("Report schema/hash not built: hash %q", r.Hash)
		}
		eq(t, "declaration order", spec.ContractNames, []string{"Author", "Finding", "Report"})
	})

	t.Run("anchors and merge keys", func(t *testing.T) {
		spec := load(t, "v02-anchors")
		st := spec.Functions["strict"]
		eq(t, "merged mode", st.Mode, ModeInfer)
		eq(t, "overridden retries", st.Retries, 5)
		eq(t, "block scalar intent", st.Intent, "Summarise the text.\nBe strict.\n")
		eq(t, "folded intent", spec.Functions["base"].Intent, "Summarise the text in two sentences.")
		eq(t, "aliased inputs", step(t, spec, "main", "s2").Inputs[0].Value, "$.input.text")
	})
}

// A mutation breaks one rule somewhere in an otherwise valid spec. Applying
// each mutation to every spec of the valid corpus checks that the validator
// catches the rule in every context the corpus has (versions, step kinds,
// anchors, flow styles), not only in the hand-written invalid files.
type mutation struct {
	name string
	code string
	// apply edits the document's root mapping and reports whether the spec
	// had a place to apply it.
	apply func(root *yaml.Node) bool
}

var corpusMutations = []mutation{
	{"unknown version", "unknown-version", func(root *yaml.Node) bool {
		v := mutMapValue(root, "version")
		if v == nil {
			return false
		}
		*v = *mutStrScalar("9.9")
		return true
	}},
	{"unknown step field", "unknown-field", func(root *yaml.Node) bool {
		st := mutFirstStep(root, nil)
		if st == nil {
			return false
		}
		mutMapSet(st, "bogus_field", mutStrScalar("x"))
		return true
	}},
	{"duplicate step id", "duplicate-step-id", func(root *yaml.Node) bool {
		for _, fl := range mutFlowNodes(root) {
			steps := mutMapValue(fl, "steps")
			if steps == nil || steps.Kind != yaml.SequenceNode || len(steps.Content) < 2 {
				continue
			}
			first := mutMapValue(steps.Content[0], "id")
			if first == nil || mutMapValue(steps.Content[1], "id") == nil {
				continue
			}
			mutMapSet(steps.Content[1], "id", mutStrScalar(first.Value))
			return true
		}
		return false
	}},
	{"depends_on an undefined step", "undefined-step", func(root *yaml.Node) bool {
		st := mutFirstStep(root, nil)
		if st == nil {
			return false
		}
		mutMapSet(st, "depends_on", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{mutStrScalar("no_such_step")}})
		return true
	}},
	{"step depends on itself", "dependency-cycle", func(root *yaml.Node) bool {
		st := mutFirstStep(root, nil)
		if st == nil || mutMapValue(st, "id") == nil {
			return false
		}
		id := mutMapValue(st, "id").Value
		mutMapSet(st, "depends_on", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{mutStrScalar(id)}})
		return true
	}},
	{"undefined function", "undefined-function", func(root *yaml.Node) bool {
		st := mutFirstStep(root, func(st *yaml.Node) bool { return mutMapValue(st, "function") != nil })
		if st == nil {
			return false
		}
		mutMapSet(st, "function", mutStrScalar("no_such_function"))
		return true
	}},
	{"undefined output contract", "undefined-contract", func(root *yaml.Node) bool {
		fns := mutMapValue(root, "functions")
		if fns == nil || fns.Kind != yaml.MappingNode {
			return false
		}
		for i := 1; i < len(fns.Content); i += 2 {
			fn := mutResolveAlias(fns.Content[i])
			if mutMapValue(fn, "output") != nil {
				mutMapSet(fn, "output", mutStrScalar("NoSuchContract"))
				return true
			}
		}
		return false
	}},
	{"undefined flow input", "undefined-input", func(root *yaml.Node) bool {
		for _, st := range mutAllSteps(root) {
			in := mutMapValue(st, "inputs")
			if in == nil || in.Kind != yaml.MappingNode {
				continue
			}
			for i := 1; i < len(in.Content); i += 2 {
				if v := in.Content[i]; v.Kind == yaml.ScalarNode && len(v.Value) > 8 && v.Value[:8] == "$.input." {
					in.Content[i] = mutStrScalar("$.input.no_such_input")
					return true
				}
			}
		}
		return false
	}},
	{"forbidden expression in an ensure", "expr-forbidden", func(root *yaml.Node) bool {
		var lists []*yaml.Node
		if fns := mutMapValue(root, "functions"); fns != nil && fns.Kind == yaml.MappingNode {
			for i := 1; i < len(fns.Content); i += 2 {
				lists = append(lists, mutMapValue(mutResolveAlias(fns.Content[i]), "ensure"))
			}
		}
		for _, st := range mutAllSteps(root) {
			lists = append(lists, mutMapValue(st, "ensure"))
		}
		for _, l := range lists {
			if l != nil && l.Kind == yaml.SequenceNode {
				l.Content = append(l.Content, mutStrScalar("result.__class__ != None"))
				return true
			}
		}
		return false
	}},
	{"gate revises itself", "gate-revise-target", func(root *yaml.Node) bool {
		st := mutFirstStep(root, func(st *yaml.Node) bool { return mutMapValue(st, "on_revise") != nil })
		if st == nil {
			return false
		}
		mutMapSet(st, "on_revise", mutStrScalar(mutMapValue(st, "id").Value))
		return true
	}},
	{"gate routing on an inline step", "not-a-gate", func(root *yaml.Node) bool {
		st := mutFirstStep(root, func(st *yaml.Node) bool { return mutMapValue(st, "intent") != nil })
		if st == nil {
			return false
		}
		mutMapSet(st, "on_approve", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "~"})
		return true
	}},
	{"ensure on a function step", "function-step-field", func(root *yaml.Node) bool {
		if mutIsV01(root) {
			return false // the field does not exist in 0.1 (needs-version)
		}
		st := mutFirstStep(root, func(st *yaml.Node) bool { return mutMapValue(st, "function") != nil })
		if st == nil {
			return false
		}
		mutMapSet(st, "ensure", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{mutStrScalar("True")}})
		return true
	}},
	{"agent on a flow step", "flow-step-field", func(root *yaml.Node) bool {
		st := mutFirstStep(root, func(st *yaml.Node) bool { return mutMapValue(st, "flow") != nil })
		if st == nil {
			return false
		}
		mutMapSet(st, "agent", mutStrScalar("claude"))
		return true
	}},
	{"skip_if reads an undefined step", "undefined-step", func(root *yaml.Node) bool {
		if mutIsV01(root) {
			return false // skip_if does not exist in 0.1 (needs-version)
		}
		st := mutFirstStep(root, nil)
		if st == nil {
			return false
		}
		mutMapSet(st, "skip_if", mutStrScalar("$.steps.no_such_step.output == None"))
		return true
	}},
	{"invalid guardrail regex", "invalid-regex", func(root *yaml.Node) bool {
		for _, st := range mutAllSteps(root) {
			if g := mutMapValue(st, "guardrails"); g != nil && g.Kind == yaml.SequenceNode {
				g.Content = append(g.Content, mutStrScalar("(unclosed"))
				return true
			}
		}
		if fns := mutMapValue(root, "functions"); fns != nil && fns.Kind == yaml.MappingNode {
			for i := 1; i < len(fns.Content); i += 2 {
				if g := mutMapValue(fns.Content[i], "guardrails"); g != nil && g.Kind == yaml.SequenceNode {
					g.Content = append(g.Content, mutStrScalar("(unclosed"))
					return true
				}
			}
		}
		return false
	}},
	{"max_iterations zero", "out-of-range", func(root *yaml.Node) bool {
		st := mutFirstStep(root, func(st *yaml.Node) bool { return mutMapValue(st, "max_iterations") != nil })
		if st == nil {
			return false
		}
		mutMapSet(st, "max_iterations", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "0"})
		return true
	}},
	{"ensure that does not compile", "expr-syntax", func(root *yaml.Node) bool {
		for _, st := range mutAllSteps(root) {
			if l := mutMapValue(st, "ensure"); l != nil && l.Kind == yaml.SequenceNode {
				l.Content = append(l.Content, mutStrScalar("len(result) >"))
				return true
			}
		}
		return false
	}},
	{"gate without on_kill", "gate-routing-missing", func(root *yaml.Node) bool {
		st := mutFirstStep(root, func(st *yaml.Node) bool { return mutMapValue(st, "on_kill") != nil })
		if st == nil {
			return false
		}
		mutMapDelete(st, "on_kill")
		return true
	}},
	{"on_fail on a step that cannot fail", "on-fail-unreachable", func(root *yaml.Node) bool {
		st := mutFirstStep(root, func(st *yaml.Node) bool {
			return mutMapValue(st, "intent") != nil && mutMapValue(st, "type") == nil &&
				mutMapValue(st, "ensure") == nil && mutMapValue(st, "guardrails") == nil &&
				mutMapValue(st, "output_schema") == nil && mutMapValue(st, "on_fail") == nil &&
				mutMapValue(st, "reasoning_template") == nil &&
				// a run: command can fail (exit status, bad JSON), so on_fail is reachable
				mutMapValue(st, "run") == nil
		})
		if st == nil {
			return false
		}
		mutMapSet(st, "on_fail", mutStrScalar(mutMapValue(st, "id").Value))
		return true
	}},
}

// TestCorpusMutations applies every mutation to every valid spec and expects
// its code.
func TestCorpusMutations(t *testing.T) {
	files := corpusFiles(t, validCorpusDir)
	files = append(files, corpusFiles(t, examplesDir)...)
	applied := map[string]int{}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range corpusMutations {
			var doc yaml.Node
			if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Content) == 0 {
				t.Fatalf("%s: %v", path, err)
			}
			if !m.apply(doc.Content[0]) {
				continue
			}
			out, err := yaml.Marshal(&doc)
			if err != nil {
				t.Fatalf("%s / %s: marshal: %v", path, m.name, err)
			}
			applied[m.name]++
			file := filepath.Base(path)
			spec, ds := guardedParse(t, file, func() (*Spec, Diagnostics) { return Parse(file, out, testCompile) })
			checkDiagnosticShape(t, file, ds)
			found := false
			for _, d := range ds {
				found = found || d.Code == m.code
			}
			if spec != nil || !found {
				t.Errorf("%s with %s: want %s; got:\n%s--- mutated spec:\n%s", specName(path), m.name, m.code, render(ds), out)
			}
		}
	}
	for _, m := range corpusMutations {
		t.Logf("%-40s applied to %d specs", m.name, applied[m.name])
		if applied[m.name] == 0 {
			t.Errorf("mutation %q applied to no spec of the corpus", m.name)
		}
	}
}

// mutIsV01 reports whether the spec is IR version 0.1.
func mutIsV01(root *yaml.Node) bool {
	v := mutMapValue(root, "version")
	return v != nil && v.Value == Version01
}

// mutResolveAlias follows an alias node to its anchor.
func mutResolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func mutMapValue(m *yaml.Node, key string) *yaml.Node {
	m = mutResolveAlias(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return mutResolveAlias(m.Content[i+1])
		}
	}
	return nil
}

func mutMapSet(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, mutStrScalar(key), v)
}

func mutMapDelete(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

func mutStrScalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
}

func mutFlowNodes(root *yaml.Node) []*yaml.Node {
	flows := mutMapValue(root, "flows")
	if flows == nil || flows.Kind != yaml.MappingNode {
		return nil
	}
	var out []*yaml.Node
	for i := 1; i < len(flows.Content); i += 2 {
		out = append(out, mutResolveAlias(flows.Content[i]))
	}
	return out
}

func mutAllSteps(root *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	for _, fl := range mutFlowNodes(root) {
		steps := mutMapValue(fl, "steps")
		if steps == nil || steps.Kind != yaml.SequenceNode {
			continue
		}
		for _, st := range steps.Content {
			if st = mutResolveAlias(st); st.Kind == yaml.MappingNode {
				out = append(out, st)
			}
		}
	}
	return out
}

// firstStep returns the first step (in any flow) that satisfies ok (nil =
// any step).
func mutFirstStep(root *yaml.Node, ok func(*yaml.Node) bool) *yaml.Node {
	for _, st := range mutAllSteps(root) {
		if ok == nil || ok(st) {
			return st
		}
	}
	return nil
}
