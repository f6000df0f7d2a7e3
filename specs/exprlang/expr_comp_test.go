package exprlang

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/specs"
)

// compResult is a pipeline's result as the original's
// test_ensure_over_items_bracket_access sees it.
func compResult() map[string]any {
	return map[string]any{
		"items": []any{
			map[string]any{"id": "a", "status": "complete", "n": 1.0},
			map[string]any{"id": "b", "status": "failed", "n": 2.0},
			map[string]any{"id": "c", "status": "complete", "n": 3.0},
		},
		"empty": []any{},
		"rows":  []any{[]any{1.0, 2.0}, []any{3.0}},
		"d":     map[string]any{"y": 2.0, "x": 1.0},
		"i":     "outer",
	}
}

func TestExprComprehensions(t *testing.T) {
	tests := []struct {
		src  string
		want any
	}{
		// the original's own ensure (test_ensure_over_items_bracket_access)
		{"len([i for i in result.items if i['status'] == 'complete']) >= 2", true},
		{"[i['id'] for i in result.items if i['status'] == 'complete']", []any{"a", "c"}},
		{"[i.n * 2 for i in result.items]", []any{2, 4, 6}},
		{"[i for i in result.empty]", []any{}},
		{"[i for i in result.empty if i]", []any{}},
		{"[x for x in [0, 1, '', 'a', None] if x]", []any{1, "a"}},
		{"[k for k in result.d]", []any{"x", "y"}},
		{"[c.upper() for c in 'ab']", []any{"A", "B"}},
		{"[(x, x) for x in [1, 2] if x > 1]", []any{[]any{2, 2}}},
		// nested: in the element, the iterable and the condition
		{"[[y * 10 for y in r] for r in result.rows]", []any{[]any{10, 20}, []any{30}}},
		{"[x for x in [y + 1 for y in [1, 2]] if x > 2]", []any{3}},
		{"[r for r in result.rows if len([y for y in r if y > 2]) > 0]", []any{[]any{3}}},
		{"[[x for x in x] for x in result.rows]", []any{[]any{1, 2}, []any{3}}},
		// scoping: the variable shadows only inside; result stays visible
		{"[result for result in [1, 2]]", []any{1, 2}},
		{"[len(result.items) + x for x in [1]]", []any{4}},
		{"[x for x in [1]] + [result.i]", []any{1, "outer"}},
		// with the rest of the dialect
		{"['y' if x else 'n' for x in [True, False]]", []any{"y", "n"}},
		{"[x for x in [1, 2, 3] if x > 1 and x < 3]", []any{2}},
		{"[x for x in [1, 2, 3] if not x == 2]", []any{1, 3}},
		{"[x for x in [1, 2, 3] if 1 < x <= 3]", []any{2, 3}},
		{"[x for x in (1, 2)]", []any{1, 2}},
		// generator expressions
		{"any(i['status'] == 'failed' for i in result.items)", true},
		{"all(i.n > 0 for i in result.items)", true},
		{"all(i.n > 1 for i in result.items)", false},
		{"len(i for i in result.items if i.n > 1)", 2},
		{"max(i.n for i in result.items)", 3},
		{"(x * 2 for x in [1, 2])", []any{2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e := mustCompile(t, specs.ExprEnsure, tt.src)
			got, err := e.Eval(specs.EvalEnv{Result: compResult()})
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestExprComprehensionErrors(t *testing.T) {
	tests := []struct {
		src    string
		offset int
		msg    string
	}{
		{"[x for x in result.items for y in x]", 25, "a comprehension may have only one 'for' clause"},
		{"[x for x in result.items if x if x]", 30, "a comprehension may have only one 'if' clause; join the conditions with 'and'"},
		{"[for x in result.items]", 1, "expected an expression before 'for'"},
		{"[x for x, y in result.items]", 3, "expected 'for NAME in …' (one name; tuple targets are not supported)"},
		{"[x for (x) in result.items]", 3, "expected 'for NAME in …' (one name; tuple targets are not supported)"},
		{"[x for None in result.items]", 3, "expected 'for NAME in …' (one name; tuple targets are not supported)"},
		{"[x for x result.items]", 3, "expected 'for NAME in …' (one name; tuple targets are not supported)"},
		{"[x for x in]", 9, "expected an expression after 'in'"},
		{"[x for x in result.items if]", 25, "expected a condition after 'if'"},
		{"[x, 1 for x in result.items]", 2, "a comprehension's element must be one expression (a generator must be the only argument; a tuple element must be parenthesised)"},
		{"any(1, x for x in result.items)", 5, "a comprehension's element must be one expression (a generator must be the only argument; a tuple element must be parenthesised)"},
		{"{x: 1 for x in result.items}", 6, "dict and set comprehensions are not supported; use a list comprehension [x for x in …]"},
		{"[y for x in result.items]", 1, "name 'y' is not defined"},
		{"[x for x in [] for y in []] + [for z in []]", 15, "a comprehension may have only one 'for' clause"},
		{"[z for z in [] if 1 if 2] + [x for x in [] for y in []]", 20, "a comprehension may have only one 'if' clause; join the conditions with 'and'"},
		{"[x for x in result.items] and x", 30, "name 'x' is not defined"},
		{"[x for x in y]", 12, "name 'y' is not defined"},
		{"[x for x in result.items if map(x, 1)]", 28, "function 'map' is not allowed"},
		{"[x for x in result.items if filter(x, .a)]", 28, "function 'filter' is not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := Compile(specs.ExprEnsure, tt.src)
			var xe *specs.ExprError
			if !errors.As(err, &xe) {
				t.Fatalf("got %v, want an *ExprError", err)
			}
			if xe.Offset != tt.offset || !strings.HasPrefix(xe.Message, tt.msg) {
				t.Fatalf("got %d %q, want %d %q", xe.Offset, xe.Message, tt.offset, tt.msg)
			}
		})
	}
}

func TestExprComprehensionRuntime(t *testing.T) {
	tests := []struct {
		src, msg string
	}{
		{"[x for x in result.i.n]", "str"},
		{"[x for x in 3]", "'int' object is not iterable"},
		{"[x['status'] for x in [1]]", "int"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := mustCompile(t, specs.ExprEnsure, tt.src).Eval(specs.EvalEnv{Result: compResult()})
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want an error containing %q", err, tt.msg)
			}
		})
	}
}

// TestExprComprehensionKinds: comprehensions work wherever the dialect is
// used, with each kind's names.
func TestExprComprehensionKinds(t *testing.T) {
	tests := []struct {
		kind specs.ExprKind
		src  string
		env  specs.EvalEnv
	}{
		{specs.ExprAccumulateKey, "[k for k in item if k != 'n'] == ['id']", specs.EvalEnv{Item: map[string]any{"id": 1, "n": 2}}},
		{specs.ExprSkipIf, "len([s for s in $.input.xs if s]) == 1", specs.EvalEnv{Refs: func(string) (any, bool) { return []any{"", "a"}, true }}},
		{specs.ExprExitCriterion, "len([s for s in prior_scores if s > best_score]) == 0", specs.EvalEnv{Vars: map[string]any{"best_score": 3, "prior_scores": []any{1, 2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			ok, err := mustCompile(t, tt.kind, tt.src).EvalBool(tt.env)
			if err != nil || !ok {
				t.Fatalf("got %v, %v; want true", ok, err)
			}
		})
	}
}

// TestExprComprehensionBounded: comprehensions over huge or nested data stop
// with the work budget or expr's memory bound (what the VM allocates for the
// lists map and filter build), quickly. The single-level ones over a 16 MB
// string are in costHostile.
func TestExprComprehensionBounded(t *testing.T) {
	for _, src := range []string{
		"len([len([1 for y in [0] * 1000]) for x in [0] * 100000]) > 0",
		"len([[1 for y in [0] * 100000] for x in [0] * 100000]) > 0",
		"len([x for x in result.big if x == 1]) > 0",
		"len([x for x in result.big]) > 0",
	} {
		t.Run(src, func(t *testing.T) {
			big := make([]any, 3_000_000)
			for i := range big {
				big[i] = i
			}
			start := time.Now()
			_, err := mustCompile(t, specs.ExprEnsure, src).Eval(specs.EvalEnv{Result: map[string]any{"big": big}})
			var xe *specs.ExprError
			if !errors.As(err, &xe) || !(strings.HasPrefix(xe.Message, "expression exceeded its evaluation budget") || xe.Message == "expression uses too much memory") {
				t.Fatalf("got %v, want the budget or memory error", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}
