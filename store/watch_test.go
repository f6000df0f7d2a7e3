package store

import (
	"context"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// receive waits for n events from w, in strictly increasing order.
func receive(t *testing.T, w <-chan []engine.Event, n int, within time.Duration) []engine.Event {
	t.Helper()
	var got []engine.Event
	timeout := time.After(within)
	for len(got) < n {
		select {
		case batch, ok := <-w:
			if !ok {
				t.Fatalf("Watch closed after %d of %d events", len(got), n)
			}
			got = append(got, batch...)
		case <-timeout:
			t.Fatalf("Watch delivered %d of %d events within %v", len(got), n, within)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("seq %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
	return got
}

// TestWatchSeesOtherHandles: commits through another handle on the same
// file wake a watcher through fsnotify (its fallback poll is a minute).
func TestWatchSeesOtherHandles(t *testing.T) {
	s := newTestStore(t, Options{WatchPoll: time.Minute})
	other, err := Open(s.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	w, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		start := time.Now()
		if err := other.Update(bg, func(tx engine.Tx) error {
			return tx.Append(engine.Event{FlowID: "f", Type: engine.EventStepDone})
		}); err != nil {
			t.Fatal(err)
		}
		got := receive(t, w, 1, 10*time.Second)
		if got[0].Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, got[0].Seq)
		}
		t.Logf("commit on another handle -> delivered: %v", time.Since(start))
	}
}

// TestWatchRetriesWhileLocked: a read that finds the file locked (here for
// longer than the watcher's LockTimeout) is retried at the next wake-up;
// nothing is lost and the watch goes on.
func TestWatchRetriesWhileLocked(t *testing.T) {
	s := newTestStore(t, Options{WatchPoll: 50 * time.Millisecond, LockTimeout: 10 * time.Millisecond})
	writer, err := Open(s.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	w, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the write lock across several polls of the watcher.
	if err := writer.Update(bg, func(tx engine.Tx) error {
		if err := tx.Append(engine.Event{FlowID: "f", Type: engine.EventFlowCreated}); err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := receive(t, w, 1, 10*time.Second)
	if got[0].Type != engine.EventFlowCreated {
		t.Fatalf("got %+v", got)
	}
	if err := writer.Update(bg, func(tx engine.Tx) error {
		return tx.Append(engine.Event{FlowID: "f", Type: engine.EventFlowFinished})
	}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, w, 1, 10*time.Second); got[0].Type != engine.EventFlowFinished {
		t.Fatalf("got %+v", got)
	}
}
