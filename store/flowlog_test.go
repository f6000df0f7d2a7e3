package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

// rawLog reads flowID's flowlog meta and entries (records and trace)
// straight from the file.
func rawLog(t *testing.T, s *Store, flowID string) (logMeta, map[string]string) {
	t.Helper()
	var m logMeta
	entries := map[string]string{}
	if err := s.run(bg, modeRead, func(btx *bolt.Tx) error {
		b := btx.Bucket(bucketFlowLog)
		raw := b.Get(logMetaKey(flowID))
		if raw == nil {
			return fmt.Errorf("flow %s has no flowlog meta", flowID)
		}
		var err error
		if m, err = decodeLogMeta(raw); err != nil {
			return err
		}
		p := logPrefix(flowID)
		c := b.Cursor()
		for k, v := c.Seek(p); k != nil && len(k) > len(p) && string(k[:len(p)]) == string(p); k, v = c.Next() {
			if k[len(p)] != logMetaKind {
				entries[string(k[len(p):])] = string(v)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m, entries
}

func withRecords(st *state.FlowState, n int) {
	for i := len(st.Records); i < n; i++ {
		st.Records = append(st.Records, state.Record{Type: state.RecordStep, StepID: fmt.Sprintf("s%d", i), Attempts: 1, DurationMS: int64(i)})
	}
}

// update reads flowID, lets change edit it, and puts it back.
func update(t *testing.T, s *Store, flowID string, change func(st *state.FlowState)) {
	t.Helper()
	var st *state.FlowState
	if err := s.View(bg, func(tx engine.Tx) (err error) { st, err = tx.Get(flowID); return err }); err != nil {
		t.Fatal(err)
	}
	change(st)
	if err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, st) }); err != nil {
		t.Fatal(err)
	}
}

// TestFlowLogAppends: a transition that adds records and trace entries
// writes only those (the tag and every earlier entry unchanged); one that
// changes an earlier record rewrites them under a new tag; every Get, from
// this handle (cached) or a fresh one (decoded), reads the state back.
func TestFlowLogAppends(t *testing.T) {
	s := newTestStore(t, Options{})
	st := storetest.NewState("f", state.StatusRunning)
	withRecords(st, 5)
	st.Trace = []json.RawMessage{json.RawMessage(`{"a": 1}`)}
	if err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, st) }); err != nil {
		t.Fatal(err)
	}
	m0, e0 := rawLog(t, s, "f")
	if m0.records != 5 || m0.trace != 1 || len(e0) != 6 || e0["t\x00\x00\x00\x00"] != `{"a":1}` {
		t.Fatalf("after the first put: meta %+v, entries %q", m0, e0)
	}
	update(t, s, "f", func(st *state.FlowState) {
		withRecords(st, 7)
		st.Trace = append(st.Trace, json.RawMessage(`{"b":"<x>"}`))
	})
	m1, e1 := rawLog(t, s, "f")
	if m1.tag != m0.tag || m1.records != 7 || m1.trace != 2 || len(e1) != 9 {
		t.Fatalf("an append rewrote the entries: meta %+v → %+v", m0, m1)
	}
	for k, v := range e0 {
		if e1[k] != v {
			t.Fatalf("entry %q changed by an append: %q → %q", k, v, e1[k])
		}
	}
	reopened, err := Open(s.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*Store{s, reopened} {
		got := storeGet(t, h, "f")
		if len(got.Records) != 7 || got.Records[6].StepID != "s6" || got.Records[0].Agent == nil || *got.Records[0].Agent != "claude" ||
			len(got.Trace) != 2 || string(got.Trace[1]) != `{"b":"\u003cx\u003e"}` {
			t.Fatalf("read back: records %+v trace %q", got.Records, got.Trace)
		}
	}
	// A change to an earlier record (a revert marks a gate record): all
	// entries rewritten, under a new tag.
	update(t, s, "f", func(st *state.FlowState) { st.Records[1].Reverted = true })
	m2, _ := rawLog(t, s, "f")
	if m2.tag == m1.tag || m2.records != 7 {
		t.Fatalf("a changed record kept the tag: %+v → %+v", m1, m2)
	}
	for _, h := range []*Store{s, reopened} {
		if got := storeGet(t, h, "f"); !got.Records[1].Reverted || got.Records[2].Reverted {
			t.Fatalf("the changed record read back as %+v", got.Records[:3])
		}
	}
	// Fewer records (a round archived): rewritten, and read back empty.
	update(t, s, "f", func(st *state.FlowState) { st.Records = []state.Record{}; st.Trace = nil })
	for _, h := range []*Store{s, reopened} {
		if got := storeGet(t, h, "f"); got.Records == nil || len(got.Records) != 0 || got.Trace != nil {
			t.Fatalf("archived: records %#v trace %#v", got.Records, got.Trace)
		}
	}
	if _, e := rawLog(t, s, "f"); len(e) != 0 {
		t.Fatalf("entries left after the records went: %q", e)
	}
}

