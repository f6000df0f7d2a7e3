package exprlang

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/specs"
)

// exprFuzzKinds are the kinds a fuzz input's int selects from.
var exprFuzzKinds = []specs.ExprKind{specs.ExprEnsure, specs.ExprSkipIf, specs.ExprExitCriterion, specs.ExprScore, specs.ExprAccumulate, specs.ExprAccumulateKey}

// exprPanicMarkers are texts that only appear when a Go panic (recovered by
// expr's VM or by our guards) leaked into an error message: the fuzzers treat
// them as crashes.
var exprPanicMarkers = []string{
	"interface conversion", "runtime error", "invalid memory address", "nil pointer",
	"reflect:", "goroutine ", "evaluation failed:", "cannot compile expression:", "() failed:",
	"index out of range [", "slice bounds out of range",
}

// exprFuzzSeeds are realistic and hostile sources, also committed under
// testdata/fuzz.
var exprFuzzSeeds = []string{
	"result.confidence > 0.7",
	"result.status in ('success', 'partial')",
	"len(result.items) > 0 and result.label != ''",
	"result.x is not None and 0 <= result.score <= 1",
	"no_file_conflicts(result.tasks)",
	"file_exists('a.txt') and file_contains('a.txt', 'x')",
	"$.input.mode == 'fast' or $.steps.s.output.f in [1, 2]",
	"best_score >= 0.9 or iteration > 3 or dry_streak >= 2",
	"item.file + ':' + str(item.line)",
	"not result.items[0].name.lower().startswith(('a', 'b'))",
	"__import__('os')",
	"().__class__",
	"$.", "$..a", "$env", "$env['result']",
	"(((((", ")))", "[[[", "'unterminated", "\"\\x\"", "\\", "#", "# only a comment",
	"not not not result",
	"2 ** 63", "2 ** 1000000", "-9223372036854775808", "9223372036854775808", "1e999", "0x", "1_",
	"'a' * -1", "'ab' * 9223372036854775807", "[1] * 100000000", "str(result) * 1000000",
	"b'x' + 'y'", "r'\\'", "u''", "f'{x}'",
	"result?.a?.b ?? 1", "result | len()", "if true { 1 } else { 2 }", "true ? 1 : 2",
	"{'a': 1}['a']", "{a: 1}.a", "result[1:2:3]", "result.items[-9223372036854775808]",
	"result.items[9223372036854775807:]", "lambda x: x", "[x for x in result]", "x if y else z",
	"not in", "is not", "None is None", "True is not False", "\u2014x", "'é' == 'é'", "\x00", "result.\x00",
	"let x = 1; x", "1;2", "0..3", "`raw`", "'\\u0000'", "min()", "max([])",
	"file_exists('/etc/passwd')", "file_contains('../../etc/passwd', 'root')", "file_exists('\\x00')",
	"no_file_conflicts([{'files_owned': [[1]]}])", "'%s' % 1", "1 < 'a' < 2", "(1,) in ((1,),)",
	"((1,2),(3,4))", "()", "(,)", "(1,,2)", "a\xffb", strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300),
	"x if c else y if d else z", "(a if b else c) if d else e", "1 if else 2", "if if else else", "a if (b", "a if b else",
	"[1 if x else 2, 3]", "{'k': 1 if x else 2}", "result.a or result.b and not result.c", "result or result or result or result",
	"0 < result.x < 1 == True", "not 0 < result.x < 3", "(1 < 2) < 3", "result.items[::2]", "result.items[:]",
	strings.Repeat("1 if x else ", 200) + "1", strings.Repeat("a or ", 300) + "a",
	strings.Repeat("not ", 500) + "1", strings.Repeat("len(", 50) + "1" + strings.Repeat(")", 50),
	// Comprehensions and generators.
	"len([i for i in result.items if i['status'] == 'complete']) >= 2", "[x for x in result]", "[[y for y in x] for x in result]",
	"any(x > 1 for x in result)", "[x for x in x]", "[for x in y]", "[x for x in]", "[x for x in y for z in x]", "(x for x in [1] if x",
	"[x if x else y for x in result if x]", "{x: 1 for x in result}", "[x for x.y in result]", "[result for result in result]",
	"[x for x in 'abc' if x in [y for y in 'b']]", "max(x for x in result if x)", "[x for x in result.for]",
	// Cost: operations whose work grows with the size of the data touched.
	"[result.summary * 60000] * 1000000 != [result.summary * 60000] * 1000000",
	"result.summary in [result.summary * 60000] * 1000000", "min([str(result)] * 1000000) != ''",
	"(result.summary * 60000).split('s').count('') > 0", "any(result.summary * 60000)",
	"(result.summary * 60000).startswith([result.summary * 60000] * 1000000)",
	"(result.summary * 60000).strip('é' * 60000 + 'A') == ''", "str([result.summary * 60000] * 15)",
	strings.TrimSuffix(strings.Repeat("(result.summary * 60000)[-1:] != '' and ", 60), " and "),
	strings.TrimSuffix(strings.Repeat("(result.summary * 60000).upper().count('A') > 0 and ", 40), " and "),
}

