package exprlang

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stratum-go/stratum/specs"

	"github.com/stratum-go/stratum/specs/py"
)

// sampleResult is the `result` most table rows evaluate against.
func sampleResult() map[string]any {
	return map[string]any{
		"confidence": 0.9,
		"count":      4.0, // as encoding/json decodes 4
		"big":        json.Number("12"),
		"ratio":      json.Number("0.25"),
		"status":     "partial",
		"label":      "",
		"summary":    "All Tests Passed",
		"items":      []any{"a", "b", "c"},
		"empty":      []any{},
		"scores":     []any{3.0, 1.5, 2.0},
		"flags":      []any{true, false},
		"nested":     map[string]any{"inner": map[string]any{"deep": 1.0}, "list": []any{map[string]any{"x": 7.0}}},
		"nothing":    nil,
		"ok":         true,
		"tasks": []any{
			map[string]any{"id": "t1", "files_owned": []any{"a.go", "b.go"}},
			map[string]any{"id": "t2", "files_owned": []any{"c.go"}},
		},
		"my key": "spaced",
	}
}

func mustCompile(t *testing.T, kind specs.ExprKind, src string) *specs.Expr {
	t.Helper()
	e, err := Compile(kind, src)
	if err != nil {
		t.Fatalf("Compile(%s, %q): %v", kind, src, err)
	}
	return e
}

