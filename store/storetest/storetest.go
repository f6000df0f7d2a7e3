package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// Run runs the contract suite. open returns a fresh, empty store.
func Run(t *testing.T, open func(t *testing.T) engine.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s engine.Store)
	}{
		{"GetMissing", testGetMissing},
		{"PutGetRoundTrip", testPutGetRoundTrip},
		{"PutStampsVersionAndTimes", testPutStamps},
		{"PrivateCopies", testPrivateCopies},
		{"UpdateErrorRollsBack", testUpdateErrorRollsBack},
		{"UpdatePanicRollsBack", testUpdatePanicRollsBack},
		{"CanceledContext", testCanceledContext},
		{"ViewRejectsWrites", testViewRejectsWrites},
		{"Delete", testDelete},
		{"ListOrderFilterLimit", testList},
		{"ListSummaryFields", testListSummaryFields},
		{"PendingGatesIndex", testPendingGates},
		{"Append", testAppend},
		{"EventLog", testEventLog},
		{"Cache", testCache},
		{"ConcurrentUpdates", testConcurrentUpdates},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

var ctx = context.Background()

// NewState returns a realistic flow state for tests: a few records, outputs
// and inputs, like a flow half-way through a run.
func NewState(id string, status engine.FlowStatus) *engine.FlowState {
	start := "s1"
	agent := "claude"
	st := &engine.FlowState{
		FlowID:      id,
		FlowName:    "review_pr",
		RawSpec:     "version: \"0.2\"\nflows:\n  review_pr:\n    steps: []\n",
		Inputs:      map[string]any{"pr": "https://example.com/pr/1", "depth": 2.0},
		StepOutputs: map[string]any{"s1": map[string]any{"summary": "ok", "score": 0.9}},
		Records: []engine.Record{
			{Type: engine.RecordStep, StepID: "s1", FunctionName: "summarise", Attempts: 1, DurationMS: 1200, Agent: &agent},
		},
		Attempts:         map[string]int{"s1": 1},
		CurrentIdx:       1,
		Checkpoints:      map[string]*engine.Checkpoint{},
		Rounds:           [][]engine.Record{},
		RoundStartStepID: &start,
		Iterations:       map[string][]engine.IterationEntry{},
		Status:           status,
		Driver:           "agent",
		DispatchedAt:     map[string]time.Time{"s1": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	return st
}

// Put puts st with the summary the engine derives from it without a spec
// (engine.Summarize(st, nil)), as a test that only cares about states does.
func Put(tx engine.Tx, st *engine.FlowState) error {
	return tx.Put(st, engine.Summarize(st, nil))
}

func put(t *testing.T, s engine.Store, st *engine.FlowState) {
	t.Helper()
	if err := s.Update(ctx, func(tx engine.Tx) error { return Put(tx, st) }); err != nil {
		t.Fatalf("Put %s: %v", st.FlowID, err)
	}
}

func get(t *testing.T, s engine.Store, id string) *engine.FlowState {
	t.Helper()
	var st *engine.FlowState
	if err := s.View(ctx, func(tx engine.Tx) error {
		var err error
		st, err = tx.Get(id)
		return err
	}); err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return st
}

func list(t *testing.T, s engine.Store, f engine.ListFilter) []engine.FlowSummary {
	t.Helper()
	var out []engine.FlowSummary
	if err := s.View(ctx, func(tx engine.Tx) error {
		var err error
		out, err = tx.List(f)
		return err
	}); err != nil {
		t.Fatalf("List %+v: %v", f, err)
	}
	return out
}

func gates(t *testing.T, s engine.Store) []engine.FlowSummary {
	t.Helper()
	var out []engine.FlowSummary
	if err := s.View(ctx, func(tx engine.Tx) error {
		var err error
		out, err = tx.PendingGates()
		return err
	}); err != nil {
		t.Fatalf("PendingGates: %v", err)
	}
	return out
}

// eventLog reads the event log in View transactions, like engine.Service.
type eventLog struct{ s engine.Store }

func (l eventLog) Events(ctx context.Context, after uint64, limit int) ([]engine.Event, error) {
	var out []engine.Event
	err := l.s.View(ctx, func(tx engine.Tx) error {
		var err error
		out, err = tx.Events(after, limit)
		return err
	})
	return out, err
}

func (l eventLog) FlowEvents(ctx context.Context, flowID string) ([]engine.Event, error) {
	var out []engine.Event
	err := l.s.View(ctx, func(tx engine.Tx) error {
		var err error
		out, err = tx.FlowEvents(flowID)
		return err
	})
	return out, err
}

func (l eventLog) LastSeq(ctx context.Context) (uint64, error) {
	var out uint64
	err := l.s.View(ctx, func(tx engine.Tx) error {
		var err error
		out, err = tx.LastSeq()
		return err
	})
	return out, err
}

func ids(sums []engine.FlowSummary) []string {
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
	in := NewState("f1", engine.StatusRunning)
	put(t, s, in)
	got := get(t, s, "f1")
	want := NewState("f1", engine.StatusRunning)
	// Fields the store stamps are checked elsewhere.
	want.CreatedAt, want.UpdatedAt, want.Version, want.SchemaVersion = got.CreatedAt, got.UpdatedAt, got.Version, got.SchemaVersion
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip changed the state:\n got  %+v\n want %+v", got, want)
	}
}

func testPutStamps(t *testing.T, s engine.Store) {
	in := NewState("f1", engine.StatusRunning)
	put(t, s, in)
	if in.Version != 1 || in.CreatedAt.IsZero() || in.UpdatedAt.IsZero() {
		t.Fatalf("after the first Put: Version=%d CreatedAt=%v UpdatedAt=%v; want 1 and both set",
			in.Version, in.CreatedAt, in.UpdatedAt)
	}
	first := get(t, s, "f1")
	if first.Version != 1 || !first.CreatedAt.Equal(in.CreatedAt) || !first.UpdatedAt.Equal(in.UpdatedAt) {
		t.Fatalf("stored stamps differ from the ones set on the argument: %d %v %v vs %d %v %v",
			first.Version, first.CreatedAt, first.UpdatedAt, in.Version, in.CreatedAt, in.UpdatedAt)
	}
	for want := int64(2); want <= 4; want++ {
		cur := get(t, s, "f1")
		cur.Round++
		put(t, s, cur)
		after := get(t, s, "f1")
		if after.Version != want {
			t.Fatalf("Version after Put #%d = %d, want %d", want, after.Version, want)
		}
		if !after.CreatedAt.Equal(first.CreatedAt) {
			t.Fatalf("CreatedAt changed from %v to %v", first.CreatedAt, after.CreatedAt)
		}
		if after.UpdatedAt.Before(first.UpdatedAt) {
			t.Fatalf("UpdatedAt went backwards: %v then %v", first.UpdatedAt, after.UpdatedAt)
		}
	}
	// A replacement built from scratch keeps CreatedAt and still moves Version forward.
	fresh := NewState("f1", engine.StatusComplete)
	put(t, s, fresh)
	after := get(t, s, "f1")
	if after.Version != 5 {
		t.Fatalf("Version after replacing with a fresh state = %d, want 5", after.Version)
	}
	if !after.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("replacing with a fresh state changed CreatedAt: %v → %v", first.CreatedAt, after.CreatedAt)
	}
	// Invalid input is an error, never a panic.
	err := s.Update(ctx, func(tx engine.Tx) error { return tx.Put(nil, engine.FlowSummary{}) })
	if err == nil {
		t.Fatal("Put(nil) succeeded")
	}
	err = s.Update(ctx, func(tx engine.Tx) error { return tx.Put(&engine.FlowState{}, engine.FlowSummary{}) })
	if err == nil {
		t.Fatal("Put of a state without FlowID succeeded")
	}
}

func testPrivateCopies(t *testing.T, s engine.Store) {
	in := NewState("f1", engine.StatusRunning)
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
	put(t, s, NewState("keep", engine.StatusRunning))
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx engine.Tx) error {
		if err := Put(tx, NewState("f1", engine.StatusRunning)); err != nil {
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
	put(t, s, NewState("keep", engine.StatusRunning))
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("a panic in fn did not propagate")
			}
		}()
		_ = s.Update(ctx, func(tx engine.Tx) error {
			_ = Put(tx, NewState("f1", engine.StatusRunning))
			_ = tx.Delete("keep")
			_ = tx.CachePut("k", []byte("v"))
			panic("bug in a transition")
		})
	}()
	assertNothingFrom(t, s)
	put(t, s, NewState("after", engine.StatusRunning)) // still usable
}

