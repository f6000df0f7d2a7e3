package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/stratum-go/stratum/engine/state"
)

// FlowWriter is a process's one writer to one flow, for the writes that
// many goroutines of the process make to it concurrently (a fan-out's task
// records and its tasks' call records; a library's concurrent branches).
//
// Every write is an optimistic transition (snapshot.go): computed on a copy
// of the flow, committed only if the flow's version did not move meanwhile,
// else computed again, at most maxTransitionAttempts times. Goroutines of
// one process writing the same flow each on their own would move that
// version under each other and fail with ErrConflict although nobody else
// writes the flow. A FlowWriter serialises them instead: one goroutine at a
// time commits, and the writes handed in while it commits are committed
// together in the next transition (group commit) — applied in the order
// they were handed in, their events appended in that order. n concurrent
// writes therefore cost as many whole-flow rewrites as there are batches,
// not n, and the only writers they can still conflict with are other
// processes (and this process's lease heartbeats), against which the
// transition's retries are meant. A batch holds at most as many events as
// the store accepts in one write (EventLimiter).
//
// A write in a batch that is refused (wrong step, flow finished, lease
// lost: an *Error) is answered alone: the batch is then not committed and
// each of its writes is committed in a transition of its own, so every
// caller gets its own answer. A batch is written while any of its callers'
// contexts is live; a write whose caller's context ended before its batch
// was written is answered with the cancellation and not written.
//
// The zero FlowWriter is not usable; get one from Service.FlowWriter. A
// FlowWriter is safe for concurrent use. Writes of other FlowWriters and of
// the Service's own methods to the same flow are not serialised with it.
type FlowWriter struct {
	svc    *Service
	flowID string
	opt    ReportOptions

	max int // events per write (0: unbounded)

	mu    sync.Mutex
	queue []*flowWrite
	busy  bool // a goroutine is committing batches
}

// flowWrite is one write handed to a FlowWriter.
type flowWrite struct {
	ctx    context.Context
	fn     func(st *state.FlowState, env transitionEnv) (transitionResult, error)
	events int // the events it appends (at most)
	done   chan error
}

// EventLimiter is implemented by a Store that accepts a bounded number of
// events in one write: the etcd store (every event is two keys, and an etcd
// member accepts 128 operations per transaction unless told otherwise,
// --max-txn-ops). A FlowWriter commits at most that many events together,
// and callers recording many tasks at once split them (MaxEvents).
type EventLimiter interface {
	MaxEventsPerWrite() int
}

// FlowWriter returns the writer of flowID whose writes report as opt
// (lease-checked like every report). Use one per flow and process for all
// the writes that may run concurrently.
func (s *Service) FlowWriter(flowID string, opt ReportOptions) *FlowWriter {
	w := &FlowWriter{svc: s, flowID: flowID, opt: opt}
	if l, ok := s.Store.(EventLimiter); ok {
		w.max = l.MaxEventsPerWrite()
	}
	return w
}

// MaxEvents is how many events one write of the flow's store may append
// (EventLimiter; 0: no limit). A caller recording more tasks than that at
// once splits them.
func (w *FlowWriter) MaxEvents() int { return w.max }

// RecordTasks records the state of tasks of the flow's current
// parallel_dispatch step (Service.RecordParallelTask, many at once), in one transition with the
// writes queued beside it.
func (w *FlowWriter) RecordTasks(ctx context.Context, tasks ...state.ParallelTask) error {
	if len(tasks) == 0 {
		return nil
	}
	return <-w.RecordTasksLater(ctx, tasks...)
}

// RecordTasksLater queues the records of tasks like RecordTasks without
// waiting for them: writes queued by one goroutine are committed in the
// order it queued them. The answer arrives on the returned channel.
func (w *FlowWriter) RecordTasksLater(ctx context.Context, tasks ...state.ParallelTask) <-chan error {
	tasks = append([]state.ParallelTask(nil), tasks...)
	return w.enqueue(ctx, len(tasks), func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return recordParallelTasks(st, env, tasks)
	})
}

// RecordCall books a call's spend on the flow (Service.RecordCall), in one
// transition with the writes queued beside it.
func (w *FlowWriter) RecordCall(ctx context.Context, c CallRecord) error {
	return <-w.RecordCallLater(ctx, c)
}

// RecordCallLater queues RecordCall without waiting for it (see
// RecordTasksLater).
func (w *FlowWriter) RecordCallLater(ctx context.Context, c CallRecord) <-chan error {
	return w.enqueue(ctx, 1, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return recordCall(st, env, c)
	})
}

// errBatchRefused aborts a batch one of whose writes was refused: its
// writes are then committed one by one.
var errBatchRefused = errors.New("a write of the batch was refused")

// enqueue queues fn (appending at most events events) behind the writes
// already queued and returns the channel its answer arrives on. A
// goroutine commits batches while the queue is not empty.
func (w *FlowWriter) enqueue(ctx context.Context, events int, fn func(st *state.FlowState, env transitionEnv) (transitionResult, error)) <-chan error {
	op := &flowWrite{ctx: ctx, fn: fn, events: events, done: make(chan error, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = append(w.queue, op)
	if !w.busy {
		w.busy = true
		go w.drain()
	}
	return op.done
}

// drain commits batches, oldest writes first, until the queue is empty.
func (w *FlowWriter) drain() {
	w.mu.Lock()
	for len(w.queue) > 0 {
		n, events := 1, w.queue[0].events
		for n < len(w.queue) && (w.max <= 0 || events+w.queue[n].events <= w.max) {
			events += w.queue[n].events
			n++
		}
		batch := w.queue[:n:n]
		w.queue = w.queue[n:]
		w.mu.Unlock()
		w.commit(batch)
		w.mu.Lock()
	}
	w.queue = nil
	w.busy = false
	w.mu.Unlock()
}

// commit writes one batch and answers each of its writes.
func (w *FlowWriter) commit(batch []*flowWrite) {
	live := batch[:0:0]
	for _, op := range batch {
		if op.ctx.Err() != nil {
			op.done <- cancelledError("flow "+w.flowID, op.ctx)
			continue
		}
		live = append(live, op)
	}
	if len(live) == 0 {
		return
	}
	ctx, stop := batchContext(live)
	defer stop()
	if len(live) == 1 {
		live[0].done <- w.one(ctx, live[0])
		return
	}
	_, err := w.svc.transition(ctx, w.flowID, &w.opt, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		var all transitionResult
		unchanged := true
		for _, op := range live {
			r, err := op.fn(st, env)
			if err != nil || r.Err != nil {
				return transitionResult{}, errBatchRefused
			}
			unchanged = unchanged && r.Unchanged
			all = mergeResults(all, r)
		}
		all.Unchanged = unchanged
		return all, nil
	})
	if errors.Is(err, errBatchRefused) {
		for _, op := range live {
			op.done <- w.one(ctx, op)
		}
		return
	}
	for _, op := range live {
		op.done <- err
	}
}

// one commits a single write in its own transition.
func (w *FlowWriter) one(ctx context.Context, op *flowWrite) error {
	_, err := w.svc.transition(ctx, w.flowID, &w.opt, op.fn)
	return err
}

// batchContext is live while any of the batch's callers' contexts is.
func batchContext(batch []*flowWrite) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(batch[0].ctx))
	var mu sync.Mutex
	left := len(batch)
	stops := make([]func() bool, len(batch))
	for i, op := range batch {
		stops[i] = context.AfterFunc(op.ctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if left--; left == 0 {
				cancel(context.Cause(op.ctx))
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel(nil)
	}
}
