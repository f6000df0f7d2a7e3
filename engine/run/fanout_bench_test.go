package run

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
)

// benchGraph is n independent tasks.
func benchGraph(n int) string {
	ts := make([]string, n)
	for i := range ts {
		ts[i] = fmt.Sprintf(`{"id": "t%02d"}`, i)
	}
	return `{"tasks": [` + strings.Join(ts, ", ") + `]}`
}

// BenchmarkFanOut16x200ms: 16 tasks of 200 ms, max_concurrent 4 (ideal
// 0.8 s of wall time per fan-out), without and with worktrees. It reports
// wall_s (one whole flow: decompose, fan-out, merge) and overhead_ms/task
// (wall time beyond the ideal, per task).
func BenchmarkFanOut16x200ms(b *testing.B) {
	for _, iso := range []string{"none", "worktree"} {
		b.Run(iso, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				e := gitEnv(b)
				sp := e.spec(fanSpec(benchGraph(16), `        max_concurrent: 4
        isolation: `+iso+`
        run: |
          sleep 0.2
          echo x > "$STRATUM_TASK_ID.out"
          echo '{}'
`))
				e.commit()
				start := time.Now()
				o, err := e.runner().Start(context.Background(), sp, "main", nil)
				total += time.Since(start)
				if err != nil || o.Status != EndComplete {
					b.Fatalf("%v %v %s", err, o.Status, o.Message)
				}
			}
			wall := total / time.Duration(b.N)
			b.ReportMetric(wall.Seconds(), "wall_s")
			b.ReportMetric(float64((wall-800*time.Millisecond).Milliseconds())/16, "overhead_ms/task")
		})
	}
}

// BenchmarkFanOutEngineOverhead measures the engine's share per task: the
// state transitions a task costs (pending, running, settled) on the
// in-memory store, tasks doing nothing.
func BenchmarkFanOutEngineOverhead(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		en := newEnv(b)
		sp := en.spec(fanSpec(benchGraph(16), "        max_concurrent: 4\n        isolation: none\n        run: \"true\"\n"))
		graph := map[string]any{"tasks": func() []any {
			ts := make([]any, 16)
			for i := range ts {
				ts[i] = map[string]any{"id": fmt.Sprintf("t%02d", i)}
			}
			return ts
		}()}
		noop := enginetest.ExecutorFunc(func(_ context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
			if req.Step.ID == "plan" {
				return engine.StepOutcome{Output: graph}, nil
			}
			return engine.StepOutcome{Output: map[string]any{}}, nil
		})
		r := en.runner(func(o *Options) { o.Command = noop })
		b.StartTimer()
		o, err := r.Start(context.Background(), sp, "main", nil)
		if err != nil {
			b.Fatalf("run: %v\n%s", err, en.log)
		}
		if o.Status != EndComplete {
			b.Fatalf("%s: %s", o.Status, o.Message)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/16, "µs/task")
}
