package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// eventLog reads the event log in View transactions, like engine.Service.
type eventLog struct{ s engine.Store }

func (l eventLog) Events(ctx context.Context, after uint64, limit int) ([]engine.Event, error) {
	var out []engine.Event
	err := l.s.View(ctx, func(tx engine.Tx) error {
		var err error
		out, err = tx.Events(after, limit)
		return err
	})
	return out, err
}

func (l eventLog) FlowEvents(ctx context.Context, flowID string) ([]engine.Event, error) {
	var out []engine.Event
	err := l.s.View(ctx, func(tx engine.Tx) error {
		var err error
		out, err = tx.FlowEvents(flowID)
		return err
	})
	return out, err
}

func (l eventLog) LastSeq(ctx context.Context) (uint64, error) {
	var out uint64
	err := l.s.View(ctx, func(tx engine.Tx) error {
		var err error
		out, err = tx.LastSeq()
		return err
	})
	return out, err
}

func testAppend(t *testing.T, s engine.Store) {
	err := s.Update(ctx, func(tx engine.Tx) error {
		if err := tx.Append(); err != nil {
			return fmt.Errorf("empty Append: %w", err)
		}
		return tx.Append(
			engine.Event{FlowID: "f1", Type: engine.EventFlowCreated},
			engine.Event{FlowID: "f1", Type: engine.EventStepDispatched, StepID: "s1", Data: engine.StepDispatched{StepMode: "infer"}},
		)
	})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func testEventLog(t *testing.T, s engine.Store) {
	log := eventLog{s}
	if seq, err := log.LastSeq(ctx); err != nil || seq != 0 {
		t.Fatalf("LastSeq of an empty store = %d, %v", seq, err)
	}
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	appendEv := func(evs ...engine.Event) {
		t.Helper()
		if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) }); err != nil {
			t.Fatal(err)
		}
	}
	appendEv(engine.Event{FlowID: "a", Type: engine.EventFlowCreated, Time: at},
		engine.Event{FlowID: "b", Type: engine.EventFlowCreated})
	appendEv(engine.Event{FlowID: "a", Type: engine.EventStepDone, StepID: "s1", Data: engine.StepDone{Attempts: 7}})
	appendEv(engine.Event{FlowID: "b", Type: engine.EventFlowFinished})

	all, err := log.Events(ctx, 0, 0)
	if err != nil || len(all) != 4 {
		t.Fatalf("Events(0) = %v, %v; want 4 events", all, err)
	}
	for i, ev := range all {
		if i > 0 && ev.Seq <= all[i-1].Seq {
			t.Fatalf("sequence numbers not increasing: %d after %d", ev.Seq, all[i-1].Seq)
		}
		if ev.Time.IsZero() {
			t.Fatalf("event %d has no time", ev.Seq)
		}
	}
	if !all[0].Time.Equal(at) || all[0].Type != engine.EventFlowCreated || all[0].FlowID != "a" {
		t.Fatalf("first event = %+v", all[0])
	}
	if d, _ := all[2].Data.(engine.StepDone); all[2].StepID != "s1" || d.Attempts != 7 {
		t.Fatalf("third event lost fields: %+v", all[2])
	}
	last, err := log.LastSeq(ctx)
	if err != nil || last != all[3].Seq {
		t.Fatalf("LastSeq = %d, %v; want %d", last, err, all[3].Seq)
	}
	tail, err := log.Events(ctx, all[1].Seq, 0)
	if err != nil || len(tail) != 2 || tail[0].Seq != all[2].Seq {
		t.Fatalf("Events(after %d) = %v, %v", all[1].Seq, tail, err)
	}
	page, err := log.Events(ctx, 0, 3)
	if err != nil || len(page) != 3 {
		t.Fatalf("Events(limit 3) = %v, %v", page, err)
	}
	if none, err := log.Events(ctx, last, 0); err != nil || len(none) != 0 {
		t.Fatalf("Events(after last) = %v, %v", none, err)
	}
	a, err := log.FlowEvents(ctx, "a")
	if err != nil || len(a) != 2 || a[0].Seq != all[0].Seq || a[1].Seq != all[2].Seq {
		t.Fatalf("FlowEvents(a) = %v, %v", a, err)
	}
	// Deleting a flow prunes its events but never reuses sequence numbers.
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("b") }); err != nil {
		t.Fatal(err)
	}
	appendEv(engine.Event{FlowID: "c", Type: engine.EventFlowCreated})
	after, err := log.Events(ctx, 0, 0)
	if err != nil || len(after) != 3 {
		t.Fatalf("Events after Delete(b) = %v, %v", after, err)
	}
	if after[2].Seq <= last {
		t.Fatalf("sequence %d reused after pruning (last was %d)", after[2].Seq, last)
	}
}

// commit appends evs in one transaction and returns them as stamped by
// Append (in place: the caller's slice holds the stored events).
func commit(t *testing.T, s engine.Store, evs ...engine.Event) []engine.Event {
	t.Helper()
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) }); err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Seq == 0 || (i > 0 && ev.Seq != evs[i-1].Seq+1) || ev.Time.IsZero() {
			t.Fatalf("Append did not stamp the caller's events in place: %+v", evs)
		}
	}
	return evs
}

// watch starts a Watch that ends with the test.
func watch(t *testing.T, s engine.Store, after uint64) <-chan []engine.Event {
	t.Helper()
	c, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	w, err := s.Watch(c, after)
	if err != nil {
		t.Fatalf("Watch(%d): %v", after, err)
	}
	return w
}

// watchTimeout bounds every wait for a delivery.
const watchTimeout = 10 * time.Second

