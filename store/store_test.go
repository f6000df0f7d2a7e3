package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

var bg = context.Background()

// newTestStore opens a store in a temp dir and checks its consistency when
// the test ends.
func newTestStore(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "home", FileName), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Check(bg); err != nil {
			t.Errorf("consistency check: %v", err)
		}
	})
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) engine.Store { return newTestStore(t, Options{Now: now}) })
}

// fakeClock is a settable clock for Options.Now.
type fakeClock struct{ ns atomic.Int64 }

func newClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t.UnixNano())
	return c
}
func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestOpenCreatesAndReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", FileName)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Path() != path {
		t.Fatalf("Path = %q, want %q", s.Path(), path)
	}
	storePut(t, s, storetest.NewState("f1", state.StatusRunning))
	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if got := storeGet(t, s2, "f1"); got.Version != 1 {
		t.Fatalf("reopened store lost the flow: %+v", got)
	}
	// Idle stores hold no lock: a raw exclusive bbolt open succeeds at once.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("an idle Store holds the file lock: %v", err)
	}
	_ = db.Close()
}

func TestOpenEmptyFileIsInitialised(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open of a 0-byte file: %v", err)
	}
	storePut(t, s, storetest.NewState("f1", state.StatusRunning))
}

func TestOpenRejectsBadFiles(t *testing.T) {
	validDB := func(t *testing.T) []byte {
		path := filepath.Join(t.TempDir(), FileName)
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(bg, func(tx engine.Tx) error {
			for i := 0; i < 300; i++ {
				st := storetest.NewState(fmt.Sprintf("flow-%03d", i), state.StatusRunning)
				st.RawSpec = strings.Repeat("x", 2000)
				if err := storetest.Put(tx, st); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	foreign := func(t *testing.T) []byte {
		path := filepath.Join(t.TempDir(), "other.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("allocs"))
			if err != nil {
				return err
			}
			return b.Put([]byte("k"), []byte("v"))
		}); err != nil {
			t.Fatal(err)
		}
		_ = db.Close()
		data, _ := os.ReadFile(path)
		return data
	}
	withVersion := func(version string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			path := filepath.Join(t.TempDir(), FileName)
			if _, err := Open(path, Options{}); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte(version))
			}); err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
			data, _ := os.ReadFile(path)
			return data
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name    string
		content func(t *testing.T) []byte
		kind    error
		detail  string
	}{
		{"random bytes", func(*testing.T) []byte {
			b := make([]byte, 64<<10)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}, ErrCorrupt, "not a bbolt database"},
		{"text file", func(*testing.T) []byte {
			return []byte("flows:\n  hello:\n    steps: []\n")
		}, ErrCorrupt, "not a bbolt database"},
		{"truncated", func(t *testing.T) []byte { d := validDB(t); return d[:len(d)/2] }, ErrCorrupt, "truncated"},
		{"truncated to meta pages", func(t *testing.T) []byte { return validDB(t)[:3*4096] }, ErrCorrupt, "truncated"},
		{"truncated to one page", func(t *testing.T) []byte { return validDB(t)[:4096] }, ErrCorrupt, "truncated: the file is 4096 bytes"},
		{"truncated to a few bytes", func(t *testing.T) []byte { return validDB(t)[:100] }, ErrCorrupt, "truncated"},
		{"damaged meta pages", func(t *testing.T) []byte {
			d := validDB(t)
			for _, page := range []int{0, 4096} {
				for i := page + 16; i < page+80; i++ {
					d[i] ^= 0x5a
				}
			}
			return d
		}, ErrCorrupt, ""},
		{"foreign bbolt", foreign, ErrForeign, `"allocs"`},
		{"newer schema", withVersion("99"), ErrNewerSchema, "schema version 99"},
		{"garbage schema version", withVersion("one"), ErrCorrupt, "schema_version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			content := tc.content(t)
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path, Options{})
			if err == nil {
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %v; want kind %v", err, tc.kind)
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != path || !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			if fe.Hint == "" {
				t.Fatalf("error says nothing about what to do: %v", err)
			}
			if !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("error %q lacks %q", err, tc.detail)
			}
			after, rerr := os.ReadFile(path)
			if rerr != nil || !bytes.Equal(after, content) {
				t.Fatalf("the file was modified (%d → %d bytes, %v)", len(content), len(after), rerr)
			}
			if _, err := os.Stat(BackupPath(path, 1)); err == nil {
				t.Fatal("a backup was written for a rejected file")
			}
		})
	}
}

