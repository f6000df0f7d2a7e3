package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// stampAt is the time of the stamps of these tests (they are not about it).
var stampAt = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// refusedPut runs one Update that puts st (stamped before, summarized
// without a spec) expecting version expect, and checks that it is refused
// with an *engine.VersionError (errors.Is ErrConflict) naming the flow, the
// expected and the stored version.
func refusedPut(t *testing.T, s engine.Store, st *state.FlowState, expect, stored int64) {
	t.Helper()
	sum := engine.Summarize(st, nil)
	err := s.Update(ctx, func(tx engine.Tx) error { return tx.Put(st, sum, expect) })
	var ve *engine.VersionError
	if !errors.Is(err, engine.ErrConflict) || !errors.As(err, &ve) {
		t.Fatalf("Put of %s expecting version %d (stored: %d): %v, want an *engine.VersionError (ErrConflict)", st.FlowID, expect, stored, err)
	}
	if ve.FlowID != st.FlowID || ve.Expected != expect || ve.Stored != stored {
		t.Fatalf("conflict %+v, want flow %s, expected %d, stored %d", *ve, st.FlowID, expect, stored)
	}
}

// testPutConditional: Put writes only over the version it expects — a
// stale version, a flow that is not there, and a flow that must not exist
// but does are each refused with a conflict, and nothing is written
// (state, summary, indexes, nor the transaction's other writes).
func testPutConditional(t *testing.T, s engine.Store) {
	put(t, s, NewState("f", state.StatusRunning)) // version 1
	cur := get(t, s, "f")
	cur.Round = 7
	put(t, s, cur) // version 2

	// Stale: a writer that read version 1.
	stale := get(t, s, "f")
	stale.Version = 1
	stale.Status, stale.Gate = state.StatusAwaitingGate, &state.PendingGate{StepID: "g"}
	stale.Stamp(stampAt)
	refusedPut(t, s, stale, 1, 2)

	// Ahead: a version the flow never had.
	ahead := get(t, s, "f")
	ahead.Version = 5
	ahead.Stamp(stampAt)
	refusedPut(t, s, ahead, 5, 2)

	// Missing: a flow expected at a version that is not stored (deleted, or
	// never written).
	missing := NewState("gone", state.StatusRunning)
	missing.Version = 3
	missing.Stamp(stampAt)
	refusedPut(t, s, missing, 3, engine.NotStored)

	// Must not exist, and does: a new state of a stored flow's id.
	fresh := NewState("f", state.StatusComplete)
	fresh.Stamp(stampAt)
	refusedPut(t, s, fresh, engine.NotStored, 2)

	// A refusal inside a transaction that wrote before it: nothing of it
	// stays (fn returns the conflict).
	other := NewState("other", state.StatusRunning)
	otherExpect := other.Stamp(stampAt)
	err := s.Update(ctx, func(tx engine.Tx) error {
		if err := tx.Put(other, engine.Summarize(other, nil), otherExpect); err != nil {
			return err
		}
		if err := tx.Append(engine.Event{FlowID: "other", Type: engine.EventFlowCreated}); err != nil {
			return err
		}
		return tx.Put(fresh, engine.Summarize(fresh, nil), engine.NotStored)
	})
	if !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("Update with a refused Put: %v, want ErrConflict", err)
	}

	after := get(t, s, "f")
	if after.Version != 2 || after.Round != 7 || after.Status != state.StatusRunning {
		t.Fatalf("a refused Put wrote: version %d round %d status %s; want 2, 7, running", after.Version, after.Round, after.Status)
	}
	if sums := list(t, s, engine.ListFilter{}); len(sums) != 1 || sums[0].FlowID != "f" || sums[0].Version != 2 || sums[0].Status != state.StatusRunning {
		t.Fatalf("List after refused Puts: %s", summaryText(sums))
	}
	if g := gates(t, s); len(g) != 0 {
		t.Fatalf("a refused Put indexed a gate: %v", ids(g))
	}
	if got := list(t, s, engine.ListFilter{Status: state.StatusComplete}); len(got) != 0 {
		t.Fatalf("a refused Put indexed a status: %v", ids(got))
	}
	if evs, err := (eventLog{s}).FlowEvents(ctx, "other"); err != nil || len(evs) != 0 {
		t.Fatalf("events of a transaction whose Put was refused: %v %v", evs, err)
	}

	// The writer that read the current version wins; then its version is
	// the current one.
	ok := get(t, s, "f")
	ok.Status = state.StatusComplete
	put(t, s, ok)
	if got := get(t, s, "f"); got.Version != 3 || got.Status != state.StatusComplete {
		t.Fatalf("after the current writer: version %d status %s", got.Version, got.Status)
	}
	after.Stamp(stampAt)
	refusedPut(t, s, after, 2, 3)

	// A deleted flow is not stored: a new one of its id must expect
	// NotStored, and one expecting its old version is refused.
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("f") }); err != nil {
		t.Fatal(err)
	}
	old := NewState("f", state.StatusRunning)
	old.Version = 3
	old.Stamp(stampAt)
	refusedPut(t, s, old, 3, engine.NotStored)
	reborn := NewState("f", state.StatusRunning)
	put(t, s, reborn)
	if got := get(t, s, "f"); got.Version != 1 {
		t.Fatalf("a flow created again after its deletion is at version %d, want 1", got.Version)
	}
}

