package store

import (
	"bytes"
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

// rawSteps reads flowID's steps meta (ok false: none) and entries
// straight from the file, by kind ‖ step id.
func rawSteps(t *testing.T, s *Store, flowID string) (stepsMeta, bool, map[string]string) {
	t.Helper()
	var (
		m  stepsMeta
		ok bool
	)
	entries := map[string]string{}
	if err := s.run(bg, modeRead, func(btx *bolt.Tx) error {
		b := btx.Bucket(bucketFlowLog)
		p := logPrefix(flowID)
		c := b.Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			switch kind := k[len(p)]; {
			case kind == stepsMetaKind && len(k) == len(p)+1:
				var err error
				if m, err = decodeStepsMeta(v); err != nil {
					return err
				}
				ok = true
			case kind == stepsStepKind:
				entries[string(k[len(p):])] = string(v)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m, ok, entries
}

// withSteps gives st n steps' outputs and attempts.
func withSteps(st *state.FlowState, n int) {
	if st.StepOutputs == nil {
		st.StepOutputs = map[string]any{}
	}
	if st.Attempts == nil {
		st.Attempts = map[string]int{}
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("s%d", i)
		st.StepOutputs[id] = map[string]any{"i": float64(i), "tags": []any{"a", "<b>", nil, true}}
		st.Attempts[id] = 1
	}
}

// TestFlowStepsWritesOnlyChanges: a short flow keeps its step outputs and
// attempts in its state; past stepsInline steps they move to bucket
// flowlog, and each later Put writes only the entries that changed,
// were added or went (a new tag), or none (the tag kept); every Get, from
// this handle (cached) or a fresh one (decoded), reads the state back as
// it was put, {} and null told apart.
func TestFlowStepsWritesOnlyChanges(t *testing.T) {
	s := newTestStore(t, Options{})
	st := storetest.NewState("f", state.StatusRunning)
	if err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, st) }); err != nil {
		t.Fatal(err)
	}
	if _, ok, e := rawSteps(t, s, "f"); ok || len(e) != 0 {
		t.Fatalf("a one-step flow has step entries: %q", e)
	}
	update(t, s, "f", func(st *state.FlowState) { withSteps(st, stepsInline+1) })
	m0, ok, e0 := rawSteps(t, s, "f")
	if !ok || m0.outputs != stepsInline+1 || m0.attempts != stepsInline+1 || len(e0) != 2*(stepsInline+1) ||
		e0["si\x00a"] != "" || e0["ss3\x00a"] != "1" || e0["ss3\x00o"] != `{"i":3,"tags":["a","\u003cb\u003e",null,true]}` {
		t.Fatalf("after growing past %d steps: meta %+v, entries %q", stepsInline, m0, e0)
	}
	// Nothing of the maps changed: the tag and every entry kept.
	update(t, s, "f", func(st *state.FlowState) { st.CurrentIdx++ })
	if m1, _, e1 := rawSteps(t, s, "f"); m1 != m0 || !reflect.DeepEqual(e1, e0) {
		t.Fatalf("an unchanged put rewrote the entries: %+v → %+v", m0, m1)
	}
	// One output replaced, one step added, one attempt removed.
	update(t, s, "f", func(st *state.FlowState) {
		st.StepOutputs["s3"] = "replaced"
		st.StepOutputs["new"] = map[string]any{}
		st.Attempts["s4"] = 2
		delete(st.Attempts, "s5")
		// Step ids are any strings: empty, with a NUL, not ASCII.
		st.StepOutputs[""], st.StepOutputs["x\x00y"], st.StepOutputs["ü"] = nil, -1.5, "ü"
		st.Attempts[""] = 0
	})
	m2, _, e2 := rawSteps(t, s, "f")
	if m2.tag == m0.tag || m2.outputs != stepsInline+5 || m2.attempts != stepsInline+1 ||
		e2["ss3\x00o"] != `"replaced"` || e2["snew\x00o"] != "{}" || e2["ss4\x00a"] != "2" || e2["ss5\x00a"] != "" ||
		e2["s\x00o"] != "null" || e2["sx\x00y\x00o"] != "-1.5" || e2["s\x00a"] != "0" {
		t.Fatalf("after a change: meta %+v, entries %q", m2, e2)
	}
	want := storeGet(t, s, "f")
	if want.StepOutputs["s3"] != "replaced" || want.Attempts["s4"] != 2 || len(want.Attempts) != stepsInline+1 ||
		want.StepOutputs["x\x00y"] != -1.5 || want.StepOutputs[""] != nil || len(want.StepOutputs) != stepsInline+5 {
		t.Fatalf("read back: %+v %+v", want.StepOutputs, want.Attempts)
	}
	reopened, err := Open(s.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := storeGet(t, reopened, "f"); !reflect.DeepEqual(got, want) {
		t.Fatalf("a fresh handle reads another state:\n got  %+v\n want %+v", got.StepOutputs, want.StepOutputs)
	}
	// A Get is a private copy: changing it changes neither the file nor
	// the cache.
	wantJSON, _ := marshalJSON(want)
	mine := storeGet(t, s, "f")
	mine.StepOutputs["s1"].(map[string]any)["i"] = 99.0
	mine.StepOutputs["s1"].(map[string]any)["tags"].([]any)[0] = "changed"
	mine.Attempts["s1"] = 7
	if got, _ := marshalJSON(storeGet(t, s, "f")); !bytes.Equal(got, wantJSON) {
		t.Fatalf("a Get's copy changed the cache:\n got  %s\n want %s", got, wantJSON)
	}
	// Empty maps and nil maps stay what they were; the entries go.
	update(t, s, "f", func(st *state.FlowState) { st.StepOutputs, st.Attempts = map[string]any{}, nil })
	if m, ok, e := rawSteps(t, s, "f"); !ok || m.outputs != 0 || m.attempts != 0 || len(e) != 0 {
		t.Fatalf("after emptying: meta %+v, entries %q", m, e)
	}
	for _, h := range []*Store{s, reopened} {
		if got := storeGet(t, h, "f"); got.StepOutputs == nil || len(got.StepOutputs) != 0 || got.Attempts != nil {
			t.Fatalf("emptied maps read back as %#v and %#v", got.StepOutputs, got.Attempts)
		}
	}
	// Delete removes the entries.
	if err := s.Update(bg, func(tx engine.Tx) error { return tx.Delete("f") }); err != nil {
		t.Fatal(err)
	}
	if _, ok, e := rawSteps(t, s, "f"); ok || len(e) != 0 {
		t.Fatalf("a deleted flow kept its step entries: %q", e)
	}
}

// TestFlowStepsOtherWriter: another handle's writes (changed entries, a
// delete and a re-creation under the same id) are seen by a handle that
// cached the flow's steps, and its own writes over them stay right.
func TestFlowStepsOtherWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.NewState("f", state.StatusRunning)
	withSteps(st, 20)
	if err := a.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, st) }); err != nil {
		t.Fatal(err)
	}
	_ = storeGet(t, a, "f") // cached by a
	update(t, b, "f", func(st *state.FlowState) { st.StepOutputs["s2"] = "by b"; st.Attempts["s2"] = 3 })
	if got := storeGet(t, a, "f"); got.StepOutputs["s2"] != "by b" || got.Attempts["s2"] != 3 {
		t.Fatalf("a after b changed s2: %v %d", got.StepOutputs["s2"], got.Attempts["s2"])
	}
	// b changes s2 back while a's cache holds "by b"; a then writes s9.
	update(t, b, "f", func(st *state.FlowState) { st.StepOutputs["s2"] = "again" })
	update(t, a, "f", func(st *state.FlowState) { st.StepOutputs["s9"] = "by a" })
	got := storeGet(t, b, "f")
	if got.StepOutputs["s2"] != "again" || got.StepOutputs["s9"] != "by a" {
		t.Fatalf("b after a wrote over its change: %v %v", got.StepOutputs["s2"], got.StepOutputs["s9"])
	}
	// b deletes the flow and creates another under the same id.
	if err := b.Update(bg, func(tx engine.Tx) error { return tx.Delete("f") }); err != nil {
		t.Fatal(err)
	}
	other := storetest.NewState("f", state.StatusRunning)
	other.StepOutputs, other.Attempts = map[string]any{}, map[string]int{}
	for i := 0; i < 20; i++ {
		other.StepOutputs[fmt.Sprintf("s%d", i)] = "other"
	}
	if err := b.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, other) }); err != nil {
		t.Fatal(err)
	}
	want := storeGet(t, b, "f")
	if got := storeGet(t, a, "f"); !reflect.DeepEqual(got, want) {
		t.Fatalf("a after b recreated the flow:\n got  %+v\n want %+v", got.StepOutputs, want.StepOutputs)
	}
	if err := a.Check(bg); err != nil {
		t.Fatal(err)
	}
}

