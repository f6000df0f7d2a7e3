package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// gatesDue reads GatesDue(now): the ids of the gates due, sorted, and next.
func gatesDue(t *testing.T, s engine.Store, now time.Time) ([]string, *time.Time) {
	t.Helper()
	var (
		due  []state.FlowSummary
		next *time.Time
	)
	if err := s.View(ctx, func(tx engine.Tx) error {
		var err error
		due, next, err = tx.GatesDue(now)
		return err
	}); err != nil {
		t.Fatalf("GatesDue: %v", err)
	}
	for _, d := range due {
		if d.Gate == nil || d.Gate.Deadline == nil || d.Gate.Deadline.After(now) {
			t.Fatalf("GatesDue(%v) returned %s with gate %+v", now, d.FlowID, d.Gate)
		}
	}
	return sortedIDs(due), next
}

func testGatesDue(t *testing.T, s engine.Store) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := base.Add(d); return &v }
	gate := func(deadline *time.Time) *state.PendingGate {
		return &state.PendingGate{StepID: "review", DispatchedAt: base.Add(-time.Hour), Deadline: deadline, OnTimeout: "approve"}
	}
	mk := func(id string, status state.FlowStatus, g *state.PendingGate) {
		st := NewState(id, status)
		st.Gate = g
		put(t, s, st)
	}
	check := func(when string, now time.Time, wantDue []string, wantNext *time.Time) {
		t.Helper()
		due, next := gatesDue(t, s, now)
		if len(due) == 0 {
			due = nil
		}
		if !reflect.DeepEqual(due, wantDue) {
			t.Errorf("%s: GatesDue(%v) due = %v, want %v", when, now, due, wantDue)
		}
		switch {
		case wantNext == nil && next != nil:
			t.Errorf("%s: GatesDue(%v) next = %v, want none", when, now, *next)
		case wantNext != nil && (next == nil || !next.Equal(*wantNext)):
			t.Errorf("%s: GatesDue(%v) next = %v, want %v", when, now, next, *wantNext)
		}
	}

	check("empty store", base, nil, nil)
	mk("expired", state.StatusAwaitingGate, gate(at(-time.Minute)))
	mk("exactly", state.StatusAwaitingGate, gate(at(0)))
	mk("later", state.StatusAwaitingGate, gate(at(2*time.Hour)))
	mk("soon", state.StatusAwaitingGate, gate(at(time.Hour)))
	mk("nodeadline", state.StatusAwaitingGate, gate(nil))
	mk("running", state.StatusRunning, gate(at(-time.Hour))) // a stale gate on a flow not at one
	mk("done", state.StatusComplete, nil)

	check("at base", base, []string{"exactly", "expired"}, at(time.Hour))
	check("before all", base.Add(-time.Hour), nil, at(-time.Minute))
	check("after all", base.Add(3*time.Hour), []string{"exactly", "expired", "later", "soon"}, nil)

	// A decided gate is gone.
	st := get(t, s, "expired")
	st.Status, st.Gate = state.StatusRunning, nil
	put(t, s, st)
	check("expired decided", base, []string{"exactly"}, at(time.Hour))

	// A deleted flow is gone.
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("soon") }); err != nil {
		t.Fatal(err)
	}
	check("soon deleted", base, []string{"exactly"}, at(2*time.Hour))

	// A deadline moved (a gate reopened in a new round) moves with it;
	// a deadline dropped takes the gate out.
	st = get(t, s, "later")
	st.Gate = gate(at(-2 * time.Hour))
	put(t, s, st)
	st = get(t, s, "exactly")
	st.Gate = gate(nil)
	put(t, s, st)
	check("later moved, exactly dropped", base, []string{"later"}, nil)

	// A gate opened with a deadline is in.
	st = get(t, s, "nodeadline")
	st.Gate = gate(at(30 * time.Minute))
	put(t, s, st)
	check("nodeadline given one", base, []string{"later"}, at(30*time.Minute))
	check("nodeadline due", base.Add(30*time.Minute), []string{"later", "nodeadline"}, nil)
}