func testCanceledContext(t *testing.T, s engine.Store) {
	c, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	err := s.Update(c, func(tx engine.Tx) error {
		ran = true
		return Put(tx, NewState("f1", engine.StatusRunning))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with a canceled context: %v, want context.Canceled", err)
	}
	if ran {
		t.Fatal("Update ran fn with a canceled context")
	}
}

func testViewRejectsWrites(t *testing.T, s engine.Store) {
	put(t, s, NewState("f1", engine.StatusRunning))
	writes := map[string]func(tx engine.Tx) error{
		"Put":      func(tx engine.Tx) error { return Put(tx, NewState("f2", engine.StatusRunning)) },
		"Delete":   func(tx engine.Tx) error { return tx.Delete("f1") },
		"Append":   func(tx engine.Tx) error { return tx.Append(engine.Event{FlowID: "f1", Type: engine.EventTrace}) },
		"CachePut": func(tx engine.Tx) error { return tx.CachePut("k", []byte("v")) },
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
	st := NewState("f1", engine.StatusAwaitingGate)
	st.Gate = &engine.PendingGate{StepID: "approve", Round: 0}
	put(t, s, st)
	put(t, s, NewState("f2", engine.StatusRunning))
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
	if got := ids(list(t, s, engine.ListFilter{Status: engine.StatusAwaitingGate})); len(got) != 0 {
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

func testList(t *testing.T, s engine.Store) {
	if got := list(t, s, engine.ListFilter{}); len(got) != 0 {
		t.Fatalf("List of an empty store = %v", ids(got))
	}
	statuses := []engine.FlowStatus{engine.StatusRunning, engine.StatusComplete, engine.StatusRunning,
		engine.StatusKilled, engine.StatusRunning, engine.StatusComplete}
	for i, status := range statuses {
		put(t, s, NewState(fmt.Sprintf("f%d", i), status))
	}
	all := list(t, s, engine.ListFilter{})
	if len(all) != len(statuses) {
		t.Fatalf("List = %v, want %d flows", ids(all), len(statuses))
	}
	checkNewestFirst(t, all)
	// Updating a flow does not move it: "newest" is by creation.
	f0 := get(t, s, "f0")
	put(t, s, f0)
	if again := list(t, s, engine.ListFilter{}); !reflect.DeepEqual(ids(again), ids(all)) {
		t.Fatalf("List order changed by an update: %v, then %v", ids(all), ids(again))
	}
	seen := map[string]bool{}
	for _, sum := range all {
		if seen[sum.FlowID] {
			t.Fatalf("List returned %s twice", sum.FlowID)
		}
		seen[sum.FlowID] = true
	}

	running := list(t, s, engine.ListFilter{Status: engine.StatusRunning})
	if got := sortedIDs(running); !reflect.DeepEqual(got, []string{"f0", "f2", "f4"}) {
		t.Fatalf("List(running) = %v, want f0 f2 f4", got)
	}
	checkNewestFirst(t, running)
	for _, sum := range running {
		if sum.Status != engine.StatusRunning {
			t.Fatalf("List(running) returned %s with status %s", sum.FlowID, sum.Status)
		}
	}
	if got := list(t, s, engine.ListFilter{Status: "no_such_status"}); len(got) != 0 {
		t.Fatalf("List(unknown status) = %v", ids(got))
	}

	limited := list(t, s, engine.ListFilter{Limit: 2})
	if got, want := ids(limited), ids(all[:2]); !reflect.DeepEqual(got, want) {
		t.Fatalf("List(Limit 2) = %v, want the two newest %v", got, want)
	}
	if got := list(t, s, engine.ListFilter{Status: engine.StatusComplete, Limit: 1}); len(got) != 1 || got[0].Status != engine.StatusComplete {
		t.Fatalf("List(complete, Limit 1) = %+v", got)
	}

	// A status change moves the flow between status lists.
	f4 := get(t, s, "f4")
	f4.Status = engine.StatusComplete
	put(t, s, f4)
	if got := sortedIDs(list(t, s, engine.ListFilter{Status: engine.StatusRunning})); !reflect.DeepEqual(got, []string{"f0", "f2"}) {
		t.Fatalf("List(running) after f4 completed = %v", got)
	}
	if got := sortedIDs(list(t, s, engine.ListFilter{Status: engine.StatusComplete})); !reflect.DeepEqual(got, []string{"f1", "f4", "f5"}) {
		t.Fatalf("List(complete) after f4 completed = %v", got)
	}
	if got := list(t, s, engine.ListFilter{}); len(got) != len(statuses) {
		t.Fatalf("List after a status change has %d flows, want %d", len(got), len(statuses))
	}
}

// checkNewestFirst: most recently created first (ties in any fixed order).
func checkNewestFirst(t *testing.T, sums []engine.FlowSummary) {
	t.Helper()
	for i := 1; i < len(sums); i++ {
		if sums[i].CreatedAt.After(sums[i-1].CreatedAt) {
			t.Fatalf("List not newest first: %s (created %v) before %s (created %v)",
				sums[i-1].FlowID, sums[i-1].CreatedAt, sums[i].FlowID, sums[i].CreatedAt)
		}
	}
}

func sortedIDs(sums []engine.FlowSummary) []string {
	out := ids(sums)
	sort.Strings(out)
	return out
}

func testListSummaryFields(t *testing.T, s engine.Store) {
	parent := "p1"
	st := NewState("child", engine.StatusRunning)
	st.ParentFlowID = &parent
	st.Round = 2
	st.Driver = "runner"
	put(t, s, st)
	st.Round = 3
	put(t, s, st)
	stored := get(t, s, "child")
	sums := list(t, s, engine.ListFilter{})
	if len(sums) != 1 {
		t.Fatalf("List = %v", ids(sums))
	}
	sum := sums[0]
	checks := []struct {
		field     string
		got, want any
	}{
		{"FlowID", sum.FlowID, "child"},
		{"FlowName", sum.FlowName, "review_pr"},
		{"Status", sum.Status, engine.StatusRunning},
		{"Round", sum.Round, 3},
		{"Driver", sum.Driver, "runner"},
		{"ParentFlowID", sum.ParentFlowID, "p1"},
		{"Version", sum.Version, stored.Version},
		{"CreatedAt", sum.CreatedAt.Equal(stored.CreatedAt), true},
		{"UpdatedAt", sum.UpdatedAt.Equal(stored.UpdatedAt), true},
		{"Gate", sum.Gate == nil, true},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("summary %s = %v, want %v", c.field, c.got, c.want)
		}
	}
}

func testPendingGates(t *testing.T, s engine.Store) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	deadline := base.Add(time.Hour)
	mk := func(id string, status engine.FlowStatus, gate *engine.PendingGate) {
		st := NewState(id, status)
		st.Gate = gate
		put(t, s, st)
	}
	mk("g2", engine.StatusAwaitingGate, &engine.PendingGate{StepID: "review", Round: 1, DispatchedAt: base.Add(time.Minute), Deadline: &deadline, OnTimeout: "kill", Approver: "human"})
	mk("g1", engine.StatusAwaitingGate, &engine.PendingGate{StepID: "approve", DispatchedAt: base})
	mk("nogate", engine.StatusAwaitingGate, nil)
	mk("running", engine.StatusRunning, &engine.PendingGate{StepID: "stale"})
	mk("done", engine.StatusComplete, nil)

	got := gates(t, s)
	sort.Slice(got, func(i, j int) bool { return got[i].FlowID < got[j].FlowID }) // order is the store's choice
	if !reflect.DeepEqual(ids(got), []string{"g1", "g2"}) {
		t.Fatalf("PendingGates = %v, want g1 and g2", ids(got))
	}
	g := got[1].Gate
	if g == nil || g.StepID != "review" || g.Round != 1 || g.Deadline == nil || !g.Deadline.Equal(deadline) ||
		g.OnTimeout != "kill" || g.Approver != "human" || !g.DispatchedAt.Equal(base.Add(time.Minute)) {
		t.Fatalf("PendingGates g2 gate = %+v", g)
	}

	// Resolving the gate removes it from the index; reopening adds it back.
	st := get(t, s, "g1")
	st.Status, st.Gate = engine.StatusRunning, nil
	put(t, s, st)
	if got := sortedIDs(gates(t, s)); !reflect.DeepEqual(got, []string{"g2"}) {
		t.Fatalf("PendingGates after resolving g1 = %v, want [g2]", got)
	}
	st = get(t, s, "g1")
	st.Status, st.Gate = engine.StatusAwaitingGate, &engine.PendingGate{StepID: "again", DispatchedAt: base.Add(2 * time.Minute)}
	put(t, s, st)
	got = gates(t, s)
	sort.Slice(got, func(i, j int) bool { return got[i].FlowID < got[j].FlowID })
	if !reflect.DeepEqual(ids(got), []string{"g1", "g2"}) || got[0].Gate.StepID != "again" {
		t.Fatalf("PendingGates after reopening g1 = %v", ids(got))
	}
	// A gate decided first-writer-wins: exactly one of two deciders sees it pending.
	decide := func() (won bool) {
		if err := s.Update(ctx, func(tx engine.Tx) error {
			won = false
			st, err := tx.Get("g2")
			if err != nil {
				return err
			}
			if st.Status != engine.StatusAwaitingGate || st.Gate == nil {
				return nil
			}
			st.Status, st.Gate = engine.StatusRunning, nil
			won = true
			return Put(tx, st)
		}); err != nil {
			t.Fatal(err)
		}
		return won
	}
	if !decide() || decide() {
		t.Fatal("deciding g2 twice: want the first to win and the second to lose")
	}
}

func testAppend(t *testing.T, s engine.Store) {
	err := s.Update(ctx, func(tx engine.Tx) error {
		if err := tx.Append(); err != nil {
			return fmt.Errorf("empty Append: %w", err)
		}
		return tx.Append(
			engine.Event{FlowID: "f1", Type: engine.EventFlowCreated},
			engine.Event{FlowID: "f1", Type: engine.EventStepDispatched, StepID: "s1", Data: map[string]any{"attempt": 1.0}},
		)
	})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func testEventLog(t *testing.T, s engine.Store) {
	log := eventLog{s}
	if seq, err := log.LastSeq(ctx); err != nil || seq != 0 {
		t.Fatalf("LastSeq of an empty store = %d, %v", seq, err)
	}
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	appendEv := func(evs ...engine.Event) {
		t.Helper()
		if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) }); err != nil {
			t.Fatal(err)
		}
	}
	appendEv(engine.Event{FlowID: "a", Type: engine.EventFlowCreated, Time: at},
		engine.Event{FlowID: "b", Type: engine.EventFlowCreated})
	appendEv(engine.Event{FlowID: "a", Type: engine.EventStepDone, StepID: "s1", Data: map[string]any{"k": "v"}})
	appendEv(engine.Event{FlowID: "b", Type: engine.EventFlowFinished})

	all, err := log.Events(ctx, 0, 0)
	if err != nil || len(all) != 4 {
		t.Fatalf("Events(0) = %v, %v; want 4 events", all, err)
	}
	for i, ev := range all {
		if i > 0 && ev.Seq <= all[i-1].Seq {
			t.Fatalf("sequence numbers not increasing: %d after %d", ev.Seq, all[i-1].Seq)
		}
		if ev.Time.IsZero() {
			t.Fatalf("event %d has no time", ev.Seq)
		}
	}
	if !all[0].Time.Equal(at) || all[0].Type != engine.EventFlowCreated || all[0].FlowID != "a" {
		t.Fatalf("first event = %+v", all[0])
	}
	if all[2].StepID != "s1" || all[2].Data["k"] != "v" {
		t.Fatalf("third event lost fields: %+v", all[2])
	}
	last, err := log.LastSeq(ctx)
	if err != nil || last != all[3].Seq {
		t.Fatalf("LastSeq = %d, %v; want %d", last, err, all[3].Seq)
	}
	tail, err := log.Events(ctx, all[1].Seq, 0)
	if err != nil || len(tail) != 2 || tail[0].Seq != all[2].Seq {
		t.Fatalf("Events(after %d) = %v, %v", all[1].Seq, tail, err)
	}
	page, err := log.Events(ctx, 0, 3)
	if err != nil || len(page) != 3 {
		t.Fatalf("Events(limit 3) = %v, %v", page, err)
	}
	if none, err := log.Events(ctx, last, 0); err != nil || len(none) != 0 {
		t.Fatalf("Events(after last) = %v, %v", none, err)
	}
	a, err := log.FlowEvents(ctx, "a")
	if err != nil || len(a) != 2 || a[0].Seq != all[0].Seq || a[1].Seq != all[2].Seq {
		t.Fatalf("FlowEvents(a) = %v, %v", a, err)
	}
	// Deleting a flow prunes its events but never reuses sequence numbers.
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("b") }); err != nil {
		t.Fatal(err)
	}
	appendEv(engine.Event{FlowID: "c", Type: engine.EventFlowCreated})
	after, err := log.Events(ctx, 0, 0)
	if err != nil || len(after) != 3 {
		t.Fatalf("Events after Delete(b) = %v, %v", after, err)
	}
	if after[2].Seq <= last {
		t.Fatalf("sequence %d reused after pruning (last was %d)", after[2].Seq, last)
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
}

func testConcurrentUpdates(t *testing.T, s engine.Store) {
	put(t, s, NewState("counter", engine.StatusRunning))
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := s.Update(ctx, func(tx engine.Tx) error {
					st, err := tx.Get("counter")
					if err != nil {
						return err
					}
					st.Attempts["n"]++
					return Put(tx, st)
				})
				if err != nil {
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
	st := get(t, s, "counter")
	if st.Attempts["n"] != workers*each {
		t.Fatalf("counter = %d after %d increments: lost updates", st.Attempts["n"], workers*each)
	}
	if st.Version != workers*each+1 {
		t.Fatalf("Version = %d, want %d", st.Version, workers*each+1)
	}
}
