package run

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine/internal/fanout"
	"github.com/stratum-go/stratum/engine/state"
)

// The fan-out's scheduler (fanout.go runs it): a ready queue over the
// tasks whose dependencies completed, and the book of every task's state,
// its require cascade and its cancellations.

// taskDone is what a task's goroutine hands back.
type taskDone struct {
	id     string
	task   *state.ParallelTask // the settled task; nil when it did not settle (interrupted)
	budget string              // the budget ran out during the task
}

// Causes of a task's cancellation.
var (
	errTaskCancelled = errors.New("require can no longer be met")
	errBudgetStop    = errors.New("the budget ran out")
	errStoreStop     = errors.New("the fan-out's state could not be recorded")
)

// readyQueue holds the indexes (source order) of tasks whose dependencies
// completed, smallest first: the next task to start is the first ready
// one in source order.
type readyQueue []int

func (q readyQueue) Len() int           { return len(q) }
func (q readyQueue) Less(i, j int) bool { return q[i] < q[j] }
func (q readyQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *readyQueue) Push(x any)        { *q = append(*q, x.(int)) }
func (q *readyQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// schedule runs the tasks: at most max_concurrent at a time, each once its
// dependencies completed; a task whose dependency did not complete is
// cancelled; once require cannot be met any more the open tasks are
// cancelled (the original's cascade cancel). The budget running out, a
// store failure, or ctx ending, cancels the running tasks (their process
// groups are killed). Its bookkeeping is incremental (a ready queue,
// per-task counts of unfinished dependencies, running totals), so each
// task costs the same however many there are.
func (f *FanOut) schedule(ctx context.Context, res *FanOutResult) error {
	maxc := f.Step.MaxConcurrent
	if maxc <= 0 {
		maxc = 3
	}
	require := f.Step.Require
	runCtx, cancelAll := context.WithCancelCause(ctx)
	defer cancelAll(nil)
	cancels := map[string]context.CancelCauseFunc{}
	done := make(chan taskDone)
	running := 0
	stopping := false
	var storeErr error
	stop := func(cause error) {
		stopping = true
		cancelAll(cause)
	}
	failStore := func(err error) {
		if storeErr == nil {
			storeErr = err
		}
		stop(errStoreStop)
	}

	b := newTaskBook(f)
	for {
		if err := f.laterError(); err != nil && !stopping {
			failStore(err)
		}
		if !stopping && ctx.Err() == nil && b.open > 0 && b.requireUnsatisfiable(require) {
			stopping = true
			f.recordLater(context.WithoutCancel(ctx), b.cancelPending(require)...)
			for _, c := range cancels {
				c(errTaskCancelled)
			}
		}
		for !stopping && ctx.Err() == nil && running < maxc && b.ready.Len() > 0 {
			next := f.Tasks[heap.Pop(b.ready).(int)].ID
			if f.state[next].State != state.TaskPending {
				continue
			}
			start, settled := f.beginStage(ctx, b, next)
			if settled {
				continue
			}
			view, reason, err := f.budget(ctx)
			if err != nil {
				if ctx.Err() == nil {
					failStore(err)
				}
				break
			}
			if reason != "" {
				res.Budget = reason
				stop(errBudgetStop)
				break
			}
			pt := f.markRunning(b, next)
			tctx, cancel := context.WithCancelCause(runCtx)
			cancels[next] = cancel
			running++
			go func(t fanout.Task, snapshot state.ParallelTask) {
				done <- f.runTask(ctx, tctx, t, snapshot, view, start)
			}(f.Tasks[b.index[next]], pt)
		}
		if running == 0 {
			break
		}
		d := <-done
		running--
		if cancel := cancels[d.id]; cancel != nil {
			cancel(nil)
			delete(cancels, d.id)
		}
		if d.task != nil {
			f.settleTask(ctx, b, d, stopping)
		}
		if d.budget != "" && res.Budget == "" {
			res.Budget = d.budget
			stop(errBudgetStop)
		}
	}
	// Every record is written before the fan-out merges and reports (or
	// stops).
	if err := f.flushLater(); err != nil && storeErr == nil {
		storeErr = err
	}
	if ctx.Err() != nil {
		res.Interrupted = true
		return nil
	}
	return storeErr
}

// beginStage starts a pipeline stage's task id (nothing for a task that
// is not a stage): settled when the stage settles without running (its
// item exited earlier, or was skipped), its record and cascade queued.
func (f *FanOut) beginStage(ctx context.Context, b *taskBook, id string) (start stageStart, settled bool) {
	if b.pipe == nil {
		return start, false
	}
	if start = f.startStage(b, f.Tasks[b.index[id]]); start.settle == nil {
		return start, false
	}
	b.set(id, *start.settle)
	batch := []state.ParallelTask{*start.settle}
	if start.settle.State != state.TaskSkipped {
		batch = append(batch, b.cascade(id)...)
	}
	f.recordLater(context.WithoutCancel(ctx), batch...)
	return start, true
}

// markRunning marks task id running (one more run, started now, the last
// run's end cleared) and returns its state.
func (f *FanOut) markRunning(b *taskBook, id string) state.ParallelTask {
	pt := *f.state[id]
	pt.State = state.TaskRunning
	pt.Runs++
	pt.StartedAt = fanout.UnixSeconds(time.Now())
	pt.FinishedAt, pt.Error, pt.Violations, pt.Result = nil, nil, nil, nil
	b.set(id, pt)
	return pt
}

// settleTask books a task's end: a completed stage's exit condition first
// (before its dependents start), then its state, and for a task that did
// not complete the cascade to its dependents unless the fan-out is
// stopping.
func (f *FanOut) settleTask(ctx context.Context, b *taskBook, d taskDone, stopping bool) {
	if b.pipe != nil && d.task.State == state.TaskComplete {
		f.exitWhen(b, f.Tasks[b.index[d.id]], d.task.Result)
	}
	b.set(d.id, *d.task)
	if d.task.State != state.TaskComplete && !stopping && ctx.Err() == nil {
		f.recordLater(context.WithoutCancel(ctx), b.cascade(d.id)...)
	}
}

// requireUnsatisfiable reports whether the step's require can no longer
// be met whatever the open tasks do (a pipeline's counts items).
func (b *taskBook) requireUnsatisfiable(require string) bool {
	if b.pipe != nil {
		p := b.pipe
		return p.open > 0 && fanout.RequireUnsatisfiable(require, p.complete, p.failed, p.open)
	}
	return fanout.RequireUnsatisfiable(require, b.complete, b.failed, b.open)
}

// taskBook is schedule's bookkeeping, kept incrementally: each task's
// dependents and count of dependencies not complete yet, the totals of
// complete, failed and open tasks, and the ready queue.
type taskBook struct {
	f          *FanOut
	index      map[string]int // task id → source order
	dependents [][]int
	waiting    []int // dependencies not complete yet
	complete   int
	failed     int
	open       int
	ready      *readyQueue
	// pipe is the pipeline's bookkeeping (nil for a parallel_dispatch).
	pipe *pipeBook
}

func newTaskBook(f *FanOut) *taskBook {
	n := len(f.Tasks)
	b := &taskBook{f: f, index: make(map[string]int, n), dependents: make([][]int, n), waiting: make([]int, n), ready: &readyQueue{}}
	for i, t := range f.Tasks {
		b.index[t.ID] = i
	}
	if f.pipeline() {
		b.pipe = newPipeBook(f.Tasks)
	}
	for i, t := range f.Tasks {
		b.tally(i, f.state[t.ID].State, 1)
		if b.pipe != nil && f.state[t.ID].State == state.TaskComplete {
			f.exitWhen(b, t, f.state[t.ID].Result) // a resumed run knows which chains ended
		}
		for _, d := range t.DependsOn {
			j := b.index[d]
			b.dependents[j] = append(b.dependents[j], i)
			if !b.proceeds(f.state[d].State, i) {
				b.waiting[i]++
			}
		}
	}
	for i, t := range f.Tasks {
		if b.waiting[i] == 0 && f.state[t.ID].State == state.TaskPending {
			*b.ready = append(*b.ready, i)
		}
	}
	heap.Init(b.ready)
	return b
}

// tally counts d tasks (task i) in state into the totals.
func (b *taskBook) tally(i int, taskState string, d int) {
	if b.pipe != nil {
		b.pipe.tally(b.f.Tasks[i], taskState, d)
	}
	switch {
	case taskState == state.TaskComplete:
		b.complete += d
	case state.TaskTerminal(taskState):
		b.failed += d
	default:
		b.open += d
	}
}

// set changes a task's state, keeping the totals and the ready queue.
func (b *taskBook) set(id string, pt state.ParallelTask) {
	f := b.f
	old := f.state[id].State
	i := b.index[id]
	b.tally(i, old, -1)
	b.tally(i, pt.State, 1)
	*f.state[id] = pt
	for _, k := range b.dependents[i] {
		if b.proceeds(pt.State, k) && !b.proceeds(old, k) {
			if b.waiting[k]--; b.waiting[k] == 0 && f.state[f.Tasks[k].ID].State == state.TaskPending {
				heap.Push(b.ready, k)
			}
		}
	}
}

// settled ends a task that did not run in state with msg.
func (b *taskBook) settled(id, state, msg string) state.ParallelTask {
	pt := *b.f.state[id]
	pt.State = state
	pt.Error = &msg
	pt.Violations = []string{msg}
	if pt.FinishedAt == nil {
		pt.FinishedAt = fanout.UnixSeconds(time.Now())
	}
	b.set(id, pt)
	return pt
}

// cascade cancels the pending tasks that depend, directly or not, on the
// task id that ended without completing, and returns them (to be recorded
// in one write).
func (b *taskBook) cascade(id string) []state.ParallelTask {
	f := b.f
	var batch []state.ParallelTask
	queue := []string{id}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, k := range b.dependents[b.index[d]] {
			t := f.Tasks[k]
			if f.state[t.ID].State != state.TaskPending || b.proceeds(f.state[d].State, k) {
				continue // a join waits for each of its lanes, whatever its end
			}
			batch = append(batch, b.settled(t.ID, state.TaskCancelled, fmt.Sprintf("task '%s' did not run: its dependency '%s' %s", t.ID, d, f.state[d].State)))
			queue = append(queue, t.ID)
		}
	}
	return batch
}

// cancelPending cancels every pending task once require can no longer be
// met, and returns them (to be recorded in one write).
func (b *taskBook) cancelPending(require string) []state.ParallelTask {
	var batch []state.ParallelTask
	for _, t := range b.f.Tasks {
		if b.f.state[t.ID].State == state.TaskPending {
			batch = append(batch, b.settled(t.ID, state.TaskCancelled, fmt.Sprintf("task '%s' cancelled: require '%s' can no longer be met", t.ID, orDefault(require, "all"))))
		}
	}
	return batch
}