// testPutConditionalInOneTransaction: a flow put twice in one transaction
// is, for the second Put, at the version the first gave it.
func testPutConditionalInOneTransaction(t *testing.T, s engine.Store) {
	st := NewState("f", state.StatusRunning)
	err := s.Update(ctx, func(tx engine.Tx) error {
		st := st.Clone() // fn may run again
		first := st.Stamp(stampAt)
		if err := tx.Put(st, engine.Summarize(st, nil), first); err != nil {
			return err
		}
		second := st.Stamp(stampAt)
		if second != 1 {
			return fmt.Errorf("second Put expects %d, want 1", second)
		}
		if err := tx.Put(st, engine.Summarize(st, nil), first); !errors.Is(err, engine.ErrConflict) {
			return fmt.Errorf("second Put expecting the version before the first: %v, want ErrConflict", err)
		}
		st.Round = 4
		return tx.Put(st, engine.Summarize(st, nil), second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "f"); got.Version != 2 || got.Round != 4 {
		t.Fatalf("after two Puts in one transaction: version %d round %d, want 2 and 4", got.Version, got.Round)
	}
}

// testPutConcurrentWritersOneWins: writers that all read the same version
// and then write concurrently, each in its own Update, expecting it:
// exactly one wins, every other is refused with a conflict, and the stored
// flow is the winner's.
func testPutConcurrentWritersOneWins(t *testing.T, s engine.Store) {
	const writers, rounds = 6, 4
	put(t, s, NewState("f", state.StatusRunning))
	for round := 0; round < rounds; round++ {
		read := get(t, s, "f")
		var (
			wg        sync.WaitGroup
			start     = make(chan struct{})
			mu        sync.Mutex
			winners   []int
			conflicts int
			others    []error
		)
		for w := 0; w < writers; w++ {
			st := read.Clone()
			st.Inputs["writer"] = float64(w)
			expect := st.Stamp(stampAt)
			sum := engine.Summarize(st, nil)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := s.Update(ctx, func(tx engine.Tx) error { return tx.Put(st, sum, expect) })
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, w)
				case errors.Is(err, engine.ErrConflict):
					conflicts++
				default:
					others = append(others, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(others) > 0 {
			t.Fatalf("round %d: errors other than a conflict: %v", round, others)
		}
		if len(winners) != 1 || conflicts != writers-1 {
			t.Fatalf("round %d: %d winners %v and %d conflicts of %d writers; want exactly one winner", round, len(winners), winners, conflicts, writers)
		}
		got := get(t, s, "f")
		if got.Version != read.Version+1 || got.Inputs["writer"] != float64(winners[0]) {
			t.Fatalf("round %d: stored version %d by writer %v; want version %d by the winner %d", round, got.Version, got.Inputs["writer"], read.Version+1, winners[0])
		}
	}
}
