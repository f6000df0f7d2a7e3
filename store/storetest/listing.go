package storetest

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

func testList(t *testing.T, s engine.Store) {
	if got := list(t, s, engine.ListFilter{}); len(got) != 0 {
		t.Fatalf("List of an empty store = %v", ids(got))
	}
	statuses := []state.FlowStatus{state.StatusRunning, state.StatusComplete, state.StatusRunning,
		state.StatusKilled, state.StatusRunning, state.StatusComplete}
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

	running := list(t, s, engine.ListFilter{Status: state.StatusRunning})
	if got := sortedIDs(running); !reflect.DeepEqual(got, []string{"f0", "f2", "f4"}) {
		t.Fatalf("List(running) = %v, want f0 f2 f4", got)
	}
	checkNewestFirst(t, running)
	for _, sum := range running {
		if sum.Status != state.StatusRunning {
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
	if got := list(t, s, engine.ListFilter{Status: state.StatusComplete, Limit: 1}); len(got) != 1 || got[0].Status != state.StatusComplete {
		t.Fatalf("List(complete, Limit 1) = %+v", got)
	}

	// A status change moves the flow between status lists.
	f4 := get(t, s, "f4")
	f4.Status = state.StatusComplete
	put(t, s, f4)
	if got := sortedIDs(list(t, s, engine.ListFilter{Status: state.StatusRunning})); !reflect.DeepEqual(got, []string{"f0", "f2"}) {
		t.Fatalf("List(running) after f4 completed = %v", got)
	}
	if got := sortedIDs(list(t, s, engine.ListFilter{Status: state.StatusComplete})); !reflect.DeepEqual(got, []string{"f1", "f4", "f5"}) {
		t.Fatalf("List(complete) after f4 completed = %v", got)
	}
	if got := list(t, s, engine.ListFilter{}); len(got) != len(statuses) {
		t.Fatalf("List after a status change has %d flows, want %d", len(got), len(statuses))
	}
}

// checkNewestFirst: most recently created first (ties in any fixed order).
func checkNewestFirst(t *testing.T, sums []state.FlowSummary) {
	t.Helper()
	for i := 1; i < len(sums); i++ {
		if sums[i].CreatedAt.After(sums[i-1].CreatedAt) {
			t.Fatalf("List not newest first: %s (created %v) before %s (created %v)",
				sums[i-1].FlowID, sums[i-1].CreatedAt, sums[i].FlowID, sums[i].CreatedAt)
		}
	}
}

func sortedIDs(sums []state.FlowSummary) []string {
	out := ids(sums)
	sort.Strings(out)
	return out
}

func testListSummaryFields(t *testing.T, s engine.Store) {
	parent := "p1"
	st := NewState("child", state.StatusRunning)
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
		{"Status", sum.Status, state.StatusRunning},
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
	mk := func(id string, status state.FlowStatus, gate *state.PendingGate) {
		st := NewState(id, status)
		st.Gate = gate
		put(t, s, st)
	}
	mk("g2", state.StatusAwaitingGate, &state.PendingGate{StepID: "review", Round: 1, DispatchedAt: base.Add(time.Minute), Deadline: &deadline, OnTimeout: "kill", Approver: "human"})
	mk("g1", state.StatusAwaitingGate, &state.PendingGate{StepID: "approve", DispatchedAt: base})
	mk("nogate", state.StatusAwaitingGate, nil)
	mk("running", state.StatusRunning, &state.PendingGate{StepID: "stale"})
	mk("done", state.StatusComplete, nil)

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
	st.Status, st.Gate = state.StatusRunning, nil
	put(t, s, st)
	if got := sortedIDs(gates(t, s)); !reflect.DeepEqual(got, []string{"g2"}) {
		t.Fatalf("PendingGates after resolving g1 = %v, want [g2]", got)
	}
	st = get(t, s, "g1")
	st.Status, st.Gate = state.StatusAwaitingGate, &state.PendingGate{StepID: "again", DispatchedAt: base.Add(2 * time.Minute)}
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
			if st.Status != state.StatusAwaitingGate || st.Gate == nil {
				return nil
			}
			st.Status, st.Gate = state.StatusRunning, nil
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

// testSummaryStoredAsGiven: Put stores the summary it is given — every
// field, even ones that disagree with the state — except the stamps, which
// are the state's; a replacement leaves nothing of the old summary behind.
func testSummaryStoredAsGiven(t *testing.T, s engine.Store) {
	at := time.Date(2026, 4, 5, 6, 7, 8, 9, time.UTC)
	deadline := at.Add(time.Hour)
	st := NewState("f", state.StatusAwaitingGate)
	given := state.FlowSummary{
		FlowID: "f", FlowName: "given_name", Status: state.StatusAwaitingGate, CurrentStep: "given_step",
		StepNumber: 42, TotalSteps: 7, Round: 9, Driver: "given_driver", ParentFlowID: "given_parent",
		Gate: &state.PendingGate{StepID: "given_gate", Round: 3, DispatchedAt: at, Deadline: &deadline,
			OnTimeout: "approve", Approver: "human"},
		Owner:  &state.Lease{ID: "run-given", PID: 4242, Host: "given-host", Heartbeat: at, ExpiresAt: deadline},
		Review: &state.GateReview{Question: "Ship \"given\" <now>?\n", Revise: true},
		// Not the state's: these must be replaced by the state's stamps.
		CreatedAt: at.Add(-48 * time.Hour), UpdatedAt: at.Add(-24 * time.Hour), Version: 1000,
	}
	if zero := zeroFields(given); len(zero) > 0 {
		t.Fatalf("the test leaves summary fields %v unset: set them so they are checked", zero)
	}
	expect := st.Stamp(time.Now())
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Put(st, given, expect) }); err != nil {
		t.Fatal(err)
	}
	stored := get(t, s, "f")
	want := given
	g, o, d, r := *given.Gate, *given.Owner, *given.Gate.Deadline, *given.Review
	g.Deadline = &d
	want.Gate, want.Owner, want.Review = &g, &o, &r
	want.CreatedAt, want.UpdatedAt, want.Version = stored.CreatedAt, stored.UpdatedAt, stored.Version
	// The caller's summary is not shared with the store.
	given.Gate.StepID, given.Owner.ID, *given.Gate.Deadline, given.Review.Question = "mutated", "mutated", at, "mutated"

	sums := list(t, s, engine.ListFilter{})
	if len(sums) != 1 || !sameSummary(sums[0], want) {
		t.Fatalf("List after Put:\n got  %+v\n want %+v", summaryText(sums), summaryText([]state.FlowSummary{want}))
	}
	if byStatus := list(t, s, engine.ListFilter{Status: state.StatusAwaitingGate}); len(byStatus) != 1 || !sameSummary(byStatus[0], want) {
		t.Fatalf("List(awaiting_gate) after Put: %s", summaryText(byStatus))
	}
	if g := gates(t, s); len(g) != 1 || !sameSummary(g[0], want) {
		t.Fatalf("PendingGates after Put: %s", summaryText(g))
	}

	// A replacement stores its own summary whole.
	st = get(t, s, "f")
	st.Status = state.StatusRunning
	bare := state.FlowSummary{FlowID: "f", Status: state.StatusRunning}
	expect = st.Stamp(time.Now())
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Put(st, bare, expect) }); err != nil {
		t.Fatal(err)
	}
	stored = get(t, s, "f")
	bare.CreatedAt, bare.UpdatedAt, bare.Version = stored.CreatedAt, stored.UpdatedAt, stored.Version
	if sums := list(t, s, engine.ListFilter{}); len(sums) != 1 || !sameSummary(sums[0], bare) {
		t.Fatalf("List after replacing the summary: %s, want %s", summaryText(sums), summaryText([]state.FlowSummary{bare}))
	}
	if g := gates(t, s); len(g) != 0 {
		t.Fatalf("PendingGates after the gate left the summary: %s", summaryText(g))
	}

	// A summary of another flow, or with another status, is refused and
	// writes nothing.
	for name, wrong := range map[string]state.FlowSummary{
		"flow id": {FlowID: "other", Status: state.StatusRunning},
		"status":  {FlowID: "f", Status: state.StatusComplete},
	} {
		cur := get(t, s, "f")
		expect := cur.Stamp(time.Now())
		err := s.Update(ctx, func(tx engine.Tx) error { return tx.Put(cur, wrong, expect) })
		if err == nil {
			t.Errorf("Put with the summary of another %s succeeded", name)
		}
	}
	if after := get(t, s, "f"); after.Version != stored.Version {
		t.Fatalf("a refused Put wrote version %d (was %d)", after.Version, stored.Version)
	}
}

