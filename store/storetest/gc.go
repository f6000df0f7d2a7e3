package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// testGC: GC prunes exactly the finished flows unchanged for longer than
// the age, with their events, and keeps everything else. The flows are
// stamped by the store's clock, as writers on one machine stamp them.
func testGC(t *testing.T, s engine.Store, clock *Clock) {
	mk := func(id string, status state.FlowStatus) {
		t.Helper()
		st := NewState(id, status)
		if status == state.StatusAwaitingGate {
			st.Gate = &state.PendingGate{StepID: "g"}
		}
		expect := st.Stamp(clock.Now())
		sum := engine.Summarize(st, nil)
		if err := s.Update(ctx, func(tx engine.Tx) error {
			if err := tx.Put(st, sum, expect); err != nil {
				return err
			}
			return tx.Append(engine.Event{FlowID: id, Type: engine.EventFlowCreated})
		}); err != nil {
			t.Fatal(err)
		}
	}
	finished := []state.FlowStatus{state.StatusComplete, state.StatusKilled, state.StatusFailed, state.StatusBudgetExhausted}
	for _, status := range append(finished, state.StatusRunning, state.StatusAwaitingGate) {
		mk("old-"+string(status), status)
	}
	mk("touched", state.StatusComplete)
	clock.Advance(48 * time.Hour)
	// Changed recently: not prunable although created long ago.
	putAt(t, s, get(t, s, "touched"), clock.Now())
	mk("new-complete", state.StatusComplete)
	mk("new-running", state.StatusRunning)
	clock.Advance(time.Hour)

	n, err := s.GC(ctx, 24*time.Hour)
	if err != nil || n != len(finished) {
		t.Fatalf("GC(24h) = %d, %v; want the %d old finished flows", n, err, len(finished))
	}
	want := []string{"new-complete", "new-running", "old-awaiting_gate", "old-running", "touched"}
	if got := sortedIDs(list(t, s, engine.ListFilter{})); !reflect.DeepEqual(got, want) {
		t.Fatalf("after GC: %v, want %v", got, want)
	}
	log := eventLog{s}
	for _, status := range finished {
		if evs, err := log.FlowEvents(ctx, "old-"+string(status)); err != nil || len(evs) != 0 {
			t.Fatalf("GC left the events of a pruned flow: %v %v", evs, err)
		}
	}
	for _, id := range want {
		if evs, err := log.FlowEvents(ctx, id); err != nil || len(evs) != 1 {
			t.Fatalf("GC touched the events of kept flow %s: %v %v", id, evs, err)
		}
	}
	if g := gates(t, s); len(g) != 1 || g[0].FlowID != "old-awaiting_gate" {
		t.Fatalf("GC touched the pending gate: %v", ids(g))
	}
	if n, err := s.GC(ctx, 24*time.Hour); err != nil || n != 0 {
		t.Fatalf("second GC = %d, %v; want 0", n, err)
	}
	if n, err := s.GC(ctx, 0); err != nil || n != 2 {
		t.Fatalf("GC(0) = %d, %v; want the two recent finished flows", n, err)
	}
	if got := sortedIDs(list(t, s, engine.ListFilter{})); !reflect.DeepEqual(got, []string{"new-running", "old-awaiting_gate", "old-running"}) {
		t.Fatalf("after GC(0): %v", got)
	}
	if _, err := s.GC(ctx, -time.Second); err == nil {
		t.Fatal("GC with a negative age succeeded")
	}
}

// testGCKeepsChildrenOfUnfinished: a finished child flow is kept while any
// of its ancestors has not finished (a parent still running would redo the
// pruned child's work on resume); once the whole line has finished it is
// pruned like any flow. A child whose parent is gone is pruned.
func testGCKeepsChildrenOfUnfinished(t *testing.T, s engine.Store, clock *Clock) {
	mk := func(id, parent string, status state.FlowStatus) {
		t.Helper()
		st := NewState(id, status)
		if parent != "" {
			p, step := parent, "sub"
			st.ParentFlowID, st.ParentStepID = &p, &step
		}
		putAt(t, s, st, clock.Now())
	}
	mk("run-parent", "", state.StatusRunning)
	mk("run-child", "run-parent", state.StatusRunning)
	mk("run-grandchild", "run-child", state.StatusComplete)
	mk("gate-parent", "", state.StatusAwaitingGate)
	mk("gate-child", "gate-parent", state.StatusKilled)
	mk("done-parent", "", state.StatusComplete)
	mk("done-child", "done-parent", state.StatusComplete)
	mk("orphan-child", "gone", state.StatusComplete)
	clock.Advance(48 * time.Hour)

	n, err := s.GC(ctx, 24*time.Hour)
	if err != nil || n != 3 {
		t.Fatalf("GC(24h) = %d, %v; want 3 (done-parent, done-child, orphan-child)", n, err)
	}
	want := []string{"gate-child", "gate-parent", "run-child", "run-grandchild", "run-parent"}
	if got := sortedIDs(list(t, s, engine.ListFilter{})); !reflect.DeepEqual(got, want) {
		t.Fatalf("after GC: %v, want %v", got, want)
	}
	// The line finishes: everything in it becomes prunable.
	for _, id := range []string{"run-child", "run-parent"} {
		st := get(t, s, id)
		st.Status = state.StatusComplete
		putAt(t, s, st, clock.Now())
	}
	clock.Advance(48 * time.Hour)
	if n, err := s.GC(ctx, 24*time.Hour); err != nil || n != 3 {
		t.Fatalf("GC after the line finished = %d, %v; want 3", n, err)
	}
	if got := sortedIDs(list(t, s, engine.ListFilter{})); !reflect.DeepEqual(got, []string{"gate-child", "gate-parent"}) {
		t.Fatalf("after the second GC: %v", got)
	}
}
