package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// Open returns a fresh, empty store whose clock (for GC's cutoff and the
// times of events appended without one) is now, and registers its cleanup
// with t.
type Open func(t *testing.T, now func() time.Time) engine.Store

// Run runs the contract suite against stores made by open.
func Run(t *testing.T, open Open) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s engine.Store)
	}{
		{"GetMissing", testGetMissing},
		{"PutGetRoundTrip", testPutGetRoundTrip},
		{"PutStoresStamps", testPutStoresStamps},
		{"PutConditional", testPutConditional},
		{"PutConditionalInOneTransaction", testPutConditionalInOneTransaction},
		{"PutConcurrentWritersOneWins", testPutConcurrentWritersOneWins},
		{"PrivateCopies", testPrivateCopies},
		{"UpdateErrorRollsBack", testUpdateErrorRollsBack},
		{"UpdatePanicRollsBack", testUpdatePanicRollsBack},
		{"CanceledContext", testCanceledContext},
		{"ViewRejectsWrites", testViewRejectsWrites},
		{"Delete", testDelete},
		{"ListOrderFilterLimit", testList},
		{"ListPages", testListPages},
		{"Count", testCount},
		{"ListSummaryFields", testListSummaryFields},
		{"SummaryStoredAsGiven", testSummaryStoredAsGiven},
		{"PendingGatesIndex", testPendingGates},
		{"GatesDue", testGatesDue},
		{"Append", testAppend},
		{"EventLog", testEventLog},
		{"WatchFromAfter", testWatchFromAfter},
		{"WatchSlowConsumer", testWatchSlowConsumer},
		{"WatchConcurrentWriters", testWatchConcurrentWriters},
		{"WatchCloses", testWatchCloses},
		{"Cache", testCache},
		{"ConcurrentUpdates", testConcurrentUpdates},
		{"Guards", testGuards},
		{"GuardsConcurrentAppend", testGuardsConcurrentAppend},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t, NewClock().Now))
		})
	}
	// Tests that move the store's clock.
	t.Run("GC", func(t *testing.T) {
		c := NewClock()
		testGC(t, open(t, c.Now), c)
	})
	t.Run("GCKeepsChildrenOfUnfinished", func(t *testing.T) {
		c := NewClock()
		testGCKeepsChildrenOfUnfinished(t, open(t, c.Now), c)
	})
}

// Clock is the suite's clock: every reading moves it one millisecond on (so
// stamps are distinct and increasing), and Advance moves it further.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock at 2026-01-01T00:00:00Z.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

// Now returns the time and moves the clock one millisecond on.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// Advance moves the clock d on.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var ctx = context.Background()

// NewState returns a realistic flow state for tests: a few records, outputs
// and inputs, like a flow half-way through a run.
func NewState(id string, status state.FlowStatus) *state.FlowState {
	start := "s1"
	agent := "claude"
	st := &state.FlowState{
		FlowID:   id,
		FlowName: "review_pr",
		RawSpec:  "version: \"0.2\"\nflows:\n  review_pr:\n    steps: []\n",
		Inputs:   map[string]any{"pr": "https://example.com/pr/1", "depth": 2.0},
		StepProgress: state.StepProgress{
			StepOutputs: map[string]any{"s1": map[string]any{"summary": "ok", "score": 0.9}},
			Records: []state.Record{
				{Type: state.RecordStep, StepID: "s1", FunctionName: "summarise", Attempts: 1, DurationMS: 1200, Agent: &agent},
			},
			Attempts:   map[string]int{"s1": 1},
			CurrentIdx: 1,
		},
		Checkpoints: map[string]*state.Checkpoint{},
		RoundProgress: state.RoundProgress{
			Rounds:           [][]state.Record{},
			RoundStartStepID: &start,
			Iterations:       map[string][]state.IterationEntry{},
		},
		Status:       status,
		Driver:       "agent",
		DispatchedAt: map[string]time.Time{"s1": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	return st
}

// Put writes st as the engine does, as a test that only cares about states
// does: stamped at time.Now (st.Stamp), with the summary the engine
// derives from it without a spec (engine.Summarize(st, nil)), expecting
// the version st carried (the one it was read at; engine.NotStored for a
// new state). It stamps st, so call it on a state read or made inside the
// same transaction function: a store may run that function again.
func Put(tx engine.Tx, st *state.FlowState) error {
	return PutAt(tx, st, time.Now())
}

// PutAt is Put with the stamps' time.
func PutAt(tx engine.Tx, st *state.FlowState, now time.Time) error {
	expect := st.Stamp(now)
	return tx.Put(st, engine.Summarize(st, nil), expect)
}

// put writes st in its own Update, stamped (at time.Now) before it, so a
// store that runs the function again writes the same state.
func put(t *testing.T, s engine.Store, st *state.FlowState) {
	t.Helper()
	putAt(t, s, st, time.Now())
}

func putAt(t *testing.T, s engine.Store, st *state.FlowState, now time.Time) {
	t.Helper()
	expect := st.Stamp(now)
	sum := engine.Summarize(st, nil)
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Put(st, sum, expect) }); err != nil {
		t.Fatalf("Put %s: %v", st.FlowID, err)
	}
}

