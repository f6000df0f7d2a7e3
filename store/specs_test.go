package store

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

// specCounts reads bucket specs raw: the reference count of each spec, by
// its text, and whether any flow state holds a spec inline.
func specCounts(t *testing.T, s *Store) (counts map[string]uint64, inline bool) {
	t.Helper()
	db, err := bolt.Open(s.Path(), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	counts = map[string]uint64{}
	_ = db.View(func(tx *bolt.Tx) error {
		_ = tx.Bucket(bucketSpecs).ForEach(func(_, v []byte) error {
			counts[string(v[8:])] = binary.BigEndian.Uint64(v)
			return nil
		})
		return tx.Bucket(bucketFlows).ForEach(func(_, v []byte) error {
			inline = inline || strings.Contains(string(v), "flows:")
			return nil
		})
	})
	return counts, inline
}

// TestSpecsStoredOnce: flows of one spec share one stored text, which the
// states refer to; Get gives the text back; the count follows creations,
// spec changes, deletions and GC, and the text goes with its last flow.
func TestSpecsStoredOnce(t *testing.T) {
	clock := newClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := newTestStore(t, Options{Now: clock.Now})
	specA := storetest.NewState("x", state.StatusRunning).RawSpec
	specB := "version: \"0.2\"\nflows:\n  other: {steps: []}\n"
	put := func(id, spec string, status state.FlowStatus) {
		t.Helper()
		if err := s.Update(bg, func(tx engine.Tx) error {
			st, err := tx.Get(id)
			if err != nil {
				st = storetest.NewState(id, status)
			}
			st.RawSpec, st.Status = spec, status
			return storetest.PutAt(tx, st, clock.Now())
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(what string, a, b uint64) {
		t.Helper()
		counts, inline := specCounts(t, s)
		if inline {
			t.Fatalf("%s: a flow state holds its spec inline", what)
		}
		if counts[specA] != a || counts[specB] != b || len(counts) != btoi(a > 0)+btoi(b > 0) {
			t.Fatalf("%s: spec counts %v, want A=%d B=%d", what, counts, a, b)
		}
		if err := s.Check(bg); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	put("f1", specA, state.StatusRunning)
	put("f2", specA, state.StatusRunning)
	put("f3", specB, state.StatusComplete)
	want("three flows", 2, 1)
	for i := 0; i < 3; i++ {
		put("f1", specA, state.StatusRunning) // transitions leave the counts alone
	}
	want("transitions", 2, 1)
	if got := storeGet(t, s, "f1").RawSpec; got != specA {
		t.Fatalf("Get gave raw_spec %q", got)
	}
	put("f2", specB, state.StatusComplete)
	want("f2 changed spec", 1, 2)
	put("f4", "", state.StatusRunning)
	want("a flow without spec", 1, 2)
	if got := storeGet(t, s, "f4").RawSpec; got != "" {
		t.Fatalf("empty spec read back as %q", got)
	}
	if err := s.Update(bg, func(tx engine.Tx) error { return tx.Delete("f1") }); err != nil {
		t.Fatal(err)
	}
	want("f1 deleted", 0, 2)
	// Deleted and re-created in one transaction: counted once.
	if err := s.Update(bg, func(tx engine.Tx) error {
		if err := tx.Delete("f2"); err != nil {
			return err
		}
		st := storetest.NewState("f2", state.StatusComplete)
		st.RawSpec = specA
		return storetest.PutAt(tx, st, clock.Now())
	}); err != nil {
		t.Fatal(err)
	}
	want("f2 re-created", 1, 1)
	clock.Advance(48 * time.Hour)
	if n, err := s.GC(bg, time.Hour); err != nil || n != 2 {
		t.Fatalf("GC = %d, %v", n, err)
	}
	want("after GC", 0, 0)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSpecsCountedWithoutRead: the engine reads a flow in a View and puts
// it in an Update of its own, which learns the spec the stored state
// refers to from the flow's log meta entry (flowlog.go); a change of spec
// written that way still moves the counts.
func TestSpecsCountedWithoutRead(t *testing.T) {
	s := newTestStore(t, Options{})
	specA := storetest.NewState("x", state.StatusRunning).RawSpec
	specB := "version: \"0.2\"\nflows:\n  other: {steps: []}\n"
	for _, id := range []string{"f1", "f2"} {
		if err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, storetest.NewState(id, state.StatusRunning)) }); err != nil {
			t.Fatal(err)
		}
	}
	for i, spec := range []string{specB, specB, "", specA} {
		st := storeGet(t, s, "f1")
		st.RawSpec = spec
		if err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, st) }); err != nil {
			t.Fatal(err)
		}
		counts, _ := specCounts(t, s)
		wantA := uint64(1) + uint64(btoi(spec == specA))
		if counts[specA] != wantA || counts[specB] != uint64(btoi(spec == specB)) {
			t.Fatalf("put %d (spec %.12q): counts %v", i, spec, counts)
		}
		if err := s.Check(bg); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
}
