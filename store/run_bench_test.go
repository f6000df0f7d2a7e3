//go:build unix

package store_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/store"
)

// printfFlow is a spec with one flow of n `printf {}` steps, each depending
// on the one before (issue 21's measurement).
func printfFlow(n int) string { return printfFlowBudget(n, "") }

// printfFlowBudget is printfFlow whose flow has the budget given (YAML
// flow mapping, "" none).
func printfFlowBudget(n int, budget string) string {
	var b strings.Builder
	b.WriteString("version: \"0.2\"\nflows:\n  main:\n    input: {}\n")
	if budget != "" {
		fmt.Fprintf(&b, "    budget: %s\n", budget)
	}
	b.WriteString("    steps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "      - id: s%d\n        intent: \"step %d\"\n        run: [printf, '{}']\n", i, i)
		if i > 0 {
			fmt.Fprintf(&b, "        depends_on: [s%d]\n", i-1)
		}
	}
	return b.String()
}

// cpuTime is the CPU time (user and system) this process and its waited-for
// children have used.
func cpuTime(b *testing.B) time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}

// BenchmarkRunOverhead is what `stratum run` costs per step above the
// command itself: each iteration runs a flow of n `printf {}` steps
// in-process on a bbolt store (durable: every transition fsynced), and
// executes printf n times directly, alternating, in the same run. Reported:
// overhead-ns/step = (flow − plain) / n in wall time, and the same in CPU
// time (this process and its children, user and system: what a loaded
// machine's other work does not inflate), and both totals per step. The
// issue's goal: ≤ 1 ms per step, and the 200-step flow's overhead within
// 1.2× the 20-step one's.
//
//	go test ./store -run '^$' -bench RunOverhead -benchtime 5x
func BenchmarkRunOverhead(b *testing.B) {
	for _, n := range []int{20, 200} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			sp, ds := specs.Parse("bench.stratum.yaml", []byte(printfFlow(n)), exprlang.Compile)
			if sp == nil || ds.HasErrors() {
				b.Fatal(ds.Error())
			}
			st, err := store.Open(filepath.Join(b.TempDir(), "stratum.db"), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var flow, plain, flowCPU, plainCPU time.Duration
			for i := 0; i < b.N; i++ {
				c0 := cpuTime(b)
				t0 := time.Now()
				for j := 0; j < n; j++ {
					if out, err := exec.Command("printf", "{}").Output(); err != nil || string(out) != "{}" {
						b.Fatalf("printf: %q %v", out, err)
					}
				}
				t1 := time.Now()
				c1 := cpuTime(b)
				r := run.New(run.Options{Service: &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}})
				o, err := r.Start(context.Background(), sp, "main", nil)
				if err != nil || o.Status != run.EndComplete {
					b.Fatalf("%v %+v", err, o)
				}
				plain += t1.Sub(t0)
				flow += time.Since(t1)
				plainCPU += c1 - c0
				flowCPU += cpuTime(b) - c1
			}
			steps := float64(b.N * n)
			b.ReportMetric(float64((flow-plain).Nanoseconds())/steps, "overhead-ns/step")
			b.ReportMetric(float64((flowCPU-plainCPU).Nanoseconds())/steps, "overhead-cpu-ns/step")
			b.ReportMetric(float64(flow.Nanoseconds())/steps, "flow-ns/step")
			b.ReportMetric(float64(plain.Nanoseconds())/steps, "plain-ns/step")
		})
	}
}

// BenchmarkRunStoreSteps is BenchmarkRunOverhead's flow with an in-process
// executor (each step's output {} at once, no process): what a step costs
// the runner, the engine and the durable bbolt store alone, in CPU (this
// process, user and system, the fsyncs' included) and allocations per
// step, which load on the machine inflates less than wall time.
//
//	go test ./store -run '^$' -bench RunStoreSteps -benchtime 5x
func BenchmarkRunStoreSteps(b *testing.B) { benchRunStoreSteps(b, "") }

// BenchmarkRunStoreStepsBudget is BenchmarkRunStoreSteps with a flow budget
// (the runner works out each step's envelope from the flow's ledger).
//
//	go test ./store -run '^$' -bench RunStoreStepsBudget -benchtime 5x
func BenchmarkRunStoreStepsBudget(b *testing.B) {
	benchRunStoreSteps(b, "{ms: 3600000, usd: 100, tokens: 100000000}")
}

func benchRunStoreSteps(b *testing.B, budget string) {
	for _, n := range []int{20, 200} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			sp, ds := specs.Parse("bench.stratum.yaml", []byte(printfFlowBudget(n, budget)), exprlang.Compile)
			if sp == nil || ds.HasErrors() {
				b.Fatal(ds.Error())
			}
			st, err := store.Open(filepath.Join(b.TempDir(), "stratum.db"), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			ex := enginetest.ExecutorFunc(func(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
				return engine.StepOutcome{Output: map[string]any{}}, nil
			})
			b.ReportAllocs()
			var cpu time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c0 := cpuTime(b)
				r := run.New(run.Options{Service: &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}, Command: ex})
				o, err := r.Start(context.Background(), sp, "main", nil)
				if err != nil || o.Status != run.EndComplete {
					b.Fatalf("%v %+v", err, o)
				}
				cpu += cpuTime(b) - c0
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/step")
		})
	}
}