// A store path that is a symlink to a missing file is refused, naming the
// target, and nothing is created where the link points.
func TestOpenDanglingSymlink(t *testing.T) {
	for _, name := range []string{"gone.db", filepath.Join("no-such-dir", "gone.db")} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, name)
			path := filepath.Join(dir, FileName)
			if err := os.Symlink(target, path); err != nil {
				t.Skip("no symlinks:", err)
			}
			_, err := Open(path, Options{})
			if !errors.Is(err, ErrMissing) {
				t.Fatalf("Open through a dangling symlink: %v, want ErrMissing", err)
			}
			want := "the store path is a symlink to " + target + ", which does not exist"
			if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "deleted or moved") {
				t.Fatalf("error %q, want it to say %q", err, want)
			}
			if _, serr := os.Stat(target); serr == nil {
				t.Fatal("Open created the symlink's target")
			}
		})
	}
}

func TestStoreFileDeletedAfterOpen(t *testing.T) {
	s := newTestStoreNoCheck(t)
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, storetest.NewState("f", state.StatusRunning)) })
	if !errors.Is(err, ErrMissing) {
		t.Fatalf("Update on a deleted file: %v, want ErrMissing", err)
	}
	if _, statErr := os.Stat(s.Path()); statErr == nil {
		t.Fatal("Update recreated the deleted store file")
	}
}