// zeroFields lists the fields of sum that hold their zero value.
func zeroFields(sum state.FlowSummary) []string {
	var out []string
	v := reflect.ValueOf(sum)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			out = append(out, v.Type().Field(i).Name)
		}
	}
	return out
}

// sameSummary compares summaries field by field, times by instant (a store
// may hand back another location of the same instant).
func sameSummary(a, b state.FlowSummary) bool {
	return reflect.DeepEqual(utcSummary(a), utcSummary(b))
}

func utcSummary(s state.FlowSummary) state.FlowSummary {
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	if s.Gate != nil {
		g := *s.Gate
		g.DispatchedAt = g.DispatchedAt.UTC()
		if g.Deadline != nil {
			d := g.Deadline.UTC()
			g.Deadline = &d
		}
		s.Gate = &g
	}
	if s.Owner != nil {
		o := *s.Owner
		o.Heartbeat, o.ExpiresAt = o.Heartbeat.UTC(), o.ExpiresAt.UTC()
		s.Owner = &o
	}
	return s
}

func summaryText(sums []state.FlowSummary) string {
	var b strings.Builder
	for _, s := range sums {
		fmt.Fprintf(&b, "%+v gate=%+v owner=%+v review=%+v; ", s, s.Gate, s.Owner, s.Review)
	}
	return b.String()
}