func get(t *testing.T, s engine.Store, id string) *state.FlowState {
	t.Helper()
	var st *state.FlowState
	if err := s.View(ctx, func(tx engine.Tx) error {
		var err error
		st, err = tx.Get(id)
		return err
	}); err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return st
}

func list(t *testing.T, s engine.Store, f engine.ListFilter) []state.FlowSummary {
	t.Helper()
	var out []state.FlowSummary
	if err := s.View(ctx, func(tx engine.Tx) error {
		var err error
		out, err = tx.List(f)
		return err
	}); err != nil {
		t.Fatalf("List %+v: %v", f, err)
	}
	return out
}

func gates(t *testing.T, s engine.Store) []state.FlowSummary {
	t.Helper()
	var out []state.FlowSummary
	if err := s.View(ctx, func(tx engine.Tx) error {
		var err error
		out, err = tx.PendingGates()
		return err
	}); err != nil {
		t.Fatalf("PendingGates: %v", err)
	}
	return out
}

func ids(sums []state.FlowSummary) []string {
	out := make([]string, len(sums))
	for i, s := range sums {
		out[i] = s.FlowID
	}
	return out
}

func testGetMissing(t *testing.T, s engine.Store) {
	err := s.View(ctx, func(tx engine.Tx) error {
		_, err := tx.Get("nope")
		return err
	})
	if !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Get of a missing flow: got %v, want ErrNotFound", err)
	}
}

func testPutGetRoundTrip(t *testing.T, s engine.Store) {
	in := NewState("f1", state.StatusRunning)
	put(t, s, in)
	got := get(t, s, "f1")
	want := NewState("f1", state.StatusRunning)
	// Fields Put stamps are checked elsewhere.
	want.CreatedAt, want.UpdatedAt, want.Version, want.SchemaVersion = got.CreatedAt, got.UpdatedAt, got.Version, got.SchemaVersion
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip changed the state:\n got  %+v\n want %+v", got, want)
	}
}