// exprCostSeeds pair expressions that touch a lot of data with a result of
// large strings (FuzzEvalExpr).
var exprCostSeeds = []string{
	"[result.a] * 1000000 != [result.b] * 1000000",
	"result.a in [result.b + 'x'] * 1000000",
	"result.a.split('a').count('') > 0",
	"result.a.startswith([result.b] * 1000000)",
	"len(result.a) + len(result.a) + len(result.a) + len(result.a) > 0",
	"result.a[1:] + result.b[1:] != result.a.lower()",
	"str([result.a] * 100) != ''",
}

func exprFuzzEnvs(root string) []specs.EvalEnv {
	result := sampleResult()
	return []specs.EvalEnv{
		{},
		{Result: result, Item: result, Root: root, Vars: map[string]any{"best_score": 0.5, "iteration": 2, "prior_scores": []any{0.1}},
			Refs: func(ref string) (any, bool) {
				if strings.HasPrefix(ref, "$.input.") {
					return result, true
				}
				return nil, false
			}},
		{Result: []any{nil, "x", 1.5, map[string]any{}}, Item: "s", Root: root},
	}
}

func checkExprError(t *testing.T, src string, err error) {
	t.Helper()
	var xe *specs.ExprError
	if !errors.As(err, &xe) {
		t.Fatalf("%q: error %T %v is not an *ExprError", src, err, err)
	}
	if xe.Message == "" {
		t.Fatalf("%q: empty message", src)
	}
	if xe.Offset < -1 || xe.Offset > len(src) {
		t.Fatalf("%q: offset %d outside the source", src, xe.Offset)
	}
	for _, m := range exprPanicMarkers {
		if strings.Contains(xe.Message, m) {
			t.Fatalf("%q: panic leaked into the message: %q", src, xe.Message)
		}
	}
}

func exprFuzzRoot(f *testing.F) string {
	root := f.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello x"), 0o644); err != nil {
		f.Fatal(err)
	}
	return root
}

// FuzzCompileExpr compiles arbitrary source as every kind and runs what
// compiles against a few fixed environments: nothing may panic, every error
// must be a clean *ExprError.
func FuzzCompileExpr(f *testing.F) {
	for i, s := range exprFuzzSeeds {
		f.Add(i%len(exprFuzzKinds), s)
	}
	envs := exprFuzzEnvs(exprFuzzRoot(f))
	f.Fuzz(func(t *testing.T, kind int, src string) {
		k := exprFuzzKinds[((kind%len(exprFuzzKinds))+len(exprFuzzKinds))%len(exprFuzzKinds)]
		e, err := Compile(k, src)
		if err != nil {
			checkExprError(t, src, err)
			return
		}
		if e.Source != src || e.Kind != k {
			t.Fatalf("compiled %q as %q/%s", src, e.Source, e.Kind)
		}
		for _, p := range e.ResultPaths() {
			if len(p) == 0 {
				t.Fatalf("%q: empty result path", src)
			}
		}
		for _, r := range e.Refs() {
			if !strings.HasPrefix(r, "$.") || !strings.Contains(src, r) {
				t.Fatalf("%q: bad ref %q", src, r)
			}
		}
		for _, env := range envs {
			if _, err := e.Eval(env); err != nil {
				checkExprError(t, src, err)
			}
		}
	})
}

// FuzzEvalExpr evaluates compiled expressions against arbitrary JSON results.
func FuzzEvalExpr(f *testing.F) {
	for i, s := range exprFuzzSeeds[:12] {
		f.Add(s, []string{`{"a": 1}`, `{"items": [1, "x", null]}`, `[]`, `"s"`, `1e400`, `{"tasks": [{"files_owned": ["a"]}]}`}[i%6])
	}
	f.Add("result.a.b.c", `{"a": {"b": {"c": 18446744073709551616}}}`)
	f.Add("result == result", `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`)
	big := strings.Repeat("a", 256<<10)
	for _, src := range exprCostSeeds {
		f.Add(src, `{"a": "`+big+`", "b": "`+big+`"}`)
	}
	root := exprFuzzRoot(f)
	f.Fuzz(func(t *testing.T, src, resultJSON string) {
		e, err := Compile(specs.ExprExitCriterion, src)
		if err != nil {
			checkExprError(t, src, err)
			return
		}
		dec := json.NewDecoder(strings.NewReader(resultJSON))
		dec.UseNumber()
		var result any
		if dec.Decode(&result) != nil {
			result = resultJSON
		}
		env := specs.EvalEnv{Result: result, Root: root, Vars: map[string]any{"accumulator": result, "iteration": result}}
		start := time.Now()
		if _, err := e.Eval(env); err != nil {
			checkExprError(t, src, err)
		}
		// The work budget bounds every evaluation (well under a second; the
		// margin is for a loaded machine).
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("%q took %v", src, d)
		}
		if _, err := e.EvalBool(env); err != nil {
			checkExprError(t, src, err)
		}
	})
}