// TestFlowLogOtherWriter: what a handle cached is not trusted once another
// handle (another process) changed the flow: an append, a rewrite, a
// delete and a new flow under the same id at the same version and time.
func TestFlowLogOtherWriter(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	path := filepath.Join(t.TempDir(), FileName)
	a, err := Open(path, Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	put := func(s *Store, st *state.FlowState) {
		t.Helper()
		if err := s.Update(bg, func(tx engine.Tx) error { return storetest.PutAt(tx, st, clock()) }); err != nil {
			t.Fatal(err)
		}
	}
	st := storetest.NewState("f", state.StatusRunning)
	withRecords(st, 3)
	put(a, st)
	_ = storeGet(t, a, "f") // cached by a
	update(t, b, "f", func(st *state.FlowState) { withRecords(st, 4) })
	if got := storeGet(t, a, "f"); len(got.Records) != 4 || got.Records[3].StepID != "s3" {
		t.Fatalf("a after b appended: %+v", got.Records)
	}
	update(t, b, "f", func(st *state.FlowState) { st.Records[0].StepID = "changed" })
	if got := storeGet(t, a, "f"); got.Records[0].StepID != "changed" {
		t.Fatalf("a after b rewrote: %+v", got.Records)
	}
	// a appends after b's rewrite: its cache is stale, its write still right.
	update(t, a, "f", func(st *state.FlowState) { withRecords(st, 5) })
	if got := storeGet(t, b, "f"); len(got.Records) != 5 || got.Records[0].StepID != "changed" {
		t.Fatalf("b after a appended: %+v", got.Records)
	}
	// b deletes the flow and creates another under the same id, at the
	// same version and time, with other records of the same number.
	if err := b.Update(bg, func(tx engine.Tx) error { return tx.Delete("f") }); err != nil {
		t.Fatal(err)
	}
	other := storetest.NewState("f", state.StatusRunning)
	for i := 0; i < 5; i++ {
		other.Records = append(other.Records, state.Record{Type: state.RecordSkip, StepID: fmt.Sprintf("o%d", i)})
	}
	put(b, other)
	want := storeGet(t, b, "f")
	for i := 0; i < 4; i++ {
		update(t, b, "f", func(st *state.FlowState) {})
	}
	want = storeGet(t, b, "f")
	if got := storeGet(t, a, "f"); !reflect.DeepEqual(got, want) {
		t.Fatalf("a after b recreated the flow:\n got  %+v\n want %+v", got.Records, want.Records)
	}
}

// TestFlowLogDamaged: a missing or undecodable entry makes the flow
// damaged (Get), not the store, and QuarantineDamaged removes it with its
// entries.
func TestFlowLogDamaged(t *testing.T) {
	s := newTestStore(t, Options{})
	for _, id := range []string{"bad", "good"} {
		st := storetest.NewState(id, state.StatusRunning)
		withRecords(st, 3)
		if err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, st) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.run(bg, modeWrite, func(btx *bolt.Tx) error {
		return btx.Bucket(bucketFlowLog).Put(logKey("bad", logRecordKind, 1), []byte("{not json"))
	}); err != nil {
		t.Fatal(err)
	}
	fresh, err := Open(s.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = fresh.View(bg, func(tx engine.Tx) error { _, err := tx.Get("bad"); return err })
	if !errors.Is(err, engine.ErrDamaged) {
		t.Fatalf("Get of a flow with a bad record: %v, want ErrDamaged", err)
	}
	q, err := fresh.QuarantineDamaged(bg)
	if err != nil || len(q) != 1 || q[0].FlowID != "bad" {
		t.Fatalf("quarantine: %+v %v", q, err)
	}
	if _, e := rawLog(t, fresh, "good"); len(e) != 3 {
		t.Fatalf("the good flow's entries: %q", e)
	}
	if err := fresh.run(bg, modeRead, func(btx *bolt.Tx) error {
		if btx.Bucket(bucketFlowLog).Get(logMetaKey("bad")) != nil {
			return errors.New("the quarantined flow's entries are still there")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestFixtureRecordsInline opens the checked-in stores whose flow states
// hold their records and trace inside their JSON — testdata/store-v3.db.gz,
// written by stratum 79e5101, and testdata/store-v4.db.gz, by cde0ff1
// (schema 4: summaries with gate reviews) — each written by the same
// transactions: Open backs the file up and migrates it (up to 4→5: records
// and trace moved to bucket flowlog), and every flow reads back exactly as
// the old file holds it; the migrated flows take appends.
func TestFixtureRecordsInline(t *testing.T) {
	for _, v := range []int{3, 4} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { testFixtureRecordsInline(t, v) })
	}
}

func testFixtureRecordsInline(t *testing.T, version int) {
	path := filepath.Join(t.TempDir(), FileName)
	gunzipFile(t, filepath.Join("testdata", fmt.Sprintf("store-v%d.db.gz", version)), path)
	if v := rawSchemaVersion(t, path); v != fmt.Sprint(version) {
		t.Fatalf("fixture schema_version = %q, want %d", v, version)
	}
	// What the old file holds, decoded as the old schema decoded it.
	want := map[string]*state.FlowState{}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(btx *bolt.Tx) error {
		return btx.Bucket(bucketFlows).ForEach(func(k, v []byte) error {
			st := new(state.FlowState)
			if err := json.Unmarshal(v, st); err != nil {
				t.Fatal(err)
			}
			want[string(k)] = st
			return nil
		})
	})
	_ = db.Close()
	if len(want) != 3 || len(want["long"].Records) != 41 || len(want["long"].Trace) != 3 || want["nilrec"].Records != nil || want["empty"].Records == nil {
		t.Fatalf("fixture holds %d flows, long %d records and %d trace entries", len(want), len(want["long"].Records), len(want["long"].Trace))
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("open v%d fixture: %v", version, err)
	}
	if v := rawSchemaVersion(t, path); v != fmt.Sprint(SchemaVersion) {
		t.Fatalf("schema_version = %q after opening, want %d", v, SchemaVersion)
	}
	if v := rawSchemaVersion(t, BackupPath(path, version)); v != fmt.Sprint(version) {
		t.Fatalf("backup schema_version = %q", v)
	}
	if err := s.Check(bg); err != nil {
		t.Fatal(err)
	}
	for id, w := range want {
		got := storeGet(t, s, id)
		w.RawSpec = got.RawSpec // a reference in the file, the text from Get
		if !reflect.DeepEqual(got, w) {
			t.Errorf("flow %s after migration:\n got  %+v\n want %+v", id, got, w)
		}
	}
	if m, e := rawLog(t, s, "long"); m.records != 41 || m.trace != 3 || len(e) != 44 {
		t.Fatalf("long's entries after migration: %+v, %d", m, len(e))
	}
	update(t, s, "long", func(st *state.FlowState) { withRecords(st, 42) })
	if got := storeGet(t, s, "long"); len(got.Records) != 42 || got.Records[40].Type != state.RecordGate {
		t.Fatalf("long after an append: %d records", len(got.Records))
	}
}

// TestLogCacheBounded: the cache keeps at most logCacheSize flows and
// logCacheBytes of entries, and does not keep a flow larger than that.
func TestLogCacheBounded(t *testing.T) {
	var c logCache
	for i := 0; i < 3*logCacheSize; i++ {
		c.put(map[string]*cachedLog{fmt.Sprint(i): {tag: 1, records: make([]state.Record, 10)}})
	}
	if len(c.logs) != logCacheSize || c.bytes != logCacheSize*10*recordSize {
		t.Fatalf("%d flows, %d bytes cached", len(c.logs), c.bytes)
	}
	big := &cachedLog{tag: 1, trace: []json.RawMessage{make(json.RawMessage, logCacheBytes/2)}}
	c.put(map[string]*cachedLog{"big1": big, "big2": big})
	if c.bytes > logCacheBytes {
		t.Fatalf("%d bytes cached, more than %d", c.bytes, logCacheBytes)
	}
	c.put(map[string]*cachedLog{"huge": {tag: 1, trace: []json.RawMessage{make(json.RawMessage, logCacheBytes+1)}}})
	if c.get("huge") != nil {
		t.Fatal("an entry larger than the cache was cached")
	}
	c.put(map[string]*cachedLog{"big1": nil, "big2": nil})
	total := 0
	for _, l := range c.logs {
		total += l.size()
	}
	if total != c.bytes {
		t.Fatalf("the cache counts %d bytes, holds %d", c.bytes, total)
	}
}
