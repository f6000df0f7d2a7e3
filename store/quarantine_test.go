package store

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestDamagedRecords: one flow's state and another's summary garbled in
// place. Get and List name them as *engine.DamagedError (List returning
// the rest), GC skips them, QuarantineDamaged moves them out and the file
// checks clean afterwards.
func TestDamagedRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(path, Options{KeepOpen: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(bg, func(tx engine.Tx) error {
		for _, id := range []string{"f0", "f1", "f2"} {
			st := storetest.NewState(id, state.StatusRunning)
			st.RawSpec = "version: \"0.2\"\n"
			if err := storetest.Put(tx, st); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSummaries).Put([]byte("f1"), []byte{0xff, 0xfe}); err != nil {
			return err
		}
		return tx.Bucket(bucketFlows).Put([]byte("f2"), []byte("{garbage"))
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	var d *engine.DamagedError
	err = s.View(bg, func(tx engine.Tx) error { _, err := tx.Get("f2"); return err })
	if !errors.As(err, &d) || d.FlowID != "f2" || !errors.Is(err, engine.ErrDamaged) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of a garbled state = %v", err)
	}
	var list []state.FlowSummary
	err = s.View(bg, func(tx engine.Tx) error { var err error; list, err = tx.List(engine.ListFilter{}); return err })
	ds, ok := engine.DamagedFlows(err)
	if !ok || len(ds) != 1 || ds[0].FlowID != "f1" || len(list) != 2 {
		t.Fatalf("List = %v, %v; want f0 and f2 with f1 damaged", idsOf(list), err)
	}
	if _, err := s.GC(bg, 0); err != nil {
		t.Fatalf("GC over a damaged summary: %v", err)
	}
	q, err := s.QuarantineDamaged(bg)
	if err != nil || len(q) != 2 || q[0].FlowID != "f1" || q[1].FlowID != "f2" {
		t.Fatalf("QuarantineDamaged = %+v, %v", q, err)
	}
	if err := s.Check(bg); err != nil {
		t.Fatalf("Check after the quarantine: %v", err)
	}
	if got := idsOf(storeList(t, s, engine.ListFilter{})); len(got) != 1 || got[0] != "f0" {
		t.Fatalf("flows after the quarantine: %v", got)
	}
	if q, err := s.QuarantineDamaged(bg); err != nil || len(q) != 0 {
		t.Fatalf("second QuarantineDamaged = %+v, %v", q, err)
	}
}