func newTestStoreNoCheck(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCorruptionAfterOpenIsAnError(t *testing.T) {
	s := newTestStoreNoCheck(t)
	if err := s.Update(bg, func(tx engine.Tx) error {
		for i := 0; i < 200; i++ {
			if err := storetest.Put(tx, storetest.NewState(fmt.Sprintf("f%03d", i), state.StatusRunning)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(), data[:len(data)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, the process must not crash: each call returns.
	err = s.View(bg, func(tx engine.Tx) error {
		_, err := tx.List(engine.ListFilter{})
		return err
	})
	if err == nil {
		t.Fatal("List over a truncated file succeeded")
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("List over a truncated file: %v, want ErrCorrupt", err)
	}
}

func TestLockTimeout(t *testing.T) {
	s := newTestStore(t, Options{LockTimeout: 150 * time.Millisecond})
	// Another "process" holds the write lock.
	db, err := bolt.Open(s.Path(), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ran := false
	err = s.Update(bg, func(tx engine.Tx) error { ran = true; return nil })
	if !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("Update while locked: %v, want ErrLocked", err)
	}
	if ran {
		t.Fatal("fn ran without the lock")
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("gave up after %v, before LockTimeout", el)
	}
	// Context cancellation interrupts the wait.
	c, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	if err := s.View(c, func(engine.Tx) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("View with an expiring context: %v", err)
	}
	// Released within the timeout: the waiter gets through.
	go func() { time.Sleep(50 * time.Millisecond); _ = db.Close() }()
	if err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, storetest.NewState("f", state.StatusRunning)) }); err != nil {
		t.Fatalf("Update after the lock was released: %v", err)
	}
}

func TestTxUnusableAfterReturn(t *testing.T) {
	s := newTestStore(t, Options{})
	var leaked engine.Tx
	if err := s.View(bg, func(tx engine.Tx) error { leaked = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := leaked.Get("x"); !errors.Is(err, ErrTxDone) {
		t.Fatalf("Get on a finished Tx: %v, want ErrTxDone", err)
	}
}

func TestInvalidIDs(t *testing.T) {
	s := newTestStore(t, Options{})
	for _, id := range []string{"", "a\x00b", strings.Repeat("x", 600)} {
		err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, storetest.NewState(id, state.StatusRunning)) })
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Put with id %q: %v, want ErrInvalid", id, err)
		}
	}
}

// TestPutStoresTheGivenSummary: the summary is stored as given, except the
// stamps (the state's), and must belong to the state.
func TestPutStoresTheGivenSummary(t *testing.T) {
	clock := newClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	s := newTestStore(t, Options{Now: clock.Now})
	st := storetest.NewState("f", state.StatusRunning)
	sum := engine.Summarize(st, nil)
	sum.TotalSteps, sum.CurrentStep, sum.StepNumber = 7, "s2", 2
	sum.UpdatedAt, sum.Version = time.Unix(1, 0), 99 // not the state's: replaced by its stamps
	expect := st.Stamp(clock.Now())
	if err := s.Update(bg, func(tx engine.Tx) error { return tx.Put(st, sum, expect) }); err != nil {
		t.Fatal(err)
	}
	got := storeList(t, s, engine.ListFilter{})[0]
	if got.TotalSteps != 7 || got.Status != state.StatusRunning || got.CurrentStep != "s2" || got.StepNumber != 2 || got.Version != 1 {
		t.Fatalf("summary = %+v", got)
	}
	if !got.UpdatedAt.Equal(clock.Now()) || !got.CreatedAt.Equal(clock.Now()) {
		t.Fatalf("UpdatedAt %v, want the state's stamp %v", got.UpdatedAt, clock.Now())
	}
	for name, bad := range map[string]func(*state.FlowSummary){
		"status":  func(s *state.FlowSummary) { s.Status = "hijacked" },
		"flow id": func(s *state.FlowSummary) { s.FlowID = "other" },
	} {
		wrong := engine.Summarize(st, nil)
		bad(&wrong)
		st.Version = 2
		err := s.Update(bg, func(tx engine.Tx) error { return tx.Put(st, wrong, 1) })
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Put with a summary of another %s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestListTieBreakAndManyFlows(t *testing.T) {
	clock := newClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	s := newTestStore(t, Options{Now: clock.Now})
	// Same timestamp for all: order falls back to flow id, descending.
	if err := s.Update(bg, func(tx engine.Tx) error {
		for i := 0; i < 500; i++ {
			if err := storetest.PutAt(tx, storetest.NewState(fmt.Sprintf("f%03d", i), state.StatusRunning), clock.Now()); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	all := storeList(t, s, engine.ListFilter{})
	if len(all) != 500 || all[0].FlowID != "f499" || all[499].FlowID != "f000" {
		t.Fatalf("List of 500 = %d flows, first %s", len(all), all[0].FlowID)
	}
}

func TestGC(t *testing.T) {
	clock := newClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	s := newTestStore(t, Options{Now: clock.Now})
	mk := func(id string, status state.FlowStatus) {
		st := storetest.NewState(id, status)
		if status == state.StatusAwaitingGate {
			st.Gate = &state.PendingGate{StepID: "g"}
		}
		if err := s.Update(bg, func(tx engine.Tx) error {
			if err := storetest.PutAt(tx, st, clock.Now()); err != nil {
				return err
			}
			return tx.Append(engine.Event{FlowID: id, Type: engine.EventFlowCreated})
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, status := range []state.FlowStatus{state.StatusComplete, state.StatusKilled, state.StatusFailed,
		state.StatusBudgetExhausted, state.StatusRunning, state.StatusAwaitingGate} {
		mk("old-"+string(status), status)
	}
	clock.Advance(48 * time.Hour)
	mk("new-complete", state.StatusComplete)
	mk("new-running", state.StatusRunning)
	clock.Advance(time.Hour)

	n, err := s.GC(bg, 24*time.Hour)
	if err != nil || n != 4 {
		t.Fatalf("GC = %d, %v; want 4 old finished flows", n, err)
	}
	got := sortedIDs(storeList(t, s, engine.ListFilter{}))
	want := []string{"new-complete", "new-running", "old-awaiting_gate", "old-running"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after GC: %v, want %v", got, want)
	}
	if evs, _ := svcOf(s).Query().FlowEvents(bg, "old-complete"); len(evs) != 0 {
		t.Fatalf("GC left events of a pruned flow: %v", evs)
	}
	if evs, _ := svcOf(s).Query().FlowEvents(bg, "old-running"); len(evs) != 1 {
		t.Fatalf("GC removed events of a kept flow: %v", evs)
	}
	if len(storeGates(t, s)) != 1 {
		t.Fatal("GC touched the pending gate")
	}
	if n, err := s.GC(bg, 24*time.Hour); err != nil || n != 0 {
		t.Fatalf("second GC = %d, %v", n, err)
	}
	if n, err := s.GC(bg, 0); err != nil || n != 1 {
		t.Fatalf("GC(0) = %d, %v; want the new complete flow", n, err)
	}
	if _, err := s.GC(bg, -time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("GC(negative): %v", err)
	}
	// Many flows: more than one GC batch.
	if err := s.Update(bg, func(tx engine.Tx) error {
		for i := 0; i < 2*gcBatch+10; i++ {
			if err := storetest.PutAt(tx, storetest.NewState(fmt.Sprintf("bulk%04d", i), state.StatusComplete), clock.Now()); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if n, err := s.GC(bg, time.Minute); err != nil || n != 2*gcBatch+10 {
		t.Fatalf("bulk GC = %d, %v", n, err)
	}
}

func sortedIDs(sums []state.FlowSummary) []string {
	out := make([]string, len(sums))
	for i, s := range sums {
		out[i] = s.FlowID
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func storePut(t testing.TB, s *Store, st *state.FlowState) {
	t.Helper()
	if err := s.Update(bg, func(tx engine.Tx) error { return storetest.Put(tx, st) }); err != nil {
		t.Fatalf("Put %s: %v", st.FlowID, err)
	}
}

func storeGet(t testing.TB, s *Store, id string) *state.FlowState {
	t.Helper()
	var st *state.FlowState
	if err := s.View(bg, func(tx engine.Tx) error {
		var err error
		st, err = tx.Get(id)
		return err
	}); err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return st
}

func storeList(t testing.TB, s *Store, f engine.ListFilter) []state.FlowSummary {
	t.Helper()
	var out []state.FlowSummary
	if err := s.View(bg, func(tx engine.Tx) error {
		var err error
		out, err = tx.List(f)
		return err
	}); err != nil {
		t.Fatalf("List: %v", err)
	}
	return out
}

func storeGates(t testing.TB, s *Store) []state.FlowSummary {
	t.Helper()
	var out []state.FlowSummary
	if err := s.View(bg, func(tx engine.Tx) error {
		var err error
		out, err = tx.PendingGates()
		return err
	}); err != nil {
		t.Fatalf("PendingGates: %v", err)
	}
	return out
}

func TestSummaryCodecRoundTrip(t *testing.T) {
	deadline := time.Date(2026, 7, 1, 2, 3, 4, 5, time.UTC)
	cases := []state.FlowSummary{
		{},
		{FlowID: "f", FlowName: "n", Status: "running", CurrentStep: "s", StepNumber: 3, TotalSteps: -1, Round: 2,
			Driver: "agent", ParentFlowID: "p", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC),
			UpdatedAt: time.Date(2026, 1, 2, 0, 0, 0, 0, time.FixedZone("X", 3600)), Version: 1 << 40},
		{FlowID: "g", Gate: &state.PendingGate{StepID: "review", Round: 1, DispatchedAt: deadline.Add(-time.Hour)}},
		{FlowID: "h", Gate: &state.PendingGate{StepID: "r", Deadline: &deadline, OnTimeout: "kill", Approver: "human"}},
		{FlowID: "o", Owner: &state.Lease{ID: "run-1", PID: 4242, Host: "box", Heartbeat: deadline.Add(-time.Minute), ExpiresAt: deadline}},
		{FlowID: "z", Owner: &state.Lease{ID: "run-2"}},
	}
	for _, want := range cases {
		b, err := encodeSummary(&want, summaryCodecV2)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeSummary(b)
		if err != nil {
			t.Fatalf("decode %+v: %v", want, err)
		}
		if fmt.Sprintf("%+v", got.Gate) != fmt.Sprintf("%+v", want.Gate) && (got.Gate == nil || want.Gate == nil ||
			got.Gate.StepID != want.Gate.StepID || !got.Gate.DispatchedAt.Equal(want.Gate.DispatchedAt) ||
			(got.Gate.Deadline == nil) != (want.Gate.Deadline == nil) ||
			(got.Gate.Deadline != nil && !got.Gate.Deadline.Equal(*want.Gate.Deadline))) {
			t.Fatalf("gate %+v, want %+v", got.Gate, want.Gate)
		}
		if (got.Owner == nil) != (want.Owner == nil) || got.Owner != nil && (got.Owner.ID != want.Owner.ID ||
			got.Owner.PID != want.Owner.PID || got.Owner.Host != want.Owner.Host ||
			!got.Owner.Heartbeat.Equal(want.Owner.Heartbeat) || !got.Owner.ExpiresAt.Equal(want.Owner.ExpiresAt)) {
			t.Fatalf("owner %+v, want %+v", got.Owner, want.Owner)
		}
		g, w := *got, want
		g.Gate, w.Gate, g.Owner, w.Owner = nil, nil, nil, nil
		if !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) {
			t.Fatalf("times %v %v, want %v %v", g.CreatedAt, g.UpdatedAt, w.CreatedAt, w.UpdatedAt)
		}
		g.CreatedAt, g.UpdatedAt, w.CreatedAt, w.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if g != w {
			t.Fatalf("round trip: %+v, want %+v", g, w)
		}
		// Every truncation is an error, never a panic.
		for i := 0; i < len(b); i++ {
			if _, err := decodeSummary(b[:i]); err == nil {
				t.Fatalf("decoding %d of %d bytes succeeded", i, len(b))
			}
		}
		// Codec v1 (schema 1) has no owner and reads back without one.
		b1, err := encodeSummary(&want, summaryCodecV1)
		if err != nil {
			t.Fatal(err)
		}
		old, err := decodeSummary(b1)
		if err != nil || old.Owner != nil || old.FlowID != want.FlowID || old.Version != want.Version ||
			(old.Gate == nil) != (want.Gate == nil) {
			t.Fatalf("v1 round trip of %+v: %+v, %v", want, old, err)
		}
		if len(b1) >= len(b) {
			t.Fatalf("v1 encoding (%d bytes) not shorter than v2 (%d)", len(b1), len(b))
		}
	}
}

// TestSummaryCodecCoversFields fails when state.FlowSummary,
// state.PendingGate, state.Lease or state.GateReview gains a field the
// binary codec does not store.
func TestSummaryCodecCoversFields(t *testing.T) {
	known := map[string][]string{
		"FlowSummary": {"FlowID", "FlowName", "Status", "CurrentStep", "StepNumber", "TotalSteps", "Round",
			"Driver", "ParentFlowID", "Gate", "Owner", "Review", "CreatedAt", "UpdatedAt", "Version"},
		"PendingGate": {"StepID", "Round", "DispatchedAt", "Deadline", "OnTimeout", "Approver"},
		"Lease":       {"ID", "PID", "Host", "Heartbeat", "ExpiresAt"},
		"GateReview":  {"Question", "Revise"},
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[state.FlowSummary](), reflect.TypeFor[state.PendingGate](), reflect.TypeFor[state.Lease](),
		reflect.TypeFor[state.GateReview]()} {
		var fields []string
		for i := 0; i < typ.NumField(); i++ {
			fields = append(fields, typ.Field(i).Name)
		}
		if !reflect.DeepEqual(fields, known[typ.Name()]) {
			t.Errorf("engine.%s fields are %v; the summary codec (codec.go) stores %v — add a codec version for the new fields",
				typ.Name(), fields, known[typ.Name()])
		}
	}
}

func TestUpdateWithoutWritesDoesNotCommit(t *testing.T) {
	s := newTestStore(t, Options{})
	storePut(t, s, storetest.NewState("f", state.StatusRunning))
	before, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(bg, func(tx engine.Tx) error { _, err := tx.Get("f"); return err }); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(s.Path())
	if !bytes.Equal(before, after) {
		t.Fatal("a read-only Update rewrote the file")
	}
}

func TestPendingGatesOldestFirstAndListByCreation(t *testing.T) {
	clock := newClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	s := newTestStore(t, Options{Now: clock.Now})
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, id := range []string{"c", "a", "b"} {
		st := storetest.NewState(id, state.StatusAwaitingGate)
		st.Gate = &state.PendingGate{StepID: "g", DispatchedAt: base.Add(time.Duration(2-i) * time.Minute)}
		storePut(t, s, st)
		clock.Advance(time.Second)
	}
	if got := strings.Join(idsOf(storeGates(t, s)), ","); got != "b,a,c" {
		t.Fatalf("PendingGates = %s, want oldest gate first: b,a,c", got)
	}
	// Updating a flow keeps its place in List (created order, newest first).
	a := storeGet(t, s, "a")
	a.Status, a.Gate = state.StatusRunning, nil
	clock.Advance(time.Hour)
	storePut(t, s, a)
	if got := strings.Join(idsOf(storeList(t, s, engine.ListFilter{})), ","); got != "b,a,c" {
		t.Fatalf("List = %s, want b,a,c", got)
	}
	if got := strings.Join(idsOf(storeList(t, s, engine.ListFilter{Status: state.StatusAwaitingGate})), ","); got != "b,c" {
		t.Fatalf("List(awaiting_gate) = %s, want b,c", got)
	}
}

func idsOf(sums []state.FlowSummary) []string {
	out := make([]string, len(sums))
	for i, s := range sums {
		out[i] = s.FlowID
	}
	return out
}

// TestDamagedPagesNeverCrash scribbles over data pages of a valid store
// (meta pages intact, size unchanged): every call must return — an error
// wrapping ErrCorrupt or, if the damage missed what it reads, a result — and
// never crash or leave the lock held.
func TestDamagedPagesNeverCrash(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newTestStoreNoCheck(t)
			if err := s.Update(bg, func(tx engine.Tx) error {
				for i := 0; i < 300; i++ {
					st := storetest.NewState(fmt.Sprintf("f%03d", i), state.StatusRunning)
					if err := storetest.Put(tx, st); err != nil {
						return err
					}
					if err := tx.Append(engine.Event{FlowID: st.FlowID, Type: engine.EventFlowCreated}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(s.Path())
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, seed))
			pages := len(data) / 4096
			for n := 0; n < 1+pages/4; n++ {
				p := 2 + rng.IntN(pages-2)
				for i := p * 4096; i < (p+1)*4096; i++ {
					data[i] = byte(rng.Uint32())
				}
			}
			if err := os.WriteFile(s.Path(), data, 0o600); err != nil {
				t.Fatal(err)
			}
			ops := []func() error{
				func() error { _, err := Open(s.Path(), Options{}); return err },
				func() error {
					return s.View(bg, func(tx engine.Tx) error { _, err := tx.List(engine.ListFilter{}); return err })
				},
				func() error {
					return s.View(bg, func(tx engine.Tx) error { _, err := tx.PendingGates(); return err })
				},
				func() error {
					return s.View(bg, func(tx engine.Tx) error { _, err := tx.Get("f150"); return err })
				},
				func() error { _, err := svcOf(s).Query().Events(bg, 0, 0); return err },
				func() error { _, err := svcOf(s).Query().FlowEvents(bg, "f007"); return err },
				func() error { _, err := s.GC(bg, 0); return err },
				func() error { return s.Check(bg) },
			}
			corrupt := 0
			for i, op := range ops {
				done := make(chan error, 1)
				go func() { done <- op() }()
				select {
				case err := <-done:
					if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, engine.ErrNotFound) {
						t.Errorf("op %d: %v, want ErrCorrupt", i, err)
					}
					if errors.Is(err, ErrCorrupt) {
						corrupt++
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("op %d hung on a damaged file", i)
				}
			}
			if corrupt == 0 {
				t.Fatal("no operation noticed the damage")
			}
			t.Logf("%d of %d operations reported corruption; %d bbolt panics/faults caught", corrupt, len(ops), s.faults.Load())
		})
	}
}

func TestConcurrentOpenOfFreshPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", FileName)
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			s, err := Open(path, Options{})
			if err == nil {
				err = s.Update(bg, func(tx engine.Tx) error {
					return storetest.Put(tx, storetest.NewState(fmt.Sprintf("f%d", i), state.StatusRunning))
				})
			}
			errs <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(storeList(t, s, engine.ListFilter{})); n != 8 {
		t.Fatalf("%d flows, want 8", n)
	}
	if err := s.Check(bg); err != nil {
		t.Fatal(err)
	}
}

// TestCheckFindsInconsistencies damages the indexes behind the store's back
// and expects Check to report each problem.
func TestCheckFindsInconsistencies(t *testing.T) {
	cases := []struct {
		name   string
		damage func(tx *bolt.Tx) error
		want   string
	}{
		{"missing index entry", func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketByCreated).Cursor()
			k, _ := c.First()
			return tx.Bucket(bucketByCreated).Delete(k)
		}, "idx_created lacks"},
		{"stray gate", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketGates).Put([]byte("ghost"), []byte{1})
		}, "idx_gates has a stray entry"},
		{"flow without summary", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketSummaries).Delete([]byte("b"))
		}, `flow "b" has no summary`},
		{"dangling event index", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketEvents).Delete(u64(1))
		}, "points at a missing event"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStoreNoCheck(t)
			gate := storetest.NewState("b", state.StatusAwaitingGate)
			gate.Gate = &state.PendingGate{StepID: "g"}
			if err := s.Update(bg, func(tx engine.Tx) error {
				return errors.Join(storetest.Put(tx, storetest.NewState("a", state.StatusRunning)), storetest.Put(tx, gate),
					tx.Append(engine.Event{FlowID: "a", Type: engine.EventFlowCreated}))
			}); err != nil {
				t.Fatal(err)
			}
			if err := s.Check(bg); err != nil {
				t.Fatalf("healthy store: %v", err)
			}
			db, err := bolt.Open(s.Path(), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(tc.damage); err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
			err = s.Check(bg)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want ErrCorrupt mentioning %q", err, tc.want)
			}
			if tc.name == "dangling event index" {
				return // events are not derived data; Reindex does not touch them
			}
			if err := s.Reindex(bg, summarizeNoSpec); err != nil {
				t.Fatal(err)
			}
			if err := s.Check(bg); err != nil {
				t.Fatalf("after Reindex: %v", err)
			}
			if g := storeGates(t, s); len(g) != 1 || g[0].FlowID != "b" {
				t.Fatalf("gates after Reindex: %v", idsOf(g))
			}
		})
	}
}

// summarizeNoSpec is the engine's summary of a state whose spec is unknown.
func summarizeNoSpec(st *state.FlowState) state.FlowSummary { return engine.Summarize(st, nil) }
