package store

import (
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

// bucketRoots is the root page of each bucket: a commit that writes
// anything in a bucket rewrites its root (bbolt copies on write).
func bucketRoots(t *testing.T, s *Store) map[string]uint64 {
	t.Helper()
	roots := map[string]uint64{}
	if err := s.run(bg, modeRead, func(btx *bolt.Tx) error {
		return btx.ForEach(func(name []byte, b *bolt.Bucket) error {
			roots[string(name)] = uint64(b.Root())
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return roots
}

// TestTransitionLeavesFlowLogClean: a transition that adds no record or
// trace entry does not rewrite the flow's flowlog meta entry, so it
// writes (and fdatasyncs) no page of bucket flowlog — at 10,000 flows a
// B-tree path of three pages. One that adds a record does.
func TestTransitionLeavesFlowLogClean(t *testing.T) {
	s := newTestStore(t, Options{})
	if err := s.Update(bg, func(tx engine.Tx) error {
		for i := range 20 { // enough entries that flowlog is not an inline bucket
			st := storetest.NewState(fmt.Sprintf("f%02d", i), state.StatusRunning)
			withRecords(st, 5)
			if err := storetest.Put(tx, st); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := bucketRoots(t, s)
	if before["flowlog"] == 0 {
		t.Fatal("flowlog is an inline bucket: the test needs more entries")
	}
	attempts := 0
	update(t, s, "f07", func(st *state.FlowState) { st.Attempts["s1"]++; attempts = st.Attempts["s1"] })
	after := bucketRoots(t, s)
	if after["flows"] == before["flows"] {
		t.Fatal("the transition did not write bucket flows")
	}
	if after["flowlog"] != before["flowlog"] {
		t.Fatalf("a transition without a new record rewrote bucket flowlog (root page %d → %d)", before["flowlog"], after["flowlog"])
	}
	if m, _ := rawLog(t, s, "f07"); m.records != 5 {
		t.Fatalf("meta after the transition: %+v", m)
	}
	update(t, s, "f07", func(st *state.FlowState) { withRecords(st, 6) })
	if bucketRoots(t, s)["flowlog"] == after["flowlog"] {
		t.Fatal("a transition that added a record did not write bucket flowlog")
	}
	reopened, err := Open(s.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*Store{s, reopened} {
		if got := storeGet(t, h, "f07"); len(got.Records) != 6 || got.Attempts["s1"] != attempts {
			t.Fatalf("read back: %d records, attempts %v", len(got.Records), got.Attempts)
		}
	}
}