// Collect receives batches from a Watch until it holds n events (for at
// most 10 s); they must be in strictly increasing sequence order, and no
// more than n.
func Collect(t testing.TB, w <-chan []engine.Event, n int) []engine.Event {
	t.Helper()
	var got []engine.Event
	timeout := time.After(watchTimeout)
	for len(got) < n {
		select {
		case batch, ok := <-w:
			if !ok {
				t.Fatalf("Watch closed after %d of %d events", len(got), n)
			}
			if len(batch) == 0 {
				t.Fatal("Watch delivered an empty batch")
			}
			got = append(got, batch...)
		case <-timeout:
			t.Fatalf("Watch delivered %d of %d events in %v", len(got), n, watchTimeout)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("Watch delivered seq %d after %d (duplicate or out of order)", got[i].Seq, got[i-1].Seq)
		}
	}
	if len(got) > n {
		t.Fatalf("Watch delivered %d events, want %d: %v", len(got), n, seqs(got))
	}
	return got
}

// quiet asserts that nothing arrives for a while (no duplicates, nothing
// invented).
func quiet(t *testing.T, w <-chan []engine.Event) {
	t.Helper()
	select {
	case batch := <-w:
		t.Fatalf("Watch delivered events nobody committed: %v", seqs(batch))
	case <-time.After(50 * time.Millisecond):
	}
}

func seqs(evs []engine.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// sameAsLog: what Watch delivered after `after` is exactly the log.
func sameAsLog(t *testing.T, s engine.Store, after uint64, got []engine.Event) {
	t.Helper()
	want, err := eventLog{s}.Events(ctx, after, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Watch after %d delivered %v, the log holds %v", after, seqs(got), seqs(want))
	}
}

func testWatchFromAfter(t *testing.T, s engine.Store) {
	first := commit(t, s, engine.Event{FlowID: "a", Type: engine.EventFlowCreated})
	commit(t, s, engine.Event{FlowID: "a", Type: engine.EventStepDone, StepID: "s1", Data: engine.StepDone{Attempts: 7}},
		engine.Event{FlowID: "b", Type: engine.EventFlowCreated})
	after := first[0].Seq
	w := watch(t, s, after)
	// Committed before Watch started, after `after`.
	got := Collect(t, w, 2)
	// Committed after Watch started: one transaction of three, then one.
	commit(t, s, engine.Event{FlowID: "a", Type: engine.EventGateOpened, StepID: "g"},
		engine.Event{FlowID: "b", Type: engine.EventStepDispatched, StepID: "s1"},
		engine.Event{FlowID: "a", Type: engine.EventTrace})
	commit(t, s, engine.Event{FlowID: "b", Type: engine.EventFlowFinished})
	got = append(got, Collect(t, w, 4)...)
	sameAsLog(t, s, after, got)
	quiet(t, w)

	// A second watcher from the end of the log sees only what comes next,
	// and both see it once.
	last, err := eventLog{s}.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w2 := watch(t, s, last)
	quiet(t, w2)
	next := commit(t, s, engine.Event{FlowID: "c", Type: engine.EventFlowCreated})
	for _, w := range []<-chan []engine.Event{w, w2} {
		if got := Collect(t, w, 1); got[0].Seq != next[0].Seq || got[0].FlowID != "c" {
			t.Fatalf("watchers got %+v, want seq %d", got, next[0].Seq)
		}
		quiet(t, w)
	}
	// A transaction that fails appends nothing a watcher could see.
	_ = s.Update(ctx, func(tx engine.Tx) error {
		_ = tx.Append(engine.Event{FlowID: "c", Type: engine.EventTrace})
		return errors.New("rolled back")
	})
	quiet(t, w)
}

// testWatchSlowConsumer: a consumer that does not read while many
// transactions commit still gets every event, in order, once.
func testWatchSlowConsumer(t *testing.T, s engine.Store) {
	w := watch(t, s, 0)
	const txs, each = 150, 3
	for i := 0; i < txs; i++ {
		evs := make([]engine.Event, each)
		for j := range evs {
			evs[j] = engine.Event{FlowID: fmt.Sprintf("f%d", i%7), Type: engine.EventStepDone, Data: engine.StepDone{Attempts: i*each + j}}
		}
		commit(t, s, evs...)
	}
	time.Sleep(20 * time.Millisecond) // let the watcher block on its send
	got := Collect(t, w, txs*each)
	sameAsLog(t, s, 0, got)
	quiet(t, w)
}

// testWatchConcurrentWriters: writers racing each other; the watcher sees
// the log exactly.
func testWatchConcurrentWriters(t *testing.T, s engine.Store) {
	w := watch(t, s, 0)
	const writers, each = 4, 40
	concurrently(t, writers, each, func(i, j int) error {
		evs := []engine.Event{{FlowID: fmt.Sprintf("w%d", i), Type: engine.EventStepDone}}
		if j%2 == 0 {
			evs = append(evs, engine.Event{FlowID: fmt.Sprintf("w%d", i), Type: engine.EventTrace})
		}
		return s.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) })
	})
	got := Collect(t, w, writers*(each+each/2))
	sameAsLog(t, s, 0, got)
}

// testWatchCloses: the channel closes when ctx ends; a Watch that cannot
// start says so.
func testWatchCloses(t *testing.T, s engine.Store) {
	c, cancel := context.WithCancel(ctx)
	w, err := s.Watch(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, engine.Event{FlowID: "a", Type: engine.EventFlowCreated})
	cancel()
	timeout := time.After(watchTimeout)
	for {
		select {
		case _, ok := <-w:
			if !ok {
				if _, err := s.Watch(c, 0); err == nil {
					t.Fatal("Watch with a canceled context succeeded")
				}
				return
			}
		case <-timeout:
			t.Fatal("Watch did not close its channel after ctx ended")
		}
	}
}
