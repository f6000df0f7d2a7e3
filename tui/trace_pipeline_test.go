package tui

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
)

const pipelineSpec = `version: "0.3"
flows:
  main:
    input: {items: {type: array}}
    steps:
      - id: pipe
        type: pipeline
        source: "$.input.items"
        isolation: none
        max_concurrent: 8
        run: "echo '{}'"
        stages:
          - {intent_template: "clean {item}"}
          - {intent_template: "check {prev}"}
          - {intent_template: "fix {prev}"}
`

// pipelineFixture is one flow in the middle of a pipeline of 300 items
// through 3 stages: every item past stage 1; every third item running its
// stage 2, the others done with it and complete (or running stage 3);
// item 4's stage 3 failed.
func pipelineFixture(t *testing.T) Source {
	t.Helper()
	var mu sync.Mutex
	tick := 0
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick++
		return base.Add(time.Duration(tick) * time.Millisecond)
	}
	st := enginetest.New()
	st.Now = clock
	svc := &engine.Service{Store: st, Now: clock, NewID: func() string { return "0000b1be-0000-4000-8000-000000000000" }}
	ctx := context.Background()
	items := make([]any, 300)
	for i := range items {
		items[i] = fmt.Sprintf("src/f%03d.go", i)
	}
	o, err := svc.Plan(ctx, pipelineSpec, "main", map[string]any{"items": items}, engine.PlanOptions{SpecFile: "pipe.stratum.yaml"})
	if err != nil || engine.AsError(err) != nil {
		t.Fatal(err)
	}
	id := engine.FlowIDOf(o)
	at := func(ms int) *float64 {
		f := float64(base.Add(time.Duration(ms)*time.Millisecond).UnixNano()) / 1e9
		return &f
	}
	failed := "task 'pipe::item4::stage2': command exited with status 1: go vet: unused variable x"
	var batch []state.ParallelTask
	for i := range items {
		tid := func(j int) string { return fmt.Sprintf("pipe::item%d::stage%d", i, j) }
		batch = append(batch, state.ParallelTask{TaskID: tid(0), State: state.TaskComplete, StartedAt: at(10 * i), FinishedAt: at(10*i + 400), Runs: 1})
		switch {
		case i%3 == 0:
			batch = append(batch, state.ParallelTask{TaskID: tid(1), State: state.TaskRunning, StartedAt: at(10*i + 400), Runs: 1})
		case i == 4:
			batch = append(batch, state.ParallelTask{TaskID: tid(1), State: state.TaskComplete, StartedAt: at(10*i + 400), FinishedAt: at(10*i + 900), Runs: 1},
				state.ParallelTask{TaskID: tid(2), State: state.TaskFailed, StartedAt: at(10*i + 900), FinishedAt: at(10*i + 2100), Runs: 1, Error: &failed, Violations: []string{failed}})
		default:
			batch = append(batch, state.ParallelTask{TaskID: tid(1), State: state.TaskComplete, StartedAt: at(10*i + 400), FinishedAt: at(10*i + 900), Runs: 1},
				state.ParallelTask{TaskID: tid(2), State: state.TaskComplete, StartedAt: at(10*i + 900), FinishedAt: at(10*i + 1250), Runs: 1})
		}
	}
	for _, pt := range batch {
		pt.StepID = "pipe"
		if _, err := svc.RecordParallelTask(ctx, id, pt, engine.ReportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return ServiceSource(svc)
}

// The Trace pane of a running pipeline is a grid: a row per item with a
// mark per stage, its current stage, state and duration — 300 items read
// at 80×24 as 300 rows (not 900), and enter on a failed item shows why.
func TestGoldenPipelineTrace(t *testing.T) {
	src := pipelineFixture(t)
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, view := range []struct {
			name string
			keys []string
		}{{"trace_pipeline", nil}, {"trace_pipeline_failed", []string{"enter"}}} {
			name := fmt.Sprintf("%s_%dx%d", view.name, size[0], size[1])
			t.Run(name, func(t *testing.T) {
				m := newModel(t, src, size[0], size[1])
				press(m, "2")
				if view.keys != nil {
					selectRow(t, m, "pipe item 4 ")
					press(m, view.keys...)
				}
				frame := m.View()
				checkFrame(t, frame, size[0], size[1])
				golden(t, name, frame)
			})
		}
	}
}
