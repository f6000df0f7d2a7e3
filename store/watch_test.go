package store

import (
	"context"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store/storetest"
)

// watchedPair opens a store with opts and a second handle on the same
// file, and starts a Watch on the first that ends with the test.
func watchedPair(t *testing.T, opts Options) (other *Store, w <-chan []engine.Event) {
	t.Helper()
	s := newTestStore(t, opts)
	other, err := Open(s.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	t.Cleanup(cancel)
	if w, err = s.Watch(ctx, 0); err != nil {
		t.Fatal(err)
	}
	return other, w
}

// TestWatchSeesOtherHandles: commits through another handle on the same
// file wake a watcher through fsnotify (its fallback poll is a minute).
func TestWatchSeesOtherHandles(t *testing.T) {
	other, w := watchedPair(t, Options{WatchPoll: time.Minute})
	for i := 0; i < 3; i++ {
		start := time.Now()
		if err := other.Update(bg, func(tx engine.Tx) error {
			return tx.Append(engine.Event{FlowID: "f", Type: engine.EventStepDone})
		}); err != nil {
			t.Fatal(err)
		}
		got := storetest.Collect(t, w, 1)
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
	writer, w := watchedPair(t, Options{WatchPoll: 50 * time.Millisecond, LockTimeout: 10 * time.Millisecond})
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
	if got := storetest.Collect(t, w, 1); got[0].Type != engine.EventFlowCreated {
		t.Fatalf("got %+v", got)
	}
	if err := writer.Update(bg, func(tx engine.Tx) error {
		return tx.Append(engine.Event{FlowID: "f", Type: engine.EventFlowFinished})
	}); err != nil {
		t.Fatal(err)
	}
	if got := storetest.Collect(t, w, 1); got[0].Type != engine.EventFlowFinished {
		t.Fatalf("got %+v", got)
	}
}

// TestWatchCoalescesBursts: a burst of commits on another handle reaches
// the watcher whole and in order, in far fewer reads than commits (one per
// WatchGap), while the first commit after a quiet spell is read at once.
func TestWatchCoalescesBursts(t *testing.T) {
	const commits = 60
	other, w := watchedPair(t, Options{WatchPoll: time.Minute, WatchGap: 50 * time.Millisecond})
	start := time.Now()
	if err := other.Update(bg, func(tx engine.Tx) error {
		return tx.Append(engine.Event{FlowID: "f", Type: engine.EventFlowCreated})
	}); err != nil {
		t.Fatal(err)
	}
	storetest.Collect(t, w, 1)
	if d := time.Since(start); d > 40*time.Millisecond {
		t.Logf("first commit after a quiet spell took %v to arrive (loaded machine?)", d)
	}
	done := make(chan error, 1)
	go func() {
		for i := 0; i < commits; i++ {
			if err := other.Update(bg, func(tx engine.Tx) error {
				return tx.Append(engine.Event{FlowID: "f", Type: engine.EventStepDone})
			}); err != nil {
				done <- err
				return
			}
			time.Sleep(2 * time.Millisecond) // commits apart, as an agent's reports are
		}
		done <- nil
	}()
	var got []engine.Event
	batches := 0
	for len(got) < commits {
		select {
		case b := <-w:
			batches++
			got = append(got, b...)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d of %d events", len(got), commits)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, ev := range got {
		if ev.Seq != uint64(i+2) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	burst := time.Since(start)
	t.Logf("%d commits in %v arrived in %d reads", commits, burst, batches)
	if max := int(burst/(50*time.Millisecond)) + 2; batches > max {
		t.Errorf("%d reads for a %v burst: more than one per 50 ms gap (%d)", batches, burst, max)
	}
}

// commitEvent commits one event of flow f through s.
func commitEvent(t *testing.T, s *Store, typ engine.EventType) {
	t.Helper()
	if err := s.Update(bg, func(tx engine.Tx) error {
		return tx.Append(engine.Event{FlowID: "f", Type: typ})
	}); err != nil {
		t.Fatal(err)
	}
}

// TestWatchOwnCommitsReadNothing: the commits of the watcher's own store
// reach it from memory, one by one or a burst at once, and neither they
// nor the file events they fire cost a read of the log.
func TestWatchOwnCommitsReadNothing(t *testing.T) {
	s := newTestStore(t, Options{WatchPoll: time.Minute})
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	w, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	commitEvent(t, s, engine.EventFlowCreated)
	storetest.Collect(t, w, 1)
	time.Sleep(30 * time.Millisecond) // the first commit's file events
	reads := s.own.reads.Load()
	const commits = 20
	for i := 0; i < commits; i++ {
		commitEvent(t, s, engine.EventStepDone)
		if got := storetest.Collect(t, w, 1); got[0].Seq != uint64(i+2) {
			t.Fatalf("commit %d: got seq %d", i, got[0].Seq)
		}
	}
	// A burst the watcher sees once it is over (a check per WatchGap).
	for i := 0; i < commits; i++ {
		commitEvent(t, s, engine.EventStepDone)
	}
	want := uint64(commits + 1)
	for _, ev := range storetest.Collect(t, w, commits) {
		if want++; ev.Seq != want {
			t.Fatalf("burst: got seq %d, want %d", ev.Seq, want)
		}
	}
	time.Sleep(30 * time.Millisecond) // file events of the last commits
	if n := s.own.reads.Load() - reads; n != 0 {
		t.Errorf("%d own commits cost the watcher %d reads of the log, want 0", 2*commits, n)
	}
}

// TestWatchOwnAndOtherCommits: commits of this store and of another handle
// back to back (within one tick of a coarse file clock, same file size)
// all reach the watcher, in order, without waiting for the fallback poll:
// another handle's commit is never taken for this one's.
func TestWatchOwnAndOtherCommits(t *testing.T) {
	s := newTestStore(t, Options{WatchPoll: time.Hour})
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
	var seq uint64
	for i := 0; i < 30; i++ {
		commitEvent(t, s, engine.EventStepDone)
		commitEvent(t, other, engine.EventStepDone)
		if i%2 == 1 {
			commitEvent(t, s, engine.EventStepDone)
		}
		want := 2 + i%2
		deadline := time.After(5 * time.Second)
		for got := 0; got < want; {
			select {
			case b := <-w:
				for _, ev := range b {
					if seq++; ev.Seq != seq {
						t.Fatalf("round %d: got seq %d, want %d", i, ev.Seq, seq)
					}
				}
				got += len(b)
			case <-deadline:
				t.Fatalf("round %d: %d of %d events after 5 s", i, got, want)
			}
		}
	}
}
