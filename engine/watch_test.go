package engine_test

import (
	"context"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// receive collects n events from w (strictly increasing), then checks that
// nothing more arrives for a moment.
func receive(t *testing.T, w <-chan []engine.Event, n int) []engine.Event {
	t.Helper()
	var got []engine.Event
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case batch, ok := <-w:
			if !ok {
				t.Fatalf("Watch closed after %d of %d events", len(got), n)
			}
			got = append(got, batch...)
		case <-timeout:
			t.Fatalf("Watch delivered %d of %d events", len(got), n)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("seq %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
	select {
	case extra := <-w:
		t.Fatalf("%d events beyond the %d committed", len(extra), n)
	case <-time.After(30 * time.Millisecond):
	}
	return got
}

// watching starts s.Watch from the beginning of the log, for the test.
func watching(t *testing.T, s *engine.Service) (context.Context, <-chan []engine.Event) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, w
}

func sameEvents(t *testing.T, got, want []engine.Event) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("watched %d events %v\n the log holds %d %v", len(got), got, len(want), want)
	}
}

// TestServiceWatch: a watcher gets exactly what the transitions committed —
// with the sequence numbers the store assigned — and nothing for refused
// transitions.
func TestServiceWatch(t *testing.T) {
	s, _, _ := newService()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "zz", Result: map[string]any{}})) // refused: no events
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	stored, err := s.Query().FlowEvents(ctx, "f1")
	if err != nil || len(stored) == 0 {
		t.Fatalf("stored events %v %v", stored, err)
	}
	sameEvents(t, receive(t, w, len(stored)), stored)
	cancel()
	for range w { // closes once ctx ends
	}
}

// quietStore is a store whose own Watch never delivers: what a Service
// watcher receives through it came from the in-process broker or from the
// log.
type quietStore struct{ *enginetest.Store }

func (q quietStore) Watch(ctx context.Context, _ uint64) (<-chan []engine.Event, error) {
	ch := make(chan []engine.Event)
	go func() {
		<-ctx.Done()
		close(ch)
	}()
	return ch, nil
}

// TestServiceWatchInProcess: commits of this Service reach its watchers
// through the broker; a commit of someone else in between (another
// process, here another Service on the same store) is read from the log
// when the next publication shows the gap.
func TestServiceWatchInProcess(t *testing.T) {
	_, mem, clk := newService()
	s := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: quietStore{mem}, Now: clk.Now}
	other := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: mem, Now: clk.Now}
	ctx, w := watching(t, s)
	first := must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	id := first["flow_id"].(string)
	n := len(mustEvents(t, s, ctx))
	receive(t, w, n)
	// Another writer's commit is not published here …
	must(t)(other.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{"ok": false}}))
	select {
	case b := <-w:
		t.Fatalf("another writer's events arrived without a publication: %v", b)
	case <-time.After(30 * time.Millisecond):
	}
	// … until this Service's next commit leaves a gap: then both arrive.
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	all := mustEvents(t, s, ctx)
	got := receive(t, w, len(all)-n)
	sameEvents(t, got, all[n:])
}

