package store

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// TestFixtureV6 opens the checked-in schema-6 store (testdata/store-v6.db.gz,
// written by stratum at 08464d1: gates with deadlines an hour before, at,
// one and two hours after 2026-11-01T12:00Z, a gate without one, a running
// and a complete flow): Open backs it up to .bak-v6 and migrates it (6→7:
// bucket idx_deadline filled from the pending gates' summaries), Check
// finds the index in step, and GatesDue answers from it.
func TestFixtureV6(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	gunzipFile(t, filepath.Join("testdata", "store-v6.db.gz"), path)
	if v := rawSchemaVersion(t, path); v != "6" {
		t.Fatalf("fixture schema_version = %q, want 6", v)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("open v6 fixture: %v", err)
	}
	if v := rawSchemaVersion(t, BackupPath(path, 6)); v != "6" {
		t.Fatalf("backup schema_version = %q", v)
	}
	if err := s.Check(bg); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := s.run(bg, modeRead, func(btx *bolt.Tx) error {
		return btx.Bucket(bucketDeadlines).ForEach(func(k, _ []byte) error {
			keys = append(keys, keyTime(k).Format(time.TimeOnly)+" "+string(k[8:]))
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"11:00:00 expired", "12:00:00 due", "13:00:00 later", "14:00:00 latest"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("idx_deadline after migration = %q, want %q", keys, want)
	}
	noon := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	due, next := storeGatesDue(t, s, noon)
	if got := sortedIDs(due); !reflect.DeepEqual(got, []string{"due", "expired"}) || next == nil || !next.Equal(noon.Add(time.Hour)) {
		t.Fatalf("GatesDue(noon) = %v, next %v", got, next)
	}
	// The migrated index moves with a transition: "later" decided.
	update(t, s, "later", func(st *state.FlowState) { st.Status, st.Gate = state.StatusRunning, nil })
	if due, next = storeGatesDue(t, s, noon); next == nil || !next.Equal(noon.Add(2*time.Hour)) || len(due) != 2 {
		t.Fatalf("GatesDue(noon) after later decided = %v, next %v", sortedIDs(due), next)
	}
	if err := s.Check(bg); err != nil {
		t.Fatal(err)
	}
}

func storeGatesDue(t *testing.T, s *Store, now time.Time) (due []state.FlowSummary, next *time.Time) {
	t.Helper()
	if err := s.View(bg, func(tx engine.Tx) (err error) { due, next, err = tx.GatesDue(now); return err }); err != nil {
		t.Fatal(err)
	}
	return due, next
}