// testPutStoresStamps: Put stores the writer's stamps as given (the
// store sets none), the summary with the state's; versions move one on at
// each write; invalid input is an error, never a panic.
func testPutStoresStamps(t *testing.T, s engine.Store) {
	created := time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC)
	in := NewState("f1", state.StatusRunning)
	putAt(t, s, in, created)
	if in.Version != 1 || !in.CreatedAt.Equal(created) || !in.UpdatedAt.Equal(created) {
		t.Fatalf("after the first write: Version=%d CreatedAt=%v UpdatedAt=%v; want 1 and %v", in.Version, in.CreatedAt, in.UpdatedAt, created)
	}
	for want := int64(2); want <= 4; want++ {
		cur := get(t, s, "f1")
		if cur.Version != want-1 || !cur.CreatedAt.Equal(created) {
			t.Fatalf("stored Version %d CreatedAt %v, want %d and %v", cur.Version, cur.CreatedAt, want-1, created)
		}
		cur.Round++
		at := created.Add(time.Duration(want) * time.Hour)
		putAt(t, s, cur, at)
		after := get(t, s, "f1")
		if after.Version != want || !after.CreatedAt.Equal(created) || !after.UpdatedAt.Equal(at) || after.Round != cur.Round {
			t.Fatalf("after write #%d: Version %d CreatedAt %v UpdatedAt %v Round %d; want %d, %v, %v, %d",
				want, after.Version, after.CreatedAt, after.UpdatedAt, after.Round, want, created, at, cur.Round)
		}
		if sums := list(t, s, engine.ListFilter{}); len(sums) != 1 || sums[0].Version != want ||
			!sums[0].CreatedAt.Equal(created) || !sums[0].UpdatedAt.Equal(at) {
			t.Fatalf("summary after write #%d: %+v", want, sums)
		}
	}
	// Stamps are stored exactly as given, even ones no engine would set.
	odd := get(t, s, "f1")
	expect := odd.Version
	odd.Version, odd.CreatedAt, odd.UpdatedAt = 40, created.Add(-time.Hour), created.Add(-2*time.Hour)
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Put(odd, engine.Summarize(odd, nil), expect) }); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "f1"); got.Version != 40 || !got.CreatedAt.Equal(odd.CreatedAt) || !got.UpdatedAt.Equal(odd.UpdatedAt) {
		t.Fatalf("stored stamps %d %v %v, want the given %d %v %v", got.Version, got.CreatedAt, got.UpdatedAt, odd.Version, odd.CreatedAt, odd.UpdatedAt)
	}
	// Invalid input is an error, never a panic, and writes nothing.
	for name, w := range map[string]func(tx engine.Tx) error{
		"nil state": func(tx engine.Tx) error { return tx.Put(nil, state.FlowSummary{}, engine.NotStored) },
		"no flow id": func(tx engine.Tx) error {
			return tx.Put(&state.FlowState{Version: 1}, state.FlowSummary{}, engine.NotStored)
		},
		"version kept": func(tx engine.Tx) error {
			st, err := tx.Get("f1")
			if err != nil {
				return err
			}
			return tx.Put(st, engine.Summarize(st, nil), st.Version)
		},
		"version back": func(tx engine.Tx) error {
			st, err := tx.Get("f1")
			if err != nil {
				return err
			}
			v := st.Version
			st.Version = 3
			return tx.Put(st, engine.Summarize(st, nil), v)
		},
		"expect below NotStored": func(tx engine.Tx) error {
			st := NewState("f2", state.StatusRunning)
			st.Version = 1
			return tx.Put(st, engine.Summarize(st, nil), -1)
		},
	} {
		err := s.Update(ctx, func(tx engine.Tx) error { return w(tx) })
		if err == nil {
			t.Errorf("Put with %s succeeded", name)
		} else if errors.Is(err, engine.ErrConflict) {
			t.Errorf("Put with %s: %v, want an invalid-input error, not a conflict", name, err)
		}
	}
	if got := get(t, s, "f1"); got.Version != 40 {
		t.Fatalf("a refused Put wrote: version %d", got.Version)
	}
	if sums := list(t, s, engine.ListFilter{}); len(sums) != 1 {
		t.Fatalf("a refused Put listed a flow: %v", ids(sums))
	}
}

func testPrivateCopies(t *testing.T, s engine.Store) {
	in := NewState("f1", state.StatusRunning)
	put(t, s, in)
	in.Attempts["s1"] = 99
	in.StepOutputs["s1"] = "mutated"
	got := get(t, s, "f1")
	if got.Attempts["s1"] != 1 {
		t.Fatalf("mutating the state after Put changed the store: attempts %d", got.Attempts["s1"])
	}
	got.Attempts["s1"] = 42
	got.Records[0].StepID = "changed"
	again := get(t, s, "f1")
	if again.Attempts["s1"] != 1 || again.Records[0].StepID != "s1" {
		t.Fatalf("mutating a Get result without Put changed the store: %+v", again)
	}
}