func TestExprEvalEnsure(t *testing.T) {
	tests := []struct {
		src  string
		want any
	}{
		// literals and both spellings
		{"True", true},
		{"False", false},
		{"None", nil},
		{"true and not false", true},
		{"null == None", true},
		{"nil == None", true},

		// comparisons with mixed numbers
		{"result.confidence > 0.7", true},
		{"result.count > 3", true},
		{"result.count == 4", true},
		{"result.count == 4.0", true},
		{"result.big == 12", true},
		{"result.big + 1", 13},
		{"result.ratio * 4", 1.0},
		{"result.count >= 4 and result.count <= 4", true},
		{"1 < 2.5", true},
		{"'abc' < 'abd'", true},
		{"[1, 2] < [1, 3]", true},
		{"[1, 2] == [1.0, 2.0]", true},
		{"True == 1", true},
		{"result.label != ''", false},
		{"result.status == \"partial\"", true},

		// membership: tuples, lists, strings, dict keys
		{"result.status in ('success', 'partial')", true},
		{"result.status in ['success', 'partial']", true},
		{"result.status not in ('success', 'partial')", false},
		{"result.status in ('success',)", false},
		{"result.status in ()", false},
		{"'Tests' in result.summary", true},
		{"'tests' in result.summary.lower()", true},
		{"'inner' in result.nested", true},
		{"'zzz' not in result.nested", true},
		{"('a', 'b') == ['a', 'b']", true},
		{"len(('x', ('y', 'z')))", 2},
		{"(1 + 2) * 3", 9},
		{"len((result.items))", 3},

		// None checks
		{"result.nothing == None", true},
		{"result.nothing is None", true},
		{"result.nothing is not None", false},
		{"result.nested.inner is not None", true},
		{"result.nothing != null", false},

		// nested access and indexing
		{"result.nested.inner.deep == 1", true},
		{"result['nested']['inner']['deep']", 1},
		{"result.nested['list'][0].x", 7},
		{"result.items[-1]", "c"},
		{"result['my key']", "spaced"},
		{"result.summary[0]", "A"},
		{"result.items[1:]", []any{"b", "c"}},
		{"result.items[:-1]", []any{"a", "b"}},
		{"result.items[-10:10]", []any{"a", "b", "c"}},
		{"result.items[2:1]", []any{}},
		{"'héllo'[1:3]", "él"},
		{"result.summary[:3]", "All"},

		// comparison chains
		{"0 <= result.confidence <= 1", true},
		{"0 <= result.confidence < 0.5", false},
		{"1 < 2 < 3 < 4", true},
		{"1 < 2 < 3 > 4", false},
		{"result.count == 4 == 4.0", true},
		{"(1 < 2) == True", true},
		{"(3 > 2) > 0", true},
		{"not 0 < result.count < 3", true},
		{"len(result.items) == 3 and 0 < result.count < 5", true},

		// boolean operators with Python truthiness
		{"result.items and len(result.items) > 2", true},
		{"result.empty or result.ok", true},
		{"not result.empty", true},
		{"not result.label", true},
		{"not result.confidence == 3", true},
		{"not len(result.items) > 5", true},
		{"result.nothing or 0", 0},
		{"result.empty or result.items", []any{"a", "b", "c"}},
		{"result.summary and result.summary.lower()", "all tests passed"},
		{"result.label and result.label.lower()", ""},
		{"result.label or result.status or 'none'", "partial"},
		{"result.nothing and result.nothing.x", nil},
		{"result.ok or result.missing", true},
		{"result.label and result.missing", ""},

		// Python conditional expressions
		{"1 if True else 2", 1},
		{"1 if result.empty else 2", 2},
		{"result.nothing.x if result.nothing else 'guarded'", "guarded"},
		{"(result.count / 2 if result.count else 0) > 1", true},
		{"'a' if result.empty else 'b' if result.label else 'c'", "c"},
		{"['x' if result.ok else 'y', 2]", []any{"x", 2}},
		{"len(result.items if result.ok else [])", 3},
		{"result.status in ('success', 'partial') if result.ok else False", true},
		{"not result.ok if result.ok else True", false},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e := mustCompile(t, specs.ExprEnsure, tt.src)
			got, err := e.Eval(specs.EvalEnv{Result: sampleResult()})
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestExprBuiltins(t *testing.T) {
	tests := []struct {
		src     string
		want    any
		wantErr string
	}{
		{"len(result.items)", 3, ""},
		{"len(result.summary)", 16, ""},
		{"len('héllo')", 5, ""},
		{"len(result.nested)", 2, ""},
		{"len(result.count)", nil, "object of type 'int' has no len()"},
		{"len(None)", nil, "object of type 'NoneType' has no len()"},

		{"str(True)", "True", ""},
		{"str(None)", "None", ""},
		{"str(3)", "3", ""},
		{"str(result.count)", "4", ""},
		{"str(1.5)", "1.5", ""},
		{"str(2.0 * 1.5)", "3.0", ""},
		{"str(1e20)", "1e+20", ""},
		{"str(0.0001)", "0.0001", ""},
		{"str(0.00001)", "1e-05", ""},
		{"str(result.items)", "['a', 'b', 'c']", ""},
		{"str(result.nested.inner)", "{'deep': 1}", ""},
		{"str([None, True, \"it's\"])", `[None, True, "it's"]`, ""},
		{"str()", "", ""},

		{"int('12')", 12, ""},
		{"int(' -7 ')", -7, ""},
		{"int('1_000')", 1000, ""},
		{"int(3.9)", 3, ""},
		{"int(-3.9)", -3, ""},
		{"int(True)", 1, ""},
		{"int('1.5')", nil, "invalid literal for int() with base 10: '1.5'"},
		{"int('abc')", nil, "invalid literal for int() with base 10: 'abc'"},
		{"int(None)", nil, "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"},
		{"int('99999999999999999999')", nil, "integer result is too large"},

		{"float('1.5')", 1.5, ""},
		{"float(' 2 ')", 2.0, ""},
		{"float(3)", 3.0, ""},
		{"float('abc')", nil, "could not convert string to float: 'abc'"},
		{"float('0x10')", nil, "could not convert string to float: '0x10'"},
		{"float(result.items)", nil, "float() argument must be a string or a real number, not 'list'"},

		{"bool(result.empty)", false, ""},
		{"bool(result.items)", true, ""},
		{"bool('')", false, ""},
		{"bool('0')", true, ""},
		{"bool({})", false, ""},
		{"bool(0.0)", false, ""},
		{"bool(None)", false, ""},
		{"bool()", false, ""},

		{"any(result.flags)", true, ""},
		{"all(result.flags)", false, ""},
		{"all(result.empty)", true, ""},
		{"any(result.empty)", false, ""},
		{"all([1, 'x', [0]])", true, ""},
		{"any([0, '', None, []])", false, ""},
		{"any(result.count)", nil, "'int' object is not iterable"},

		{"max(result.scores)", 3, ""},
		{"min(result.scores)", 1.5, ""},
		{"max(1, 5, 3)", 5, ""},
		{"min(2, 1.5)", 1.5, ""},
		{"max('a', 'c', 'b')", "c", ""},
		{"max(result.empty)", nil, "max() arg is an empty sequence"},
		{"min(1, 'a')", nil, "'<' not supported between instances of 'str' and 'int'"},

		{"no_file_conflicts(result.tasks)", true, ""},
		{"no_file_conflicts([{'files_owned': ['a']}, {'files_owned': ['b', 'a']}])", false, ""},
		{"no_file_conflicts([{'files_owned': ['a', 'a']}])", true, ""},
		{"no_file_conflicts([{'id': 1}, {'files_owned': None}])", true, ""},
		{"no_file_conflicts([])", true, ""},
		{"no_file_conflicts(result.items)", nil, "task 0 is a str, not a mapping"},
		{"no_file_conflicts(None)", nil, "expects a list of tasks, not NoneType"},

		// methods
		{"result.summary.lower()", "all tests passed", ""},
		{"result.summary.upper().startswith('ALL')", true, ""},
		{"'  x '.strip()", "x", ""},
		{"'a,b'.split(',')", []any{"a", "b"}, ""},
		{"'-'.join(result.items)", "a-b-c", ""},
		{"result.summary.endswith(('Passed', 'Failed'))", true, ""},
		{"result.nested.get('zzz', 5)", 5, ""},
		{"result.nested.get('zzz')", nil, ""},
		{"result.nested.inner.keys()", []any{"deep"}, ""},
		{"result.items.count('a')", 1, ""},
		{"result.count.lower()", nil, "result.count is a int, which has no method lower()"},
		{"result.nothing.get('x')", nil, "result.nothing is None (cannot call get())"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e := mustCompile(t, specs.ExprEnsure, tt.src)
			got, err := e.Eval(specs.EvalEnv{Result: sampleResult()})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %#v, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestExprArithmetic(t *testing.T) {
	tests := []struct {
		src     string
		want    any
		wantErr string
	}{
		{"7 / 2", 3.5, ""},
		{"6 / 2", 3.0, ""},
		{"7 % 3", 1, ""},
		{"-7 % 3", 2, ""},
		{"7 % -3", -2, ""},
		{"2 ** 10", 1024, ""},
		{"2 ** -1", 0.5, ""},
		{"-2 ** 2", -4, ""},
		{"'ab' + 'c'", "abc", ""},
		{"'ab' * 2", "abab", ""},
		{"[1] + [2]", []any{1, 2}, ""},
		{"1 + True", 2, ""},
		{"1 / 0", nil, "division by zero"},
		{"1 % 0", nil, "integer modulo by zero"},
		{"'a' + 1", nil, `can only concatenate str (not "int") to str`},
		{"1 + 'a'", nil, "unsupported operand type(s) for +: 'int' and 'str'"},
		{"None + 1", nil, "unsupported operand type(s) for +: 'NoneType' and 'int'"},
		{"-'a'", nil, "bad operand type for unary -: 'str'"},
		{"9223372036854775807 + 1", nil, "integer result is too large"},
		{"'ab' * 100000000", nil, "result is too large"},
		{"None > 1", nil, "'>' not supported between instances of 'NoneType' and 'int'"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e := mustCompile(t, specs.ExprScore, tt.src)
			got, err := e.Eval(specs.EvalEnv{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %#v, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestExprTruthiness(t *testing.T) {
	tests := []struct {
		result any
		want   bool
	}{
		{nil, false},
		{false, false},
		{true, true},
		{0, false},
		{0.0, false},
		{json.Number("0"), false},
		{math.NaN(), true},
		{-1, true},
		{"", false},
		{"False", true},
		{[]any{}, false},
		{[]any{nil}, true},
		{map[string]any{}, false},
		{map[string]any{"a": nil}, true},
		{[]string{}, false},
		{[]int{0}, true},
		{map[string]int{}, false},
	}
	e := mustCompile(t, specs.ExprEnsure, "result")
	for _, tt := range tests {
		got, err := e.EvalBool(specs.EvalEnv{Result: tt.result})
		if err != nil {
			t.Fatalf("EvalBool(%#v): %v", tt.result, err)
		}
		if got != tt.want {
			t.Errorf("EvalBool(%#v) = %v, want %v", tt.result, got, tt.want)
		}
	}
}

func TestExprRuntimeErrors(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{"result.missing > 1", "result has no field 'missing'"},
		{"result.nested.inner.nope", "result.nested.inner has no field 'nope'"},
		{"result.nothing.x", "result.nothing is None (cannot read 'x')"},
		{"result.items.x", "result.items is a list, not a mapping (cannot read 'x')"},
		{"result.items[5]", "result.items index 5 out of range (length 3)"},
		{"result.count.x", "result.count is a int, not a mapping (cannot read 'x')"},
		{"result['my key'].x", "result['my key'] is a str, not a mapping (cannot read 'x')"},
		{"result.nested.list[0].y", "result.nested.list[0] has no field 'y'"},
		{"1 in result.summary", "'in <string>' requires string as left operand, not int"},
		{"'a' in result.count", "argument of type 'int' is not iterable"},
		{"result.summary > 1", "'>' not supported between instances of 'str' and 'int'"},
		{"result.count[1:]", "result.count is a int, which cannot be sliced"},
		{"[[1] * 100000] * 100 == [[1] * 100000] * 100", "expression exceeded its evaluation budget (more than 64 MiB of data compared, searched, copied or built)"},
		{"min([[0] * 100000] * 100)", "expression exceeded its evaluation budget (more than 64 MiB of data compared, searched, copied or built)"},
		{"result.items['a':]", "slice indices must be integers or None, not str"},
		{"0 < result.summary < 2", "'<' not supported between instances of 'int' and 'str'"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e := mustCompile(t, specs.ExprEnsure, tt.src)
			_, err := e.EvalBool(specs.EvalEnv{Result: sampleResult()})
			var xe *specs.ExprError
			if !errors.As(err, &xe) {
				t.Fatalf("got %v (%T), want *ExprError", err, err)
			}
			if xe.Message != tt.want {
				t.Fatalf("message %q, want %q", xe.Message, tt.want)
			}
			if strings.Contains(xe.Message, "expr:") || strings.Contains(xe.Message, "(1:") || strings.Contains(xe.Message, "\n") {
				t.Fatalf("message has internals: %q", xe.Message)
			}
		})
	}
}

func TestExprCompileErrors(t *testing.T) {
	tests := []struct {
		kind      specs.ExprKind
		src       string
		offset    int
		msg       string
		forbidden bool
	}{
		{specs.ExprEnsure, "result.__class__", 7, "'__' is not allowed in expressions", true},
		{specs.ExprSkipIf, "'__' in $.input.x", 1, "'__' is not allowed in expressions", true},
		{specs.ExprEnsure, "reslt.x > 1", 0, "name 'reslt' is not defined (did you mean 'result'?)", false},
		{specs.ExprEnsure, "result.x > 1 and itme", 17, "name 'itme' is not defined", false},
		{specs.ExprAccumulateKey, "result.x", 0, "name 'result' is not defined", false},
		{specs.ExprAccumulateKey, "itm.x", 0, "name 'itm' is not defined (did you mean 'item'?)", false},
		{specs.ExprEnsure, "best_score > 1", 0, "name 'best_score' is not defined", false},
		{specs.ExprSkipIf, "result.x", 0, "name 'result' is not defined", false},
		{specs.ExprEnsure, "open('x')", 0, "function 'open' is not allowed", true},
		{specs.ExprEnsure, "lenn(result.x)", 0, "function 'lenn' is not allowed (did you mean 'len'?)", true},
		{specs.ExprEnsure, "filter(result.items, .x > 1)", 0, "function 'filter' is not allowed", true},
		{specs.ExprEnsure, "1 if result.x", 2, "unexpected 'if'", false},
		{specs.ExprEnsure, "result.x.delete()", 9, "method 'delete' is not allowed", true},
		{specs.ExprEnsure, "$env.result", 0, "name '$env' is not allowed", true},
		{specs.ExprEnsure, "len(result.x, 2)", 0, "len() takes exactly 1 argument (2 given)", false},
		{specs.ExprEnsure, "file_contains('a')", 0, "file_contains() takes exactly 2 arguments (1 given)", false},
		{specs.ExprEnsure, "result.x >", 10, "unexpected end of expression", false},
		{specs.ExprEnsure, "(result.x > 1", 13, "unexpected end of expression", false},
		{specs.ExprEnsure, "result.x > 1)", 12, "unexpected ')'", false},
		{specs.ExprEnsure, "result.x ===", 11, "unexpected '='", false},
		{specs.ExprEnsure, "$.input.x", 0, "$-references are only allowed in skip_if", false},
		{specs.ExprEnsure, "result.a // 2", 9, "'//' (floor division) is not supported; use int(a / b)", false},
		{specs.ExprEnsure, "len(0..10000000)", 5, "operator '..' is not supported", false},
		{specs.ExprEnsure, "result.s contains 'x'", 9, "operator 'contains' is not supported; use 'x in y'", false},
		{specs.ExprEnsure, "result.s matches 'x+'", 9, "operator 'matches' is not supported", false},
		{specs.ExprEnsure, "let x = 1; x", 4, "'let' is not supported", false},
		{specs.ExprEnsure, "1; 2", 0, "only one expression is allowed (found ';')", false},
		{specs.ExprEnsure, "", 0, "empty expression", false},
		{specs.ExprEnsure, "   # only a comment", 0, "empty expression", false},
		{specs.ExprEnsure, "f'x'", 0, "f-strings are not supported", false},
		{specs.ExprEnsure, "'abc", 4, "literal not terminated", false},
		{specs.ExprEnsure, "a\xffb", 1, "expression is not valid UTF-8", false},
		{specs.ExprEnsure, strings.Repeat("1+", 3000) + "1", specs.MaxExprLen, "expression is too long (6001 bytes, at most 4096)", false},
		{specs.ExprEnsure, strings.TrimSuffix(strings.Repeat("1+", 1100), "+"), -2, "expression is too complex (more than 2000 nodes)", false},
		{specs.ExprKind("bogus"), "1", -1, `unknown expression kind "bogus"`, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind)+"/"+tt.src[:min(len(tt.src), 40)], func(t *testing.T) {
			e, err := Compile(tt.kind, tt.src)
			if err == nil {
				t.Fatalf("compiled: %+v", e)
			}
			var xe *specs.ExprError
			if !errors.As(err, &xe) {
				t.Fatalf("got %T, want *ExprError", err)
			}
			if !strings.HasPrefix(xe.Message, tt.msg) {
				t.Errorf("message %q, want prefix %q", xe.Message, tt.msg)
			}
			if tt.offset != -2 && xe.Offset != tt.offset {
				t.Errorf("offset %d, want %d", xe.Offset, tt.offset)
			}
			if xe.Forbidden != tt.forbidden {
				t.Errorf("forbidden %v, want %v", xe.Forbidden, tt.forbidden)
			}
			if xe.Error() != xe.Message {
				t.Errorf("Error() = %q", xe.Error())
			}
		})
	}
}

func TestExprDialectAccepted(t *testing.T) {
	// Expressions agents write for the original; they must compile.
	for _, tt := range []struct {
		kind specs.ExprKind
		src  string
	}{
		{specs.ExprEnsure, "result.confidence > 0.7"},
		{specs.ExprEnsure, "len(result.items) > 0"},
		{specs.ExprEnsure, "result.status in ('success', 'partial')"},
		{specs.ExprEnsure, "file_exists('src/main.py') and file_contains('src/main.py', 'def main')"},
		{specs.ExprEnsure, "no_file_conflicts(result.tasks)"},
		{specs.ExprEnsure, "result.x is not None  # must be set"},
		{specs.ExprEnsure, "result.a.b\n  and result.c"},
		{specs.ExprEnsure, "u'x' == r'x'"},
		{specs.ExprExitCriterion, "result.done == True or iteration >= 3 or dry_streak >= 2"},
		{specs.ExprExitCriterion, "best_score is not None and best_score >= 0.9"},
		{specs.ExprExitCriterion, "len(accumulator) >= 10 or new_count == 0 or accumulated_count > 5 or len(prior_scores) > 2"},
		{specs.ExprScore, "result.passed / max(result.total, 1)"},
		{specs.ExprAccumulate, "result.findings"},
		{specs.ExprAccumulateKey, "item.file + ':' + str(item.line)"},
		{specs.ExprSkipIf, "$.input.mode == 'fast'"},
		{specs.ExprSkipIf, "$.steps.review.output.verdict in ('approve', 'skip') and not $.input.force"},
	} {
		if _, err := Compile(tt.kind, tt.src); err != nil {
			t.Errorf("Compile(%s, %q): %v", tt.kind, tt.src, err)
		}
	}
}

func TestExprExitCriterionVars(t *testing.T) {
	e := mustCompile(t, specs.ExprExitCriterion, "best_score >= 0.9 and iteration > 1 and len(prior_scores) == 2 and accumulator is None")
	ok, err := e.EvalBool(specs.EvalEnv{Result: map[string]any{}, Vars: map[string]any{
		"best_score": 0.95, "iteration": 2, "prior_scores": []float64{0.5, 0.95},
	}})
	if err != nil || !ok {
		t.Fatalf("got %v, %v", ok, err)
	}
	ok, err = e.EvalBool(specs.EvalEnv{Vars: map[string]any{"best_score": 0.5, "iteration": 2, "prior_scores": []any{}}})
	if err != nil || ok {
		t.Fatalf("got %v, %v", ok, err)
	}
	// Missing vars are null, so comparing them raises like Python would.
	_, err = e.EvalBool(specs.EvalEnv{})
	if err == nil || !strings.Contains(err.Error(), "not supported between instances of 'NoneType' and 'float'") {
		t.Fatalf("got %v", err)
	}
}

func TestExprAccumulateKey(t *testing.T) {
	e := mustCompile(t, specs.ExprAccumulateKey, "item.file + ':' + str(item.line)")
	got, err := e.Eval(specs.EvalEnv{Item: map[string]any{"file": "a.go", "line": 12.0}, Result: "ignored"})
	if err != nil || got != "a.go:12" {
		t.Fatalf("got %#v, %v", got, err)
	}
}

func TestExprSkipIfRefs(t *testing.T) {
	src := "$.input.mode == 'fast' and ($.steps.s.output.f or $.input.mode == '$.input.nope') and $.steps.gone.output is None"
	e := mustCompile(t, specs.ExprSkipIf, src)
	wantRefs := []string{"$.input.mode", "$.steps.s.output.f", "$.steps.gone.output"}
	if got := e.Refs(); !reflect.DeepEqual(got, wantRefs) {
		t.Fatalf("Refs() = %q, want %q", got, wantRefs)
	}
	var asked []string
	var mu sync.Mutex
	env := specs.EvalEnv{Refs: func(ref string) (any, bool) {
		mu.Lock()
		asked = append(asked, ref)
		mu.Unlock()
		switch ref {
		case "$.input.mode":
			return "fast", true
		case "$.steps.s.output.f":
			return []any{1}, true
		}
		return nil, false
	}}
	ok, err := e.EvalBool(env)
	if err != nil || !ok {
		t.Fatalf("EvalBool = %v, %v", ok, err)
	}
	if !reflect.DeepEqual(asked, wantRefs) {
		t.Fatalf("resolved %q, want %q", asked, wantRefs)
	}
	// No resolver: every reference is null.
	e2 := mustCompile(t, specs.ExprSkipIf, "$.input.x is None and not $.input.y")
	if ok, err := e2.EvalBool(specs.EvalEnv{}); err != nil || !ok {
		t.Fatalf("without resolver: %v, %v", ok, err)
	}
	// Errors name the reference as written.
	e3 := mustCompile(t, specs.ExprSkipIf, "$.steps.s.output['missing'].x")
	_, err = e3.Eval(specs.EvalEnv{})
	if err == nil || err.Error() != "$.steps.s.output is None (cannot read 'missing')" {
		t.Fatalf("got %v", err)
	}
	if refs := mustCompile(t, specs.ExprEnsure, "result.a").Refs(); len(refs) != 0 {
		t.Fatalf("ensure Refs() = %q", refs)
	}
}

func TestExprResultPaths(t *testing.T) {
	tests := []struct {
		kind specs.ExprKind
		src  string
		want [][]string
	}{
		{specs.ExprEnsure, "result.a.b > 1", [][]string{{"a", "b"}}},
		{specs.ExprEnsure, "result['a']['b'] and result.c", [][]string{{"a", "b"}, {"c"}}},
		{specs.ExprEnsure, "result.items[0].x == result.items[1].x", [][]string{{"items"}}},
		{specs.ExprEnsure, "result.name.lower() == 'x' and len(result.list) > 0", [][]string{{"name"}, {"list"}}},
		{specs.ExprEnsure, "result.a and result.a.b and result.a", [][]string{{"a"}, {"a", "b"}}},
		{specs.ExprEnsure, "result.x if result.c else result.y", [][]string{{"x"}, {"c"}, {"y"}}},
		{specs.ExprEnsure, "result == None", nil},
		{specs.ExprEnsure, "result[result.k]", [][]string{{"k"}}},
		{specs.ExprEnsure, "'result.x' == 'y'", nil},
		{specs.ExprExitCriterion, "result.done or iteration > 2", [][]string{{"done"}}},
		{specs.ExprAccumulateKey, "item.a.b", nil},
	}
	for _, tt := range tests {
		e := mustCompile(t, tt.kind, tt.src)
		if got := e.ResultPaths(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ResultPaths(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
	var zero *specs.Expr
	if zero.ResultPaths() != nil || zero.Refs() != nil {
		t.Fatal("nil Expr")
	}
	if _, err := zero.Eval(specs.EvalEnv{}); err == nil {
		t.Fatal("nil specs.Expr evaluated")
	}
	if _, err := (&specs.Expr{Source: "x"}).Eval(specs.EvalEnv{}); err == nil {
		t.Fatal("uncompiled specs.Expr evaluated")
	}
}

func TestExprFileBuiltins(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "a.txt"), "hello world\n")
	write(filepath.Join(root, "sub", "b.txt"), "needle \xff bytes")
	write(filepath.Join(outside, "secret.txt"), "secret")
	big := make([]byte, py.MaxFileBytes+1)
	copy(big, "needle")
	if err := os.WriteFile(filepath.Join(root, "big.txt"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	exact := make([]byte, py.MaxFileBytes)
	copy(exact[py.MaxFileBytes-6:], "needle")
	if err := os.WriteFile(filepath.Join(root, "exact.txt"), exact, 0o644); err != nil {
		t.Fatal(err)
	}
	symlinks := true
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape.txt")); err != nil {
		symlinks = false
	}
	if symlinks {
		_ = os.Symlink(outside, filepath.Join(root, "outdir"))
		_ = os.Symlink("a.txt", filepath.Join(root, "alias.txt"))
	}

	// The same table runs with the root as a directory (EvalEnv.Root) and
	// as an fs.FS (EvalEnv.FS, os.Root's, which confines symlinks too);
	// absolute names only an FS cannot answer (absFalse: false there).
	tests := []struct {
		src      string
		want     bool
		symlink  bool
		absFalse bool
	}{
		{"file_exists('a.txt')", true, false, false},
		{"file_exists('./sub/../a.txt')", true, false, false},
		{"file_exists('sub/b.txt')", true, false, false},
		{"file_exists('sub')", false, false, false},
		{"file_exists('nope.txt')", false, false, false},
		{"file_exists('')", false, false, false},
		{"file_exists('../outside/secret.txt')", false, false, false},
		{"file_exists('sub/../../outside/secret.txt')", false, false, false},
		{"file_exists(" + quoteExprString(filepath.Join(outside, "secret.txt")) + ")", false, false, false},
		{"file_exists(" + quoteExprString(filepath.Join(root, "a.txt")) + ")", true, false, true},
		{"file_contains('a.txt', 'world')", true, false, false},
		{"file_contains('a.txt', 'mars')", false, false, false},
		{"file_contains('sub/b.txt', 'needle')", true, false, false},
		{"file_contains('sub/b.txt', '\uFFFD')", true, false, false},
		{"file_contains('nope.txt', 'x')", false, false, false},
		{"file_contains('sub', 'x')", false, false, false},
		{"file_contains('../outside/secret.txt', 'secret')", false, false, false},
		{"file_exists('big.txt')", true, false, false},
		{"file_contains('big.txt', 'needle')", false, false, false},
		{"file_contains('exact.txt', 'needle')", true, false, false},
		{"file_exists('escape.txt')", false, true, false},
		{"file_contains('escape.txt', 'secret')", false, true, false},
		{"file_exists('outdir/secret.txt')", false, true, false},
		{"file_exists('alias.txt')", true, true, false},
		{"file_contains('alias.txt', 'hello')", true, true, false},
	}
	osRoot, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer osRoot.Close()
	for _, tt := range tests {
		if tt.symlink && !symlinks {
			continue
		}
		e := mustCompile(t, specs.ExprEnsure, tt.src)
		for _, env := range []specs.EvalEnv{{Root: root}, {Root: outside, FS: osRoot.FS()}} {
			want := tt.want && !(env.FS != nil && tt.absFalse)
			got, err := e.EvalBool(env)
			if err != nil {
				t.Errorf("%s (fs %t): %v", tt.src, env.FS != nil, err)
				continue
			}
			if got != want {
				t.Errorf("%s (fs %t) = %v, want %v", tt.src, env.FS != nil, got, want)
			}
		}
	}

	// Type errors read like Python's.
	_, err = mustCompile(t, specs.ExprEnsure, "file_exists(None)").Eval(specs.EvalEnv{Root: root})
	if err == nil || err.Error() != "file_exists() argument must be str, not NoneType" {
		t.Fatalf("got %v", err)
	}
	_, err = mustCompile(t, specs.ExprEnsure, "file_contains('a.txt', 1)").Eval(specs.EvalEnv{Root: root})
	if err == nil || err.Error() != "file_contains() argument 2 must be str, not int" {
		t.Fatalf("got %v", err)
	}

	// Reading counts against the evaluation's work budget.
	many := strings.TrimSuffix(strings.Repeat("file_contains('exact.txt', 'needle') and ", 40), " and ")
	_, err = mustCompile(t, specs.ExprEnsure, many).Eval(specs.EvalEnv{Root: root})
	if err == nil || err.Error() != "expression exceeded its evaluation budget (more than 64 MiB of data compared, searched, copied or built)" {
		t.Fatalf("40 reads of a 10 MB file: %v", err)
	}

	// Root "" is the current directory.
	t.Chdir(root)
	if ok, err := mustCompile(t, specs.ExprEnsure, "file_exists('a.txt') and not file_exists('../outside/secret.txt')").EvalBool(specs.EvalEnv{}); err != nil || !ok {
		t.Fatalf("cwd root: %v, %v", ok, err)
	}
}

func quoteExprString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func TestExprConcurrentEval(t *testing.T) {
	e := mustCompile(t, specs.ExprEnsure, "len(result.items) == result.n and str(result.n) in ('1', '2', '3', '4')")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := (g+i)%4 + 1
				items := make([]any, n)
				ok, err := e.EvalBool(specs.EvalEnv{Result: map[string]any{"items": items, "n": n}})
				if err != nil || !ok {
					errs <- fmt.Errorf("n=%d: %v, %v", n, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestExprHostileValues(t *testing.T) {
	// A result nested deeper than the evaluator's bound is an error, not a crash.
	var deep any = "x"
	for range 5000 {
		deep = []any{deep}
	}
	e := mustCompile(t, specs.ExprEnsure, "str(result)")
	if _, err := e.Eval(specs.EvalEnv{Result: deep}); err == nil {
		t.Fatal("deep value accepted")
	}
	// Unusual Go values are normalised.
	e = mustCompile(t, specs.ExprEnsure, "result.a[0] + result.b['k'] + result.c")
	got, err := e.Eval(specs.EvalEnv{Result: map[string]any{
		"a": []int64{1}, "b": map[string]uint8{"k": 2}, "c": float32(0.5),
	}})
	if err != nil || got != 3.5 {
		t.Fatalf("got %#v, %v", got, err)
	}
}

func BenchmarkExprEval(b *testing.B) {
	e, err := Compile(specs.ExprEnsure, "result.confidence > 0.7 and result.status in ('success', 'partial') and len(result.items) > 0")
	if err != nil {
		b.Fatal(err)
	}
	env := specs.EvalEnv{Result: sampleResult()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.EvalBool(env); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExprCompile(b *testing.B) {
	for b.Loop() {
		if _, err := Compile(specs.ExprEnsure, "result.confidence > 0.7 and result.status in ('success', 'partial') and len(result.items) > 0"); err != nil {
			b.Fatal(err)
		}
	}
}

// A stage's predicates see item and prev/prev_raw (when) or
// result/result_raw (exit_when).
func TestStagePredicates(t *testing.T) {
	ctx := context.Background()
	when := mustCompile(t, specs.ExprWhen, "prev_raw['ok'] and 'x' in prev and item == 'a'")
	got, err := when.EvalBoolContext(ctx, specs.EvalEnv{Item: "a", Vars: map[string]any{"prev": `{"ok":true,"x":1}`, "prev_raw": map[string]any{"ok": true, "x": 1}}})
	if err != nil || !got {
		t.Errorf("when = %v, %v", got, err)
	}
	exit := mustCompile(t, specs.ExprExitWhen, "'PASS' in result and result_raw != None")
	got, err = exit.EvalBoolContext(ctx, specs.EvalEnv{Item: "a", Vars: map[string]any{"result": "PASS", "result_raw": "PASS"}})
	if err != nil || !got {
		t.Errorf("exit_when = %v, %v", got, err)
	}
	if _, err := Compile(specs.ExprWhenFirst, "prev == 1"); err == nil {
		t.Error("the first stage's when compiled with prev")
	}
}
