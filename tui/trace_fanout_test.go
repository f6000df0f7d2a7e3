package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

const fanoutSpec = `version: "0.3"
contracts:
  TaskGraph:
    tasks: {type: array}
flows:
  main:
    input: {}
    steps:
      - id: plan
        type: decompose
        intent: "split"
        output_contract: TaskGraph
        run: "echo '{}'"
      - id: fan
        type: parallel_dispatch
        source: "$.steps.plan.output.tasks"
        intent_template: "do {id}"
        max_concurrent: 2
        run: "echo '{}'"
        depends_on: [plan]
`

// fanoutFixture is one flow in the middle of a fan-out of four tasks: a
// complete (on its branch), b failed on its second run with a violation,
// c running in its worktree, d pending.
func fanoutFixture(t *testing.T) Source {
	t.Helper()
	svc, _ := tickingService(time.Second, fixedID("0000fa00-0000-4000-8000-000000000000"))
	ctx := context.Background()
	must := func(r engine.Outcome, err error) engine.Outcome {
		t.Helper()
		if err != nil {
			t.Fatalf("engine error: %v", err)
		}
		if e := engine.AsError(err); e != nil {
			t.Fatalf("refused: %s", e.Message)
		}
		return r
	}
	id := engine.FlowIDOf(must(svc.Plan(ctx, fanoutSpec, "main", map[string]any{}, engine.PlanOptions{SpecFile: "fanout.stratum.yaml"})))
	tasks := []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}, map[string]any{"id": "c"}, map[string]any{"id": "d"}}
	must(svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "plan", Result: map[string]any{"tasks": tasks}}))
	at := func(s int) *float64 { // a task time as the original's float Unix seconds
		f := float64(base.Add(time.Duration(s)*time.Second).UnixNano()) / 1e9
		return &f
	}
	str := func(s string) *string { return &s }
	wt := func(task string) *string { return str("/home/u/.stratum/worktrees/0000fa00/fan/" + task) }
	br := func(task string) string { return "stratum/0000fa00/fan/" + task }
	failed := "task 'b': command exited with status 2: tests/b_test.go:12: want 3, got 4"
	for _, pt := range []state.ParallelTask{
		{TaskID: "a", State: state.TaskRunning, StartedAt: at(3), WorktreePath: wt("a"), Branch: br("a"), Runs: 1},
		{TaskID: "b", State: state.TaskRunning, StartedAt: at(3), WorktreePath: wt("b"), Branch: br("b"), Runs: 1},
		{TaskID: "a", State: state.TaskComplete, StartedAt: at(3), FinishedAt: at(5), Branch: br("a"), Runs: 1},
		{TaskID: "b", State: state.TaskRunning, StartedAt: at(6), WorktreePath: wt("b"), Branch: br("b"), Runs: 2},
		{TaskID: "c", State: state.TaskRunning, StartedAt: at(6), WorktreePath: wt("c"), Branch: br("c"), Runs: 1},
		{TaskID: "b", State: state.TaskFailed, StartedAt: at(6), FinishedAt: at(8), Branch: br("b"), Runs: 2, Error: &failed, Violations: []string{failed}},
		{TaskID: "d", State: state.TaskPending},
	} {
		pt.StepID = "fan"
		must(svc.RecordParallelTask(ctx, id, pt, engine.ReportOptions{}))
	}
	return ServiceSource(svc)
}

// The Trace pane of a flow in the middle of a fan-out: one row per task
// with its latest state, run, duration and branch or worktree; enter on the
// failed task shows its violation.
func TestGoldenFanOutTrace(t *testing.T) {
	src := fanoutFixture(t)
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, view := range []struct {
			name string
			keys []string
		}{{"trace_fanout", nil}, {"trace_fanout_failed", []string{"enter"}}} {
			name := fmt.Sprintf("%s_%dx%d", view.name, size[0], size[1])
			t.Run(name, func(t *testing.T) {
				m := newModel(t, src, size[0], size[1])
				press(m, "2")
				if view.keys != nil {
					selectRow(t, m, "fan task b failed")
					press(m, view.keys...)
				}
				frame := m.View()
				checkFrame(t, frame, size[0], size[1])
				golden(t, name, frame)
			})
		}
	}
}

// selectRow moves the cursor down until the selected row (marked "› ")
// contains text.
func selectRow(t *testing.T, m *Model, text string) {
	t.Helper()
	for i := 0; i < 50; i++ {
		for _, l := range strings.Split(m.View(), "\n") {
			if strings.Contains(l, "› ") && strings.Contains(l, text) {
				return
			}
		}
		press(m, "down")
	}
	t.Fatalf("no row %q:\n%s", text, m.View())
}