func testUpdateErrorRollsBack(t *testing.T, s engine.Store) {
	put(t, s, NewState("keep", state.StatusRunning))
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx engine.Tx) error {
		if err := Put(tx, NewState("f1", state.StatusRunning)); err != nil {
			return err
		}
		if err := tx.Delete("keep"); err != nil {
			return err
		}
		if err := tx.CachePut("k", []byte("v")); err != nil {
			return err
		}
		if err := tx.Append(engine.Event{FlowID: "f1", Type: engine.EventFlowCreated}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	assertNothingFrom(t, s)
}

func assertNothingFrom(t *testing.T, s engine.Store) {
	t.Helper()
	err := s.View(ctx, func(tx engine.Tx) error {
		if _, err := tx.Get("f1"); !errors.Is(err, engine.ErrNotFound) {
			return fmt.Errorf("f1 after a failed Update: err=%v, want ErrNotFound", err)
		}
		if _, err := tx.Get("keep"); err != nil {
			return fmt.Errorf("keep deleted by a failed Update: %v", err)
		}
		if _, ok, err := tx.CacheGet("k"); err != nil || ok {
			return fmt.Errorf("cache written by a failed Update: ok=%v err=%v", ok, err)
		}
		sums, err := tx.List(engine.ListFilter{})
		if err != nil {
			return err
		}
		if len(sums) != 1 || sums[0].FlowID != "keep" {
			return fmt.Errorf("List after a failed Update = %v, want [keep]", ids(sums))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := (eventLog{s}).FlowEvents(ctx, "f1"); err != nil || len(evs) != 0 {
		t.Fatalf("events written by a failed Update: %v %v", evs, err)
	}
}

func testUpdatePanicRollsBack(t *testing.T, s engine.Store) {
	put(t, s, NewState("keep", state.StatusRunning))
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("a panic in fn did not propagate")
			}
		}()
		_ = s.Update(ctx, func(tx engine.Tx) error {
			_ = Put(tx, NewState("f1", state.StatusRunning))
			_ = tx.Delete("keep")
			_ = tx.CachePut("k", []byte("v"))
			panic("bug in a transition")
		})
	}()
	assertNothingFrom(t, s)
	put(t, s, NewState("after", state.StatusRunning)) // still usable
}

func testCanceledContext(t *testing.T, s engine.Store) {
	c, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	err := s.Update(c, func(tx engine.Tx) error {
		ran = true
		return Put(tx, NewState("f1", state.StatusRunning))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with a canceled context: %v, want context.Canceled", err)
	}
	if ran {
		t.Fatal("Update ran fn with a canceled context")
	}
}

func testViewRejectsWrites(t *testing.T, s engine.Store) {
	put(t, s, NewState("f1", state.StatusRunning))
	writes := map[string]func(tx engine.Tx) error{
		"Put":         func(tx engine.Tx) error { return Put(tx, NewState("f2", state.StatusRunning)) },
		"Delete":      func(tx engine.Tx) error { return tx.Delete("f1") },
		"Append":      func(tx engine.Tx) error { return tx.Append(engine.Event{FlowID: "f1", Type: engine.EventTrace}) },
		"CachePut":    func(tx engine.Tx) error { return tx.CachePut("k", []byte("v")) },
		"CacheDelete": func(tx engine.Tx) error { return tx.CacheDelete("k") },
	}
	for name, w := range writes {
		var werr error
		err := s.View(ctx, func(tx engine.Tx) error { werr = w(tx); return nil })
		if err != nil {
			t.Fatalf("View: %v", err)
		}
		if werr == nil {
			t.Errorf("%s inside View succeeded", name)
		}
	}
	get(t, s, "f1")
}

func testDelete(t *testing.T, s engine.Store) {
	st := NewState("f1", state.StatusAwaitingGate)
	st.Gate = &state.PendingGate{StepID: "approve", Round: 0}
	put(t, s, st)
	put(t, s, NewState("f2", state.StatusRunning))
	if err := s.Update(ctx, func(tx engine.Tx) error {
		return tx.Append(engine.Event{FlowID: "f1", Type: engine.EventGateOpened, StepID: "approve"},
			engine.Event{FlowID: "f2", Type: engine.EventFlowCreated})
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("f1") }); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	err := s.View(ctx, func(tx engine.Tx) error {
		_, err := tx.Get("f1")
		return err
	})
	if !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if got := ids(list(t, s, engine.ListFilter{})); !reflect.DeepEqual(got, []string{"f2"}) {
		t.Fatalf("List after Delete = %v, want [f2]", got)
	}
	if got := ids(list(t, s, engine.ListFilter{Status: state.StatusAwaitingGate})); len(got) != 0 {
		t.Fatalf("List(awaiting_gate) after Delete = %v, want none", got)
	}
	if g := gates(t, s); len(g) != 0 {
		t.Fatalf("PendingGates after Delete = %v, want none", ids(g))
	}
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("f1") }); err != nil {
		t.Fatalf("deleting a missing flow: %v, want nil", err)
	}
	log := eventLog{s}
	if evs, err := log.FlowEvents(ctx, "f1"); err != nil || len(evs) != 0 {
		t.Fatalf("events of a deleted flow: %v %v", evs, err)
	}
	evs, err := log.FlowEvents(ctx, "f2")
	if err != nil || len(evs) != 1 {
		t.Fatalf("events of another flow after Delete: %v %v", evs, err)
	}
	all, err := log.Events(ctx, 0, 0)
	if err != nil || len(all) != 1 || all[0].FlowID != "f2" {
		t.Fatalf("log after Delete: %v %v", all, err)
	}
}