// TestFlowStepsDamaged: a bad or missing entry makes the flow damaged
// (Get), not the store; Check reports it and QuarantineDamaged removes the
// flow with its entries.
func TestFlowStepsDamaged(t *testing.T) {
	for name, damage := range map[string]func(b *bolt.Bucket) error{
		"output not JSON": func(b *bolt.Bucket) error { return b.Put(stepsKey("bad", stepsOutputKind, "s1"), []byte("{not json")) },
		"attempts not a number": func(b *bolt.Bucket) error {
			return b.Put(stepsKey("bad", stepsAttemptKind, "s1"), []byte("x"))
		},
		"entry missing":      func(b *bolt.Bucket) error { return b.Delete(stepsKey("bad", stepsOutputKind, "s1")) },
		"meta too short":     func(b *bolt.Bucket) error { return b.Put(stepsMetaKey("bad"), []byte{1}) },
		"key without a kind": func(b *bolt.Bucket) error { return b.Put(append(logPrefix("bad"), "ss1"...), []byte("1")) },
	} {
		t.Run(name, func(t *testing.T) {
			s := newTestStoreNoCheck(t)
			for _, id := range []string{"bad", "good"} {
				st := storetest.NewState(id, state.StatusRunning)
				withSteps(st, 20)
				if err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, st) }); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.run(bg, modeWrite, func(btx *bolt.Tx) error { return damage(btx.Bucket(bucketFlowLog)) }); err != nil {
				t.Fatal(err)
			}
			fresh, err := Open(s.Path(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = fresh.View(bg, func(tx engine.Tx) error { _, err := tx.Get("bad"); return err })
			if !errors.Is(err, engine.ErrDamaged) {
				t.Fatalf("Get of a flow with a damaged step entry: %v, want ErrDamaged", err)
			}
			if err := fresh.Check(bg); err == nil {
				t.Fatal("Check found nothing")
			}
			q, err := fresh.QuarantineDamaged(bg)
			if err != nil || len(q) != 1 || q[0].FlowID != "bad" {
				t.Fatalf("quarantine: %+v %v", q, err)
			}
			if _, ok, e := rawSteps(t, fresh, "bad"); ok || len(e) != 0 {
				t.Fatalf("the quarantined flow's entries are still there: %q", e)
			}
			if got := storeGet(t, fresh, "good"); len(got.StepOutputs) != 20 {
				t.Fatalf("the good flow: %d outputs", len(got.StepOutputs))
			}
			if err := fresh.Check(bg); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFixtureV5 opens the checked-in schema-5 store (testdata/store-v5.db.gz,
// written by stratum at 55ddafe: a flow of 120 steps, one transition on
// it, a flow with nil maps, one with empty maps, one with odd step ids and
// values): Open backs it up to .bak-v5 and migrates it (5→6: the long
// flow's step outputs and attempts moved to bucket flowlog, the short
// ones left in their states), and every flow reads back exactly as the
// old file holds it, and encodes to the same JSON; the migrated flow takes
// a transition.
func TestFixtureV5(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	gunzipFile(t, filepath.Join("testdata", "store-v5.db.gz"), path)
	if v := rawSchemaVersion(t, path); v != "5" {
		t.Fatalf("fixture schema_version = %q, want 5", v)
	}
	// What the old file holds, decoded as schema 5 decoded it: the state's
	// JSON, its records and trace from bucket flowlog.
	want := map[string]*state.FlowState{}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(btx *bolt.Tx) error {
		old := &tx{s: &Store{path: path}, btx: btx}
		return btx.Bucket(bucketFlows).ForEach(func(k, v []byte) error {
			st := new(state.FlowState)
			if err := unmarshalJSON(bytes.Clone(v), st); err != nil {
				return err
			}
			if err := old.readLog(st); err != nil {
				return err
			}
			want[string(k)] = st
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if len(want) != 4 || len(want["long"].StepOutputs) != 119 || len(want["long"].Attempts) != 121 || len(want["long"].Records) != 120 ||
		want["nilmaps"].StepOutputs != nil || want["empty"].Attempts == nil || len(want["odd"].StepOutputs) != 6 {
		t.Fatalf("the fixture holds %d flows, long %d outputs", len(want), len(want["long"].StepOutputs))
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("open v5 fixture: %v", err)
	}
	if v := rawSchemaVersion(t, path); v != fmt.Sprint(SchemaVersion) {
		t.Fatalf("schema_version = %q after opening, want %d", v, SchemaVersion)
	}
	if v := rawSchemaVersion(t, BackupPath(path, 5)); v != "5" {
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
		gj, _ := marshalJSON(got)
		wj, _ := marshalJSON(w)
		if !bytes.Equal(gj, wj) {
			t.Errorf("flow %s encodes otherwise after migration:\n got  %s\n want %s", id, gj, wj)
		}
		_, split, _ := rawSteps(t, s, id)
		if split != (id == "long") {
			t.Errorf("flow %s's steps in bucket flowlog: %v", id, split)
		}
	}
	if m, _, e := rawSteps(t, s, "long"); m.outputs != 119 || m.attempts != 121 || len(e) != 240 || e["ss5\x00o"] != `"replaced"` {
		t.Fatalf("long's entries after migration: %+v, %d", m, len(e))
	}
	update(t, s, "long", func(st *state.FlowState) { st.StepOutputs["s200"] = 1.0; st.Attempts["s200"] = 1 })
	if got := storeGet(t, s, "long"); got.StepOutputs["s200"] != 1.0 || len(got.Records) != 120 || got.StepOutputs["s5"] != "replaced" {
		t.Fatalf("long after a transition: %d outputs", len(got.StepOutputs))
	}
}

// TestFlowLogAppendsWhileRead: one goroutine appends records and steps to
// a flow while others read it through the same Store, whose cache each
// write extends in place (run it with -race): every read sees a state as
// one write left it, and the last read the last write.
func TestFlowLogAppendsWhileRead(t *testing.T) {
	s := newTestStore(t, Options{})
	st := storetest.NewState("f", state.StatusRunning)
	withSteps(st, 20)
	if err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, st) }); err != nil {
		t.Fatal(err)
	}
	const writes = 60
	done := make(chan struct{})
	errs := make(chan error, 2)
	for r := 0; r < 2; r++ {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				var got *state.FlowState
				if err := s.View(bg, func(tx engine.Tx) (err error) { got, err = tx.Get("f"); return err }); err != nil {
					errs <- err
					return
				}
				// Each write added one record and one step: they agree.
				if len(got.Records) != len(got.StepOutputs)-19 || len(got.Attempts) != len(got.StepOutputs) {
					errs <- fmt.Errorf("a read saw %d records, %d outputs and %d attempts", len(got.Records), len(got.StepOutputs), len(got.Attempts))
					return
				}
				got.Records = append(got.Records, state.Record{StepID: "reader's own"})
			}
		}()
	}
	for i := 0; i < writes; i++ {
		update(t, s, "f", func(st *state.FlowState) {
			id := fmt.Sprintf("w%d", i)
			withRecords(st, len(st.Records)+1)
			st.StepOutputs[id], st.Attempts[id] = float64(i), 1
		})
	}
	close(done)
	for r := 0; r < 2; r++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := storeGet(t, s, "f"); len(got.Records) != 1+writes || len(got.StepOutputs) != 20+writes || got.Records[writes].StepID != fmt.Sprintf("s%d", writes) {
		t.Fatalf("after %d writes: %d records, %d outputs", writes, len(got.Records), len(got.StepOutputs))
	}
}

// TestFlowStepsAndRecordsRewrittenApart: the steps' entries share bucket
// flowlog with the records; rewriting all the records (a changed record)
// keeps the steps' entries; a handle that did not read the steps compares
// with the stored entries and writes only the change; rewriting all the
// steps' entries (damaged ones) keeps the records.
func TestFlowStepsAndRecordsRewrittenApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.NewState("f", state.StatusRunning)
	withSteps(st, 20)
	withRecords(st, 20)
	if err := a.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, st) }); err != nil {
		t.Fatal(err)
	}
	m0, _, e0 := rawSteps(t, a, "f")
	update(t, a, "f", func(st *state.FlowState) { st.Records[1].Reverted = true })
	lm, le := rawLog(t, a, "f")
	if m1, _, e1 := rawSteps(t, a, "f"); m1 != m0 || !reflect.DeepEqual(e1, e0) {
		t.Fatalf("rewriting the records changed the steps' entries: %+v → %+v", m0, m1)
	}
	update(t, b, "f", func(st *state.FlowState) { st.StepOutputs["s2"] = "by b" })
	// A handle that knows nothing of the flow's steps writes a state it did
	// not read: it reads the stored entries and writes only the change.
	fresh, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mine := storeGet(t, a, "f")
	mine.StepOutputs["s3"] = "by a"
	if err := fresh.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, mine) }); err != nil {
		t.Fatal(err)
	}
	_, _, e2 := rawSteps(t, a, "f")
	for k, v := range e0 {
		if want := map[string]string{"ss2\x00o": `"by b"`, "ss3\x00o": `"by a"`}[k]; want != "" {
			v = want
		}
		if e2[k] != v {
			t.Fatalf("entry %q: %q, want %q", k, e2[k], v)
		}
	}
	// Damaged entries are all rewritten (by b, whose cache is stale), and
	// the records kept.
	mine = storeGet(t, fresh, "f")
	mine.StepOutputs["s5"] = "by b"
	if err := a.run(bg, modeWrite, func(btx *bolt.Tx) error {
		return btx.Bucket(bucketFlowLog).Put(stepsKey("f", stepsOutputKind, "s4"), []byte("{not json"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, mine) }); err != nil {
		t.Fatal(err)
	}
	records := func(e map[string]string) map[string]string { // the records' and trace's entries
		out := map[string]string{}
		for k, v := range e {
			if k[0] == logRecordKind || k[0] == logTraceKind {
				out[k] = v
			}
		}
		return out
	}
	if m, e := rawLog(t, a, "f"); m.records != lm.records || len(records(le)) != 20 || !reflect.DeepEqual(records(e), records(le)) {
		t.Fatalf("rewriting the steps' entries changed the records: %d → %d", lm.records, m.records)
	}
	for _, h := range []*Store{a, b} {
		got := storeGet(t, h, "f")
		if len(got.Records) != 20 || !got.Records[1].Reverted || got.StepOutputs["s2"] != "by b" || got.StepOutputs["s3"] != "by a" ||
			got.StepOutputs["s5"] != "by b" || len(got.StepOutputs) != 20 {
			t.Fatalf("read back: %d records, outputs %v", len(got.Records), got.StepOutputs)
		}
	}
	if err := a.Check(bg); err != nil {
		t.Fatal(err)
	}
}
