package tui

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
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
// through 3 stages, recorded as a run records it (every task pending
// first, then each start and end): items 0–289 past stage 1, every third
// of them running its stage 2, the others complete; item 4's stage 3
// failed; items 290–299 not started.
func pipelineFixture(t *testing.T) Source {
	t.Helper()
	svc, _ := tickingService(time.Millisecond, fixedID("0000b1be-0000-4000-8000-000000000000"))
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
	var pending, batch []state.ParallelTask
	for i := range items {
		tid := func(j int) string { return fmt.Sprintf("pipe::item%d::stage%d", i, j) }
		for j := range 3 {
			pending = append(pending, state.ParallelTask{TaskID: tid(j), State: state.TaskPending})
		}
		if i >= 290 {
			continue
		}
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
	w := svc.FlowWriter(id, engine.ReportOptions{})
	for _, b := range [][]state.ParallelTask{pending, batch} {
		for i := range b {
			b[i].StepID = "pipe"
		}
		if err := w.RecordTasks(ctx, b...); err != nil {
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
		}{{"trace_pipeline", nil}, {"trace_pipeline_failed", []string{"enter"}}, {"trace_pipeline_end", []string{"G"}}} {
			name := fmt.Sprintf("%s_%dx%d", view.name, size[0], size[1])
			t.Run(name, func(t *testing.T) {
				m := newModel(t, src, size[0], size[1])
				press(m, "2")
				if view.name == "trace_pipeline_failed" {
					selectRow(t, m, "pipe item 4   ")
				}
				press(m, view.keys...)
				frame := m.View()
				checkFrame(t, frame, size[0], size[1])
				golden(t, name, frame)
			})
		}
	}
}

// An item's row: a column per stage of the spec even where no task was
// recorded yet, the current stage the furthest started (a pending record
// is not a start) or the first that failed, lanes folded into their stage
// (the worst state shows).
func TestPipelineItemRow(t *testing.T) {
	c := &common{st: DefaultStyles(NewRenderer(os.Stdout, false)), now: func() time.Time { return base.Add(3 * time.Second) }}
	ev := func(task, st string, ms int64) *engine.Event {
		return &engine.Event{Seq: 1, Time: base, StepID: "p", Type: engine.EventParallelTask, Data: engine.ParallelTask{TaskID: task, State: st, DurationMS: ms}}
	}
	for _, c2 := range []struct {
		name   string
		stages int
		events []*engine.Event
		want   string
	}{
		{"spec-columns", 4, []*engine.Event{ev("p::item7::stage0", state.TaskComplete, 20)},
			"⇶ p item 7   ✓··· stage 1/4 complete 20ms"},
		{"pending-not-started", 3, []*engine.Event{ev("p::item7::stage0", state.TaskPending, 0), ev("p::item7::stage1", state.TaskPending, 0), ev("p::item7::stage2", state.TaskPending, 0)},
			"⇶ p item 7   ··· stage 1/3 pending"},
		{"running-counts-to-now", 3, []*engine.Event{ev("p::item7::stage0", state.TaskComplete, 20), ev("p::item7::stage1", state.TaskRunning, 500), ev("p::item7::stage2", state.TaskPending, 0)},
			"⇶ p item 7   ✓▶· stage 2/3 running 3.5s"},
		{"failed-first", 3, []*engine.Event{ev("p::item7::stage0", state.TaskFailed, 20), ev("p::item7::stage1", state.TaskCancelled, 0), ev("p::item7::stage2", state.TaskCancelled, 0)},
			"⇶ p item 7   ✗✗✗ stage 1/3 failed 20ms"},
		{"lanes-fold", 3, []*engine.Event{ev("p::item7::stage0", state.TaskComplete, 20), ev("p::item7::stage1::lane0", state.TaskFailed, 30), ev("p::item7::stage1::lane1", state.TaskComplete, 40)},
			"⇶ p item 7   ✓✗· stage 2/3 failed 30ms"},
		{"no-spec", 0, []*engine.Event{ev("p::item7::stage0", state.TaskComplete, 20), ev("p::item7::stage1", state.TaskSkipped, 0)},
			"⇶ p item 7   ✓↷ stage 2/2 skipped"},
	} {
		t.Run(c2.name, func(t *testing.T) {
			r := &itemRow{stepID: "p", item: 7}
			for _, e := range c2.events {
				_, stage, ok := pipelineTask("p", e.Data.(engine.ParallelTask).TaskID)
				if !ok {
					t.Fatalf("%s: not a pipeline task", e.Data.(engine.ParallelTask).TaskID)
				}
				r.add(stage, e)
			}
			got := strings.TrimPrefix(r.line(c, c2.stages, 3).text, "05:00:00 ")
			if got != c2.want {
				t.Fatalf("row %q, want %q", got, c2.want)
			}
		})
	}
}

// A runner call made for a pipeline task gets no trace row of its own:
// its item's row tells it, and enter shows the call's output while the
// stage has not failed; a call of another step keeps its row.
func TestPipelineCallsFold(t *testing.T) {
	c := &common{st: DefaultStyles(NewRenderer(os.Stdout, false)), now: func() time.Time { return base }, detail: &state.FlowState{FlowID: "f"}}
	c.detailStages = map[string]int{"p": 2}
	task := func(seq uint64, id, st string) engine.Event {
		return engine.Event{Seq: seq, Time: base, Type: engine.EventParallelTask, StepID: "p", Data: engine.ParallelTask{TaskID: id, State: st}}
	}
	call := func(seq uint64, step, id, out string) engine.Event {
		return engine.Event{Seq: seq, Time: base, Type: engine.EventTrace, StepID: step,
			Data: engine.Trace{TaskID: id, DurationMS: 5, Trace: &state.TraceRecord{Output: out}}}
	}
	c.detailEvents = []engine.Event{
		task(1, "p::item0::stage0", state.TaskPending), task(2, "p::item0::stage1", state.TaskPending),
		task(3, "p::item0::stage0", state.TaskRunning), call(4, "p", "p::item0::stage0", "cleaned a.go"),
		task(5, "p::item0::stage0", state.TaskComplete), call(6, "other", "", "unrelated"),
		{Seq: 7, Time: base.Add(2 * time.Second), Type: engine.EventStepDone, StepID: "p"},
	}
	// The step's time is its wall clock (from its dispatch), not its
	// tasks' calls summed.
	c.detailEvents = append([]engine.Event{{Seq: 0, Time: base, Type: engine.EventStepDispatched, StepID: "p"}}, c.detailEvents...)
	p := &tracePane{expanded: map[uint64]bool{}}
	lines := p.lines(c)
	if len(lines) != 4 || !strings.HasSuffix(lines[3].text, "p done (attempt 1) 2s") {
		for _, l := range lines {
			t.Log(l.text)
		}
		t.Fatalf("rows: want the dispatch, the item's, the other step's call, the step done in 2s")
	}
	lines = lines[1:3]
	if len(lines) != 2 {
		for _, l := range lines {
			t.Log(l.text)
		}
		t.Fatalf("%d rows, want the item's and the other step's call", len(lines))
	}
	if !strings.Contains(lines[0].text, "item 0 ✓· stage 1/2 complete") || !strings.Contains(lines[0].detail, "cleaned a.go") || lines[0].seq != 1 {
		t.Errorf("item row %q (seq %d), detail %q", lines[0].text, lines[0].seq, lines[0].detail)
	}
	if !strings.Contains(lines[1].text, "other call") {
		t.Errorf("the other step's call: %q", lines[1].text)
	}
}

// A pipeline step dispatched again (its retry) runs its tasks anew: their
// records make new rows after the new dispatch, so the first attempt's
// failure stays where it was and the retry's progress shows.
func TestPipelineRetryRows(t *testing.T) {
	c := &common{st: DefaultStyles(NewRenderer(os.Stdout, false)), now: func() time.Time { return base }, detail: &state.FlowState{FlowID: "f"}}
	c.detailStages = map[string]int{"p": 1}
	task := func(seq uint64, st string) engine.Event {
		return engine.Event{Seq: seq, Time: base, Type: engine.EventParallelTask, StepID: "p", Data: engine.ParallelTask{TaskID: "p::item0::stage0", State: st}}
	}
	dispatched := func(seq uint64) engine.Event {
		return engine.Event{Seq: seq, Time: base, Type: engine.EventStepDispatched, StepID: "p", Data: engine.StepDispatched{StepMode: "parallel_dispatch"}}
	}
	c.detailEvents = []engine.Event{
		dispatched(1), task(2, state.TaskPending), task(3, state.TaskFailed),
		dispatched(4), task(5, state.TaskPending), task(6, state.TaskRunning), task(7, state.TaskComplete),
	}
	p := &tracePane{expanded: map[uint64]bool{}}
	var got []string
	for _, l := range p.lines(c) {
		got = append(got, strings.TrimPrefix(l.text, "05:00:00 "))
	}
	want := []string{"→ p dispatched (pipeline, 1 stage)", "⇶ p item 0 ✗ stage 1/1 failed", "→ p dispatched (pipeline, 1 stage)", "⇶ p item 0 ✓ stage 1/1 complete"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The filter finds an item by its number as written ("item 0 ").
	p.filter = "item 0 "
	if n := len(p.lines(c)); n != 2 {
		t.Fatalf("filter %q: %d rows, want the item's two", p.filter, n)
	}
}