func testCache(t *testing.T, s engine.Store) {
	var (
		v   []byte
		ok  bool
		err error
	)
	read := func(key string) {
		t.Helper()
		if verr := s.View(ctx, func(tx engine.Tx) error { v, ok, err = tx.CacheGet(key); return err }); verr != nil {
			t.Fatalf("CacheGet(%q): %v", key, verr)
		}
	}
	read("k")
	if ok || v != nil {
		t.Fatalf("CacheGet of a missing key = %q, %v", v, ok)
	}
	in := []byte(`{"result":1}`)
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.CachePut("k", in) }); err != nil {
		t.Fatal(err)
	}
	in[0] = 'X'
	read("k")
	if !ok || string(v) != `{"result":1}` {
		t.Fatalf("CacheGet = %q, %v; want the value as put (a copy)", v, ok)
	}
	v[0] = 'Y'
	read("k")
	if string(v) != `{"result":1}` {
		t.Fatalf("mutating a CacheGet result changed the cache: %q", v)
	}
	if err := s.Update(ctx, func(tx engine.Tx) error {
		if err := tx.CachePut("k", []byte("2")); err != nil {
			return err
		}
		return tx.CachePut("empty", nil)
	}); err != nil {
		t.Fatal(err)
	}
	read("k")
	if string(v) != "2" {
		t.Fatalf("overwritten value = %q", v)
	}
	read("empty")
	if !ok || len(v) != 0 {
		t.Fatalf("empty value: %q, %v; want present and empty", v, ok)
	}
	if err := s.Update(ctx, func(tx engine.Tx) error {
		if err := tx.CacheDelete("k"); err != nil {
			return err
		}
		return tx.CacheDelete("never-written")
	}); err != nil {
		t.Fatalf("CacheDelete: %v", err)
	}
	read("k")
	if ok {
		t.Fatalf("CacheGet after CacheDelete = %q, %v; want a miss", v, ok)
	}
	read("empty")
	if !ok {
		t.Fatal("CacheDelete of one key removed another")
	}
	testCacheBound(t, s)
}

func testConcurrentUpdates(t *testing.T, s engine.Store) {
	put(t, s, NewState("counter", state.StatusRunning))
	const workers, each = 8, 25
	concurrently(t, workers, each, func(_, _ int) error {
		return s.Update(ctx, func(tx engine.Tx) error {
			st, err := tx.Get("counter")
			if err != nil {
				return err
			}
			st.Attempts["n"]++
			return Put(tx, st)
		})
	})
	st := get(t, s, "counter")
	if st.Attempts["n"] != workers*each {
		t.Fatalf("counter = %d after %d increments: lost updates", st.Attempts["n"], workers*each)
	}
	if st.Version != workers*each+1 {
		t.Fatalf("Version = %d, want %d", st.Version, workers*each+1)
	}
}

// concurrently runs fn(w, i) for i < each in each of workers goroutines w,
// a worker stopping at its first error, and fails t with any error.
func concurrently(t *testing.T, workers, each int, fn func(w, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := fn(w, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
