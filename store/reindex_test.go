package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	bolt "go.etcd.io/bbolt"
)

// TestReindexTouchesOnlyChangedIndexes: a completion from a gate rewrites
// the by-status and gates indexes (their keys change) but leaves the
// by-created index's pages alone (its key does not), and a transition that
// changes no key leaves every index as it was. A rewritten bucket has a new
// root page (bbolt copies on write), so the roots tell.
func TestReindexTouchesOnlyChangedIndexes(t *testing.T) {
	s := newTestStore(t, Options{})
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(st *state.FlowState) {
		t.Helper()
		expect := st.Stamp(at)
		if err := s.Update(bg, func(tx engine.Tx) error { return tx.Put(st, engine.Summarize(st, nil), expect) }); err != nil {
			t.Fatal(err)
		}
	}
	// Enough flows that each index has pages of its own (not inline).
	var flows []*state.FlowState
	for i := range 300 {
		st := &state.FlowState{FlowID: fmt.Sprintf("flow-%04d-%s", i, "padding-to-fill-pages"), Status: state.StatusAwaitingGate,
			Gate: &state.PendingGate{StepID: "gate", DispatchedAt: at}}
		put(st)
		flows = append(flows, st)
	}
	roots := func() map[string]uint64 {
		t.Helper()
		r := map[string]uint64{}
		if err := s.run(bg, modeRead, func(btx *bolt.Tx) error {
			for _, b := range [][]byte{bucketByCreated, bucketByStatus, bucketGates} {
				r[string(b)] = uint64(btx.Bucket(b).Root())
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	before := roots()
	for _, b := range before {
		if b == 0 {
			t.Fatalf("an index is inline (%v): the test needs pages", before)
		}
	}
	st := flows[150]
	st.Round++ // same status, same gate: no key changes
	put(st)
	if got := roots(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("a transition that changes no index key rewrote indexes: %v → %v", before, got)
	}
	st.Status, st.Gate = state.StatusComplete, nil
	put(st)
	after := roots()
	if after[string(bucketByCreated)] != before[string(bucketByCreated)] {
		t.Errorf("completing a flow rewrote the by-created index (root %d → %d)", before[string(bucketByCreated)], after[string(bucketByCreated)])
	}
	for _, b := range [][]byte{bucketByStatus, bucketGates} {
		if after[string(b)] == before[string(b)] {
			t.Errorf("completing a flow left index %s's root at %d: the test sees no rewrite", b, after[string(b)])
		}
	}
	// And the indexes still answer right.
	var gates []state.FlowSummary
	var done []state.FlowSummary
	if err := s.View(bg, func(tx engine.Tx) error {
		var err error
		if gates, err = tx.PendingGates(); err != nil {
			return err
		}
		done, err = tx.List(engine.ListFilter{Status: state.StatusComplete})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(gates) != 299 || len(done) != 1 || done[0].FlowID != st.FlowID {
		t.Fatalf("after the completion: %d pending gates, %d complete %v", len(gates), len(done), done)
	}
}

// TestOneStatPerLock: a read and a write through the kept handle stat the
// file once per lock, plus once after the commit (the generation it left):
// the size check, the page-check generation and keep share the status.
func TestOneStatPerLock(t *testing.T) {
	s := newTestStore(t, Options{KeepOpen: time.Minute})
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &state.FlowState{FlowID: "f", Status: state.StatusRunning}
	step := func() {
		t.Helper()
		if err := s.View(bg, func(tx engine.Tx) error { _, err := tx.Get("f"); return err }); err != nil && st.Version > 0 {
			t.Fatal(err)
		}
		expect := st.Stamp(at)
		if err := s.Update(bg, func(tx engine.Tx) error { return tx.Put(st, engine.Summarize(st, nil), expect) }); err != nil {
			t.Fatal(err)
		}
	}
	step() // keeps the handle
	before := s.fileStats.Load()
	const n = 20
	for range n {
		step()
	}
	if got := s.fileStats.Load() - before; got != 3*n {
		t.Fatalf("%d reads and writes through the kept handle ran %d fstats, want %d (one per lock, one per commit)", n, got, 3*n)
	}
}
