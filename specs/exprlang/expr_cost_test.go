package exprlang

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/specs"
)

// costResult is a result of a few MB as an agent can send over MCP: two
// equal strings that are distinct in memory (so comparing them reads every
// byte), one that differs in its last byte, a shorter one, a
// comma-separated list, non-ASCII text and a text of lines.
func costResult(mb int) map[string]any {
	n := mb << 20
	a := strings.Repeat("a", n-1) + "x"
	return map[string]any{
		"a":     a,
		"b":     strings.Clone(a),
		"d":     a[:n-1] + "y",
		"m":     a[:900<<10],
		"csv":   strings.Repeat("a,", n/2),
		"uni":   strings.Repeat("é", n/2),
		"text":  strings.Repeat("The quick brown fox jumps over the lazy dog.\n", n/45),
		"items": []any{"x", "y"},
	}
}

func repeatAnd(term string, n int) string {
	return strings.TrimSuffix(strings.Repeat(term+" and ", n), " and ")
}

// costHostile are expressions whose cost grows with the size of the data
// they touch, far beyond any budget: each must stop with the budget error.
var costHostile = []string{
	"[result.a] * 1000000 != [result.b] * 1000000",
	"result.a in [result.d] * 1000000",
	"[result.a] * 1000000 == [result.b] * 1000000",
	"min([result.a] * 1000000 + [result.b]) != ''",
	"result.a.startswith([result.d] * 1000000)",
	"result.csv.split(',').count('a') > 0",
	"len(result.csv.split(',')) > 0",
	"any(result.uni) and any(result.uni) and any(result.uni)",
	"len([1 for c in result.uni]) > 0",
	"any(c == '!' for c in result.csv)",
	repeatAnd("str([result.m]) != ''", 100),
	repeatAnd("result.uni[-1] != ''", 100),
	repeatAnd("result.uni[1:] != ''", 100),
	repeatAnd("len(result.uni) > 0", 100),
	repeatAnd("result.uni.upper() != ''", 100),
	repeatAnd("result.a.replace('a', 'b') != ''", 100),
	repeatAnd("result.a.count('aa') >= 0", 100),
	repeatAnd("'ab' not in result.a", 100),
	repeatAnd("result.a.find('b') != 0", 100),
	"result.uni.strip('ü' * 500000 + 'é') == '' and result.uni.strip('ü' * 500000 + 'é') == ''" +
		" and result.uni.strip('ü' * 500000 + 'é') == '' and result.uni.strip('ü' * 500000 + 'é') == ''",
}

// TestExprCostBounded: hostile expressions on 16 MB strings (what the MCP
// frame limit lets an agent send) stop with the budget error, quickly and
// without allocating much more than the budget.
func TestExprCostBounded(t *testing.T) {
	result := costResult(16)
	for _, src := range costHostile {
		name := src
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			e := mustCompile(t, specs.ExprEnsure, src)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				_, err := e.Eval(specs.EvalEnv{Result: result})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("still running after 20 s")
			}
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			var xe *specs.ExprError
			if !errors.As(err, &xe) || !strings.HasPrefix(xe.Message, "expression exceeded its evaluation budget") {
				t.Fatalf("got %v, want the budget error", err)
			}
			if elapsed > 5*time.Second {
				t.Errorf("took %v", elapsed)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 400<<20 {
				t.Errorf("allocated %d MB", alloc>>20)
			}
		})
	}
}

// TestExprCostRealistic: ensures that read a result of a few MB several
// times still run within the budget.
func TestExprCostRealistic(t *testing.T) {
	result := costResult(4)
	for _, src := range []string{
		"len(result.text) > 0 and 'TODO' not in result.text and result.text.count('\\n') < 1000000",
		"result.text.lower() != '' and result.text.strip() != '' and result.text.startswith('The')",
		"len(result.text.split('\\n')) > 1000 and len(result.text.split(' ')) > 1000",
		"len(result.text.split()) > 1000",
		"result.a == result.b and result.a != result.text and result.a.find('x') > 0",
		"result.text.replace('fox', 'cat') != result.text and result.uni.upper() != result.uni",
		"result.text[-10:] != '' and result.uni[5] == 'é' and str(result.items) == \"['x', 'y']\"",
		"int(str(len(result.a))) > 0 and result.a.endswith('x') and result.uni.rstrip('é') == ''",
	} {
		t.Run(src, func(t *testing.T) {
			ok, err := mustCompile(t, specs.ExprEnsure, src).EvalBool(specs.EvalEnv{Result: result})
			if err != nil || !ok {
				t.Fatalf("got %v, %v", ok, err)
			}
		})
	}
}

// TestExprCancel: an evaluation stops soon after its context is done, and
// says so.
func TestExprCancel(t *testing.T) {
	e := mustCompile(t, specs.ExprEnsure, repeatAnd("result.uni.upper() != ''", 15))
	env := specs.EvalEnv{Result: costResult(4)}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.EvalContext(ctx, env); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := e.EvalContext(ctx, env)
	elapsed := time.Since(start)
	var xe *specs.ExprError
	if !errors.As(err, &xe) || !errors.Is(err, context.Canceled) || !strings.Contains(xe.Message, "cancelled") {
		t.Fatalf("got %v after %v, want a cancellation", err, elapsed)
	}
	if elapsed > 2*time.Second {
		t.Errorf("stopped after %v", elapsed)
	}
}

// BenchmarkExprCost is the worst case per kind of operation on 16 MB
// strings: each stops at the budget (compare ns/op and B/op with
// BenchmarkExprEval).
func BenchmarkExprCost(b *testing.B) {
	result := costResult(16)
	for _, src := range costHostile {
		name := src
		if len(name) > 40 {
			name = name[:40]
		}
		e, err := Compile(specs.ExprEnsure, src)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = e.Eval(specs.EvalEnv{Result: result})
			}
		})
	}
}
