package run

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// flowOf builds a spec with one flow of n command steps (argv printf).
func flowOf(n int) string {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\ncontracts:\n  Out:\n    i: {type: integer}\nflows:\n  main:\n    input: {}\n    steps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "      - id: s%d\n        intent: \"step %d\"\n        run: [printf, '{\"i\": %d}']\n        output_contract: Out\n        ensure: [\"result.i == %d\"]\n", i, i, i, i)
		if i > 0 {
			fmt.Fprintf(&b, "        depends_on: [s%d]\n", i-1)
		}
	}
	return b.String()
}

func benchFlow(b *testing.B, n int, ex engine.Executor) {
	sp, ds := specs.Parse("bench.stratum.yaml", []byte(flowOf(n)), exprlang.Compile)
	if sp == nil || ds.HasErrors() {
		b.Fatal(ds.Error())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: enginetest.New()}
		r := New(Options{Service: svc, Command: ex})
		o, err := r.Start(context.Background(), sp, "main", nil)
		if err != nil || o.Status != EndComplete {
			b.Fatalf("%v %+v", err, o)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
}

// BenchmarkFlow200Commands: a 200-step compute flow end to end, every step
// a real process (fork/exec of printf) plus the engine's transitions.
func BenchmarkFlow200Commands(b *testing.B) { benchFlow(b, 200, nil) }

// BenchmarkFlow200Overhead: the same flow with an in-memory executor, i.e.
// the runner's and engine's own overhead per step (dispatch, step_done with
// ensure, ledger record, store writes of the in-memory store).
func BenchmarkFlow200Overhead(b *testing.B) {
	benchFlow(b, 200, enginetest.ExecutorFunc(func(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
		var i int
		fmt.Sscanf(req.Step.ID, "s%d", &i)
		return engine.StepOutcome{Output: map[string]any{"i": float64(i)}}, nil
	}))
}

// BenchmarkFlow20Overhead: the overhead per step of a short flow (the
// per-transition cost grows with the flow's state, which is copied as JSON
// by every store transaction).
func BenchmarkFlow20Overhead(b *testing.B) {
	benchFlow(b, 20, enginetest.ExecutorFunc(func(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
		var i int
		fmt.Sscanf(req.Step.ID, "s%d", &i)
		return engine.StepOutcome{Output: map[string]any{"i": float64(i)}}, nil
	}))
}