// TestServiceWatchSlowConsumer: a watcher that does not read never blocks
// transitions, and loses nothing: what the broker dropped comes from the
// store's Watch.
func TestServiceWatchSlowConsumer(t *testing.T) {
	s, _, _ := newService()
	ctx, w := watching(t, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ { // far more batches than a subscriber buffers
			if _, err := s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("transitions blocked behind a watcher that does not read")
	}
	all := mustEvents(t, s, ctx)
	sameEvents(t, receive(t, w, len(all)), all)
}

func mustEvents(t *testing.T, s *engine.Service, ctx context.Context) []engine.Event {
	t.Helper()
	evs, err := s.Query().Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// sparseStore numbers events ten apart (as the etcd store leaves gaps
// between commits) over the in-memory store, counts the log reads
// (Tx.Events) and, like quietStore, never delivers through its own Watch.
type sparseStore struct {
	quietStore
	reads *atomic.Int64
}

// orderedSparse is a sparseStore whose Follows states its numbering.
type orderedSparse struct{ sparseStore }

func (orderedSparse) Follows(after, seq uint64) bool { return seq == after+10 }

func newSparse(mem *enginetest.Store) sparseStore {
	return sparseStore{quietStore{mem}, new(atomic.Int64)}
}

func (s sparseStore) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	return s.Store.Update(ctx, func(tx engine.Tx) error { return fn(sparseTx{tx, s.reads}) })
}

func (s sparseStore) View(ctx context.Context, fn func(tx engine.Tx) error) error {
	return s.Store.View(ctx, func(tx engine.Tx) error { return fn(sparseTx{tx, s.reads}) })
}

type sparseTx struct {
	engine.Tx
	reads *atomic.Int64
}

func sparse(evs []engine.Event) []engine.Event {
	out := slices.Clone(evs)
	for i := range out {
		out[i].Seq *= 10
	}
	return out
}

func (t sparseTx) Append(events ...engine.Event) error {
	if err := t.Tx.Append(events...); err != nil {
		return err
	}
	for i := range events {
		events[i].Seq *= 10
	}
	return nil
}

func (t sparseTx) Events(after uint64, limit int) ([]engine.Event, error) {
	t.reads.Add(1)
	evs, err := t.Tx.Events(after/10, limit)
	return sparse(evs), err
}

func (t sparseTx) FlowEvents(flowID string) ([]engine.Event, error) {
	evs, err := t.Tx.FlowEvents(flowID)
	return sparse(evs), err
}

func (t sparseTx) LastSeq() (uint64, error) {
	n, err := t.Tx.LastSeq()
	return n * 10, err
}

// TestServiceWatchStoreOrder: whether a publication continues what a
// watcher delivered is the store's rule. With numbers ten apart, a store
// that says so (Store.Follows) has its commits delivered from the broker
// without reading the log, and a commit of another writer in between is
// still read from the log; a store whose rule is consecutive numbers is
// read on every publication, as a gap.
func TestServiceWatchStoreOrder(t *testing.T) {
	_, mem, clk := newService()
	ordered := orderedSparse{newSparse(mem)}
	s := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: ordered, Now: clk.Now}
	other := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: ordered, Now: clk.Now}
	ctx, w := watching(t, s)
	first := must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	id := first["flow_id"].(string)
	second := must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	id2 := second["flow_id"].(string)
	n := len(mustEvents(t, s, ctx))
	ordered.reads.Store(0)
	got := receive(t, w, n)
	if r := ordered.reads.Load(); r != 0 {
		t.Fatalf("%d log reads for publications that follow each other", r)
	}
	sameEvents(t, got, mustEvents(t, s, ctx))
	// Another writer's commit in between: the next publication is a gap.
	// The watcher reads it from the log as soon as the publication
	// arrives, which may be before s.StepDone even returns: the count is
	// taken before the commit, and the test's own reads of the log go
	// through a reader of their own, so only the watcher's read counts.
	// (Taken after the commit, as it was, the count already held the
	// watcher's read whenever the watcher ran first: a flake under load.)
	reader := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: orderedSparse{newSparse(mem)}, Now: clk.Now}
	must(t)(other.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{"ok": false}}))
	before := ordered.reads.Load()
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: id2, StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	all := mustEvents(t, reader, ctx)
	sameEvents(t, receive(t, w, len(all)-n), all[n:])
	if ordered.reads.Load() == before {
		t.Fatal("another writer's commit in between was not read from the log")
	}

	// The same numbers without the store's rule: every publication reads.
	_, mem2, clk2 := newService()
	plain := newSparse(mem2)
	s2 := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: plain, Now: clk2.Now}
	ctx2, w2 := watching(t, s2)
	must(t)(s2.Plan(ctx2, svcSpec, "main", nil, engine.PlanOptions{}))
	receive(t, w2, len(mustEvents(t, s2, ctx2)))
	if plain.reads.Load() == 0 {
		t.Fatal("a store of consecutive numbers: a publication ten numbers on was not read as a gap")
	}
}
