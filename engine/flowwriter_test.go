package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
)

// slowStore is the in-memory store whose writes take a while (as a large
// flow's rewrite does) and are counted, with the events each appends; max
// > 0 makes it an engine.EventLimiter.
type slowStore struct {
	*enginetest.Store
	delay   time.Duration
	max     int
	updates atomic.Int64
	mu      sync.Mutex
	events  []int // events appended by each committed write
}

func (s *slowStore) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	time.Sleep(s.delay)
	n := 0
	err := s.Store.Update(ctx, func(tx engine.Tx) error {
		n = 0
		return fn(eventCountingTx{Tx: tx, n: &n})
	})
	if err == nil {
		s.updates.Add(1)
		s.mu.Lock()
		s.events = append(s.events, n)
		s.mu.Unlock()
	}
	return err
}

type eventCountingTx struct {
	engine.Tx
	n *int
}

func (t eventCountingTx) Append(events ...engine.Event) error {
	*t.n += len(events)
	return t.Tx.Append(events...)
}

type limitedStore struct{ *slowStore }

func (s limitedStore) MaxEventsPerWrite() int { return s.max }

const fanFlowSpec = `version: "0.3"
flows:
  main:
    input: {tasks: {type: array}}
    steps:
      - id: fan
        type: parallel_dispatch
        source: "$.input.tasks"
        intent_template: "do {id}"
`

// fanFlow plans a flow whose current step is the parallel_dispatch "fan".
func fanFlow(t *testing.T, svc *engine.Service) string {
	t.Helper()
	out, err := svc.Plan(context.Background(), fanFlowSpec, "main", map[string]any{"tasks": []any{map[string]any{"id": "a"}}}, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return engine.FlowIDOf(out)
}

func task(id string) state.ParallelTask {
	return state.ParallelTask{TaskID: id, StepID: "fan", State: state.TaskRunning, Runs: 1}
}

// TestFlowWriterConcurrentWritesCommitTogether: 64 goroutines recording a
// task each through one FlowWriter all succeed, every task is recorded,
// and the writes made while one commits are committed together.
func TestFlowWriterConcurrentWritesCommitTogether(t *testing.T) {
	st := &slowStore{Store: enginetest.New(), delay: 5 * time.Millisecond}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	id := fanFlow(t, svc)
	before := st.updates.Load()
	w := svc.FlowWriter(id, engine.ReportOptions{})
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- w.RecordTasks(context.Background(), task(fmt.Sprintf("t%02d", i)))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a write failed: %v", err)
		}
	}
	got, err := svc.Query().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if tasks := got.TasksOf("fan"); len(tasks) != n {
		t.Fatalf("%d tasks recorded, want %d", len(tasks), n)
	}
	writes := st.updates.Load() - before
	if writes >= n/2 {
		t.Fatalf("%d store writes for %d records: not committed together", writes, n)
	}
	t.Logf("%d records in %d writes", n, writes)
}

// TestFlowWriterRefusalIsAnsweredAlone: a refused write in a batch gets its
// refusal; the writes beside it are committed.
func TestFlowWriterRefusalIsAnsweredAlone(t *testing.T) {
	st := &slowStore{Store: enginetest.New(), delay: 20 * time.Millisecond}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	id := fanFlow(t, svc)
	w := svc.FlowWriter(id, engine.ReportOptions{})
	bad := task("x")
	bad.StepID = "elsewhere"
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := task(fmt.Sprintf("t%d", i))
			if i == 3 {
				tk = bad
			}
			errs[i] = w.RecordTasks(context.Background(), tk)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i == 3 {
			if e := engine.AsError(err); e == nil || !strings.Contains(e.Message, "Expected step 'fan', got 'elsewhere'") {
				t.Fatalf("the bad write: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	got, _ := svc.Query().Get(context.Background(), id)
	if tasks := got.TasksOf("fan"); len(tasks) != 5 {
		t.Fatalf("recorded %v", tasks)
	}
}

// TestFlowWriterEventLimit: against a store that accepts 5 events a write,
// no write appends more, and a caller's larger record is split by MaxEvents.
func TestFlowWriterEventLimit(t *testing.T) {
	st := &slowStore{Store: enginetest.New(), delay: 5 * time.Millisecond, max: 5}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: limitedStore{st}}
	id := fanFlow(t, svc)
	w := svc.FlowWriter(id, engine.ReportOptions{})
	if w.MaxEvents() != 5 {
		t.Fatalf("MaxEvents %d", w.MaxEvents())
	}
	var chans []<-chan error
	for i := 0; i < 23; i++ {
		chans = append(chans, w.RecordTasksLater(context.Background(), task(fmt.Sprintf("t%02d", i))))
	}
	for _, ch := range chans {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, n := range st.events {
		if n > 5 {
			t.Fatalf("a write appended %d events (limit 5): %v", n, st.events)
		}
	}
}

// TestFlowWriterCancelledBeforeWritten: a write whose context ended before
// its batch was written is answered with the cancellation, not written.
func TestFlowWriterCancelledBeforeWritten(t *testing.T) {
	st := &slowStore{Store: enginetest.New(), delay: 50 * time.Millisecond}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	id := fanFlow(t, svc)
	w := svc.FlowWriter(id, engine.ReportOptions{})
	first := w.RecordTasksLater(context.Background(), task("a")) // being written
	ctx, cancel := context.WithCancel(context.Background())
	second := w.RecordTasksLater(ctx, task("b")) // queued behind it
	cancel()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err == nil || !strings.Contains(err.Error(), "cancelled before it was written") {
		t.Fatalf("cancelled write: %v", err)
	}
	got, _ := svc.Query().Get(context.Background(), id)
	if _, ok := got.TasksOf("fan")["b"]; ok {
		t.Fatal("the cancelled write was written")
	}
}
