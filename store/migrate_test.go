package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

var updateFixtures = flag.Bool("update", false, "rewrite testdata/store-v*.db.gz from the current code")

func rawSchemaVersion(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	_ = db.View(func(tx *bolt.Tx) error {
		v = string(tx.Bucket(bucketMeta).Get(keySchemaVersion))
		return nil
	})
	return v
}

// seedV1 creates a schema-1 store with two flows (one at a gate) and events.
func seedV1(t *testing.T, path string) {
	t.Helper()
	s, err := openWith(path, Options{}, schema{version: 1})
	if err != nil {
		t.Fatal(err)
	}
	gate := storetest.NewState("g", state.StatusAwaitingGate)
	gate.Gate = &state.PendingGate{StepID: "review"}
	if err := s.Update(bg, func(tx engine.Tx) error {
		if err := storetest.Put(tx, storetest.NewState("a", state.StatusRunning)); err != nil {
			return err
		}
		if err := storetest.Put(tx, gate); err != nil {
			return err
		}
		return tx.Append(engine.Event{FlowID: "a", Type: engine.EventFlowCreated})
	}); err != nil {
		t.Fatal(err)
	}
}

// testV3 is a made-up schema history: 1→2 adds a bucket; 2→3 rewrites
// every flow's driver in the states and in the summaries, as a real
// migration of a summarised field must (the store cannot recompute
// summaries; it rewrites the stored ones).
var testV3 = schema{version: 3, steps: []migration{
	{from: 1, name: "add x bucket", apply: func(_ *Store, btx *bolt.Tx) error {
		b, err := btx.CreateBucket([]byte("x_v2"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}},
	{from: 2, name: "driver rename", apply: func(s *Store, btx *bolt.Tx) error {
		flows := btx.Bucket(bucketFlows)
		var updates [][2][]byte
		if err := flows.ForEach(func(k, v []byte) error {
			var st map[string]any
			if err := json.Unmarshal(v, &st); err != nil {
				return err
			}
			st["driver"] = "migrated"
			nv, err := json.Marshal(st)
			updates = append(updates, [2][]byte{bytes.Clone(k), nv})
			return err
		}); err != nil {
			return err
		}
		for _, u := range updates {
			if err := flows.Put(u[0], u[1]); err != nil {
				return err
			}
		}
		return s.rewriteSummaries(btx, func(_ []byte, sum *state.FlowSummary) error {
			sum.Driver = "migrated"
			return nil
		})
	}},
}}

func TestMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	seedV1(t, path)
	original, _ := os.ReadFile(path)

	s, err := openWith(path, Options{}, testV3)
	if err != nil {
		t.Fatalf("migrate 1→3: %v", err)
	}
	if v := rawSchemaVersion(t, path); v != "3" {
		t.Fatalf("schema_version after migration = %q, want 3", v)
	}
	if err := s.Check(bg); err != nil {
		t.Fatal(err)
	}
	for _, sum := range storeList(t, s, engine.ListFilter{}) {
		if sum.Driver != "migrated" {
			t.Fatalf("summary of %s not rebuilt: driver %q", sum.FlowID, sum.Driver)
		}
	}
	if g := storeGates(t, s); len(g) != 1 || g[0].FlowID != "g" {
		t.Fatalf("gate index after rebuild: %v", g)
	}
	if evs, err := svcOf(s).Query().FlowEvents(bg, "a"); err != nil || len(evs) != 1 {
		t.Fatalf("events after migration: %v %v", evs, err)
	}

	// The backup is the v1 file, as it was.
	bak := BackupPath(path, 1)
	if v := rawSchemaVersion(t, bak); v != "1" {
		t.Fatalf("backup schema_version = %q, want 1", v)
	}
	old, err := openWith(bak, Options{}, schema{version: 1})
	if err != nil {
		t.Fatalf("open backup: %v", err)
	}
	if got := storeGet(t, old, "a"); got.Driver != "agent" {
		t.Fatalf("backup has driver %q, want the pre-migration agent", got.Driver)
	}
	if err := old.Check(bg); err != nil {
		t.Fatal(err)
	}
	_ = original

	// Opening again is a no-op: no second backup.
	_ = os.Remove(bak)
	if _, err := openWith(path, Options{}, testV3); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bak); err == nil {
		t.Fatal("reopening a current store wrote a backup")
	}
	// An older binary refuses the migrated file and leaves it alone.
	before, _ := os.ReadFile(path)
	_, err = openWith(path, Options{}, schema{version: 1})
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), path) {
		t.Fatalf("v1 binary on a v3 file: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a newer-schema file was modified")
	}
}

func TestMigrateFailureLeavesFileAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		sc   schema
		want string
	}{
		{"failing step", schema{version: 3, steps: []migration{
			testV3.steps[0],
			{from: 2, name: "explodes", apply: func(*Store, *bolt.Tx) error { return errors.New("kaboom") }},
		}}, "migration 2→3 (explodes) failed"},
		{"panicking step", schema{version: 2, steps: []migration{
			{from: 1, name: "panics", apply: func(*Store, *bolt.Tx) error { panic("bad migration") }},
		}}, "migration 1→2 (panics) failed"},
		{"missing step", schema{version: 3, steps: testV3.steps[:1]}, "no migration from schema version 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			seedV1(t, path)
			_, err := openWith(path, Options{}, tc.sc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if v := rawSchemaVersion(t, path); v != "1" {
				t.Fatalf("schema_version after a failed migration = %q", v)
			}
			s, err := openWith(path, Options{}, schema{version: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.View(bg, func(engine.Tx) error { return nil }); err != nil {
				t.Fatal(err)
			}
			db, _ := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
			_ = db.View(func(tx *bolt.Tx) error {
				if tx.Bucket([]byte("x_v2")) != nil {
					t.Error("a step of a failed migration was committed")
				}
				return nil
			})
			_ = db.Close()
			if err := s.Check(bg); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// fixtureClock makes the checked-in fixture deterministic.
func fixtureClock() func() time.Time {
	c := newClock(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	return func() time.Time { c.Advance(time.Second); return c.Now() }
}

// TestFixtureV1 opens the checked-in schema-1 store (testdata/store-v1.db.gz)
// and reads everything back: once the schema moves on, this is the upgrade
// test from v1. Regenerate with -update (only while SchemaVersion is 1).
func TestFixtureV1(t *testing.T) {
	fixture := filepath.Join("testdata", "store-v1.db.gz")
	path := filepath.Join(t.TempDir(), FileName)
	if *updateFixtures && SchemaVersion == 1 {
		writeFixtureV1(t, path)
		gzipFile(t, path, fixture)
		_ = os.Remove(path)
	}
	gunzipFile(t, fixture, path)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("open v1 fixture: %v", err)
	}
	if err := s.Check(bg); err != nil {
		t.Fatal(err)
	}
	if v := rawSchemaVersion(t, path); v != fmt.Sprint(SchemaVersion) {
		t.Fatalf("schema_version = %q after opening, want %d", v, SchemaVersion)
	}
	if _, err := os.Stat(BackupPath(path, 1)); SchemaVersion > 1 && err != nil {
		t.Fatalf("no backup of the v1 file: %v", err)
	}
	checkFixtureContents(t, s)
}

// TestFixtureV2 opens the checked-in schema-2 store (testdata/store-v2.db.gz,
// written by writeFixtureV1's transactions with stratum at schema 2, whose
// index entries held copies of the summaries and whose flow states held
// their spec texts): Open backs it up to .bak-v2 and migrates it (2→3:
// keys-only index entries, each spec text stored once, the per-flow event
// index moved into bucket events) in one transaction;
// the backup is the untouched schema-2 file and the migrated store reads
// back exactly what was written.
func TestFixtureV2(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	gunzipFile(t, filepath.Join("testdata", "store-v2.db.gz"), path)
	indexValues := func(path string) (empty, full int) {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_ = db.View(func(tx *bolt.Tx) error {
			for _, name := range [][]byte{bucketByCreated, bucketByStatus, bucketGates} {
				_ = tx.Bucket(name).ForEach(func(_, v []byte) error {
					if len(v) == 0 {
						empty++
					} else {
						full++
					}
					return nil
				})
			}
			return nil
		})
		return empty, full
	}
	if v := rawSchemaVersion(t, path); v != "2" {
		t.Fatalf("fixture schema_version = %q, want 2", v)
	}
	if empty, full := indexValues(path); empty != 0 || full != 9 {
		t.Fatalf("schema-2 fixture: %d empty and %d summary index values, want 0 and 9", empty, full)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("open v2 fixture: %v", err)
	}
	if v := rawSchemaVersion(t, path); v != fmt.Sprint(SchemaVersion) {
		t.Fatalf("schema_version = %q after opening, want %d", v, SchemaVersion)
	}
	if empty, full := indexValues(path); empty != 9 || full != 0 {
		t.Fatalf("migrated store: %d empty and %d summary index values, want 9 and 0", empty, full)
	}
	if _, err := os.Stat(BackupPath(path, 2)); err != nil {
		t.Fatalf("no backup of the v2 file: %v", err)
	}
	if v := rawSchemaVersion(t, BackupPath(path, 2)); v != "2" {
		t.Fatalf("backup schema_version = %q", v)
	}
	if empty, full := indexValues(BackupPath(path, 2)); empty != 0 || full != 9 {
		t.Fatalf("backup: %d empty and %d summary index values, want the schema-2 file's", empty, full)
	}
	if err := s.Check(bg); err != nil {
		t.Fatal(err)
	}
	spec := storetest.NewState("x", state.StatusRunning).RawSpec
	if counts, inline := specCounts(t, s); inline || len(counts) != 1 || counts[spec] != 4 {
		t.Fatalf("specs after migration: %v (inline left: %v), want the one spec of the 4 flows", counts, inline)
	}
	if got := storeGet(t, s, "child").RawSpec; got != spec {
		t.Fatalf("raw_spec after migration: %q", got)
	}
	var childEvents []engine.Event
	if err := s.View(bg, func(tx engine.Tx) error {
		var err error
		childEvents, err = tx.FlowEvents("child")
		return err
	}); err != nil || len(childEvents) != 2 || childEvents[1].Type != engine.EventStepDone {
		t.Fatalf("events of child after migration: %+v %v", childEvents, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketFlowEvents) != nil {
			t.Error("idx_flow_events is still there after migration")
		}
		return nil
	})
	_ = db.Close()
	checkFixtureContents(t, s)
	// The migrated store takes transitions and stays consistent.
	if err := s.Update(bg, func(tx engine.Tx) error {
		st, err := tx.Get("gated")
		if err != nil {
			return err
		}
		st.Status, st.Gate = state.StatusRunning, nil
		return storetest.Put(tx, st)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(bg); err != nil {
		t.Fatal(err)
	}
	if g := storeGates(t, s); len(g) != 0 {
		t.Fatalf("gates after resolving the only one: %+v", g)
	}
}

// checkFixtureContents reads back everything writeFixtureV1 wrote.
func checkFixtureContents(t *testing.T, s *Store) {
	t.Helper()
	all := storeList(t, s, engine.ListFilter{})
	if got := strings.Join(sortedIDs(all), ","); got != "child,done,gated,running" {
		t.Fatalf("flows in fixture: %s", got)
	}
	if all[0].FlowID != "done" {
		t.Fatalf("newest flow %s, want done", all[0].FlowID)
	}
	g := storeGates(t, s)
	if len(g) != 1 || g[0].FlowID != "gated" || g[0].Gate.Deadline == nil || g[0].Gate.Approver != "human" {
		t.Fatalf("gates in fixture: %+v", g)
	}
	child := storeGet(t, s, "child")
	if child.ParentFlowID == nil || *child.ParentFlowID != "running" || child.Version != 2 {
		t.Fatalf("child flow: %+v", child)
	}
	evs, err := svcOf(s).Query().Events(bg, 0, 0)
	if err != nil || len(evs) != 5 || evs[4].Type != engine.EventFlowFinished || evs[4].Seq != 5 {
		t.Fatalf("events in fixture: %+v %v", evs, err)
	}
	var cached []byte
	if err := s.View(bg, func(tx engine.Tx) error {
		var err error
		cached, _, err = tx.CacheGet("sha256:abc")
		return err
	}); err != nil || string(cached) != `{"answer":42}` {
		t.Fatalf("cache in fixture: %q %v", cached, err)
	}
}

// TestMigrateV1SummariesGainTheLease: a schema-1 file (codec v1 summaries,
// which cannot hold the runner lease) is migrated on Open: backed up, every
// summary re-encoded in codec v2 with its state's lease, the indexes still
// consistent.
func TestMigrateV1SummariesGainTheLease(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	old, err := openWith(path, Options{}, schema{version: 1})
	if err != nil {
		t.Fatal(err)
	}
	lease := &state.Lease{ID: "run-7", PID: 4242, Host: "box", Heartbeat: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
		ExpiresAt: time.Date(2026, 5, 1, 0, 0, 30, 0, time.UTC)}
	leased := storetest.NewState("leased", state.StatusRunning)
	leased.Owner, leased.Driver = lease, state.DriverRunner
	gate := storetest.NewState("gated", state.StatusAwaitingGate)
	gate.Gate = &state.PendingGate{StepID: "review"}
	if err := old.Update(bg, func(tx engine.Tx) error {
		return errors.Join(storetest.Put(tx, leased), storetest.Put(tx, gate))
	}); err != nil {
		t.Fatal(err)
	}
	codecs := func() map[string]byte {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		out := map[string]byte{}
		_ = db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketSummaries).ForEach(func(k, v []byte) error { out[string(k)] = v[0]; return nil })
		})
		return out
	}
	if c := codecs(); c["leased"] != summaryCodecV1 || c["gated"] != summaryCodecV1 {
		t.Fatalf("schema-1 store wrote summary codecs %v", c)
	}
	if sums := storeList(t, old, engine.ListFilter{}); sums[0].Owner != nil || sums[1].Owner != nil {
		t.Fatalf("a v1 summary carries an owner: %+v", sums)
	}

	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("migrate 1→%d: %v", SchemaVersion, err)
	}
	if c, want := codecs(), currentSchema.summaryCodec(); c["leased"] != want || c["gated"] != want {
		t.Fatalf("summary codecs after migration %v, want %d", c, want)
	}
	if v := rawSchemaVersion(t, BackupPath(path, 1)); v != "1" {
		t.Fatalf("backup schema_version = %q", v)
	}
	if err := s.Check(bg); err != nil {
		t.Fatal(err)
	}
	for _, sum := range storeList(t, s, engine.ListFilter{}) {
		switch sum.FlowID {
		case "leased":
			if o := sum.Owner; o == nil || o.ID != lease.ID || o.PID != lease.PID || o.Host != lease.Host ||
				!o.Heartbeat.Equal(lease.Heartbeat) || !o.ExpiresAt.Equal(lease.ExpiresAt) || sum.Driver != state.DriverRunner {
				t.Fatalf("migrated summary of the leased flow: %+v (owner %+v)", sum, sum.Owner)
			}
		default:
			if sum.Owner != nil {
				t.Fatalf("%s gained an owner: %+v", sum.FlowID, sum.Owner)
			}
		}
	}
	if g := storeGates(t, s); len(g) != 1 || g[0].FlowID != "gated" || g[0].Gate.StepID != "review" {
		t.Fatalf("gate index after migration: %+v", g)
	}
	// What the old binary wrote is still read: states are unchanged.
	if st := storeGet(t, s, "leased"); st.Owner == nil || st.Owner.ID != "run-7" {
		t.Fatalf("state after migration: %+v", st.Owner)
	}
}

func writeFixtureV1(t *testing.T, path string) {
	s, err := Open(path, Options{Now: fixtureClock()})
	if err != nil {
		t.Fatal(err)
	}
	parent := "running"
	deadline := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	steps := []func(tx engine.Tx) error{
		func(tx engine.Tx) error {
			return errors.Join(storetest.Put(tx, storetest.NewState("running", state.StatusRunning)),
				tx.Append(engine.Event{FlowID: "running", Type: engine.EventFlowCreated}))
		},
		func(tx engine.Tx) error {
			st := storetest.NewState("child", state.StatusRunning)
			st.ParentFlowID = &parent
			return errors.Join(storetest.Put(tx, st), tx.Append(engine.Event{FlowID: "child", Type: engine.EventFlowCreated}))
		},
		func(tx engine.Tx) error {
			st, err := tx.Get("child")
			if err != nil {
				return err
			}
			st.CurrentIdx++
			return errors.Join(storetest.Put(tx, st), tx.Append(engine.Event{FlowID: "child", Type: engine.EventStepDone, StepID: "s1"}))
		},
		func(tx engine.Tx) error {
			st := storetest.NewState("gated", state.StatusAwaitingGate)
			st.Gate = &state.PendingGate{StepID: "review", DispatchedAt: deadline.Add(-time.Hour), Deadline: &deadline,
				OnTimeout: "kill", Approver: "human"}
			return errors.Join(storetest.Put(tx, st), tx.Append(engine.Event{FlowID: "gated", Type: engine.EventGateOpened}),
				tx.CachePut("sha256:abc", []byte(`{"answer":42}`)))
		},
		func(tx engine.Tx) error {
			return errors.Join(storetest.Put(tx, storetest.NewState("done", state.StatusComplete)),
				tx.Append(engine.Event{FlowID: "done", Type: engine.EventFlowFinished}))
		},
	}
	for _, step := range steps {
		if err := s.Update(bg, step); err != nil {
			t.Fatal(err)
		}
	}
}

func gzipFile(t *testing.T, src, dst string) {
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(data)
	_ = zw.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gunzipFile(t *testing.T, src, dst string) {
	f, err := os.Open(src)
	if err != nil {
		t.Fatalf("%v (generate it with go test ./store -run TestFixtureV1 -update)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRunningOldProcessStopsAfterMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	seedV1(t, path)
	old, err := openWith(path, Options{}, schema{version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openWith(path, Options{}, testV3); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	err = old.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, storetest.NewState("x", state.StatusRunning)) })
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("old process writing a migrated file: %v, want ErrNewerSchema", err)
	}
	if _, err := svcOf(old).Query().Events(bg, 0, 0); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("old process reading a migrated file: %v, want ErrNewerSchema", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the old process modified the migrated file")
	}
}

// TestMigrate3To4GatesGainTheirReview: a schema-3 file (codec v2
// summaries, which cannot hold a gate's review) migrates to schema 4 with
// each gate's review as the engine derives it, from its state and stored
// spec; a flow whose spec no longer parses keeps no review, and the other
// summaries are unchanged. Opened without Options.ParseSpec (a Go
// program's store, which links no spec parser), the migration runs and
// every gate keeps no review.
func TestMigrate3To4GatesGainTheirReview(t *testing.T) {
	for _, parse := range []func(string, []byte) (*specs.Spec, specs.Diagnostics){exprlang.ParseSpec, nil} {
		t.Run(fmt.Sprintf("parser=%v", parse != nil), func(t *testing.T) { testMigrate3To4(t, parse) })
	}
}

func testMigrate3To4(t *testing.T, parse func(string, []byte) (*specs.Spec, specs.Diagnostics)) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	path := filepath.Join(t.TempDir(), FileName)
	ctx := context.Background()
	old, err := openWith(path, Options{}, schema{version: 3, steps: currentSchema.steps[:2]})
	if err != nil {
		t.Fatal(err)
	}
	if err := enginetest.Populate(ctx, old, enginetest.PopulateOptions{Flows: 12}); err != nil {
		t.Fatal(err)
	}
	// Flow 8's stored spec no longer parses.
	broken := "00000008-0000-4000-8000-000000000008"
	if err := old.Update(ctx, func(tx engine.Tx) error {
		st, err := tx.Get(broken)
		if err != nil {
			return err
		}
		sum := engine.Summarize(st, nil)
		st.RawSpec = "flows: [not a mapping"
		return tx.Put(st, sum, st.Stamp(st.UpdatedAt))
	}); err != nil {
		t.Fatal(err)
	}
	before := storeList(t, old, engine.ListFilter{})
	for _, g := range storeGates(t, old) {
		if g.Review != nil {
			t.Fatalf("a schema-3 summary holds a review: %+v", g)
		}
	}

	s, err := Open(path, Options{ParseSpec: parse})
	if err != nil {
		t.Fatalf("migrate 3→%d: %v", SchemaVersion, err)
	}
	if v := rawSchemaVersion(t, path); v != fmt.Sprint(SchemaVersion) {
		t.Fatalf("schema_version = %q", v)
	}
	gates := storeGates(t, s)
	if len(gates) != 3 { // flows 4 and 8, and the gate template
		t.Fatalf("%d flows at a gate, want 3", len(gates))
	}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: s}
	for _, g := range gates {
		fs, err := svc.Query().FlowWithSpec(ctx, g.FlowID)
		if err != nil {
			t.Fatal(err)
		}
		want := engine.Summarize(fs.State, fs.Flow).Review
		if g.FlowID == broken || parse == nil {
			if g.Review != nil {
				t.Fatalf("flow %s got a review (no parser: %v): %+v", g.FlowID, parse == nil, g.Review)
			}
			continue
		}
		if want == nil || g.Review == nil || *g.Review != *want {
			t.Fatalf("flow %s after the migration: review %+v, the engine's %+v", g.FlowID, g.Review, want)
		}
	}
	after := storeList(t, s, engine.ListFilter{})
	for i := range after {
		after[i].Review = nil
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("the migration changed more than the reviews:\n%+v\n%+v", before, after)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
