package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// testListPages: List in the listing order (newest first, ties by flow id
// descending) and After pages through it: pages read one after the other
// hold every flow once, in that order, also when flows are created,
// updated and deleted between pages, and with a status filter.
func testListPages(t *testing.T, s engine.Store) {
	t0 := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	// Three flows share each creation time: the ties are ordered by id.
	var want []string
	for i := 0; i < 12; i++ {
		status := state.StatusRunning
		if i%3 == 1 {
			status = state.StatusComplete
		}
		putAt(t, s, NewState(fmt.Sprintf("p%02d", i), status), t0.Add(time.Duration(i/3)*time.Second))
	}
	for i := 11; i >= 0; i-- {
		want = append(want, fmt.Sprintf("p%02d", i))
	}
	if got := ids(list(t, s, engine.ListFilter{})); !reflect.DeepEqual(got, want) {
		t.Fatalf("List = %v, want %v (newest first, ties by id descending)", got, want)
	}
	for _, size := range []int{1, 2, 5, 12, 20} {
		if got := pages(t, s, engine.ListFilter{Limit: size}, nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("pages of %d = %v, want %v", size, got, want)
		}
	}
	var running []string
	for _, id := range want {
		if id != "p01" && id != "p04" && id != "p07" && id != "p10" {
			running = append(running, id)
		}
	}
	if got := pages(t, s, engine.ListFilter{Status: state.StatusRunning, Limit: 3}, nil); !reflect.DeepEqual(got, running) {
		t.Fatalf("pages of running flows = %v, want %v", got, running)
	}
	// After a flow that no longer exists: the flows after its position.
	after := state.ListCursor{CreatedAt: t0.Add(2 * time.Second), FlowID: "p07x"}
	if got := ids(list(t, s, engine.ListFilter{After: after, Limit: 3})); !reflect.DeepEqual(got, []string{"p07", "p06", "p05"}) {
		t.Fatalf("List after a deleted flow's position = %v, want p07 p06 p05", got)
	}
	if got := list(t, s, engine.ListFilter{After: state.ListCursor{CreatedAt: t0.Add(-time.Hour), FlowID: "z"}}); len(got) != 0 {
		t.Fatalf("List after the oldest flow = %v", ids(got))
	}
	// Changes between pages: a new flow (newest, so before every page
	// read after the first), an update that changes a status and a
	// deletion move no flow to another page.
	got := pages(t, s, engine.ListFilter{Limit: 4}, func(page int) {
		if page != 1 {
			return
		}
		putAt(t, s, NewState("p99", state.StatusRunning), t0.Add(time.Hour))
		st := get(t, s, "p05")
		st.Status = state.StatusFailed
		putAt(t, s, st, t0.Add(2*time.Hour))
		if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("p03") }); err != nil {
			t.Fatal(err)
		}
	})
	wantAfter := append([]string(nil), want[:8]...)
	wantAfter = append(wantAfter, "p02", "p01", "p00")
	if !reflect.DeepEqual(got, wantAfter) {
		t.Fatalf("pages across changes = %v, want %v", got, wantAfter)
	}
}

// pages reads the listing f selects page by page (f.Limit flows each),
// calling between(k) after page k, and returns the ids in order.
func pages(t *testing.T, s engine.Store, f engine.ListFilter, between func(page int)) []string {
	t.Helper()
	var out []string
	for page := 0; ; page++ {
		sums := list(t, s, f)
		if len(sums) > f.Limit {
			t.Fatalf("a page of %d flows, limit %d", len(sums), f.Limit)
		}
		out = append(out, ids(sums)...)
		if len(sums) < f.Limit {
			return out
		}
		f.After = sums[len(sums)-1].Cursor()
		if between != nil {
			between(page)
		}
		if page > 100 {
			t.Fatalf("paging does not end: %v", out)
		}
	}
}

// testCount: Count is the number of flows List returns without its Limit,
// for every filter (all, by status, after a cursor, both), as flows are
// created, change status and are deleted, and inside a write transaction
// that created one.
func testCount(t *testing.T, s engine.Store) {
	t0 := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	statuses := []state.FlowStatus{state.StatusRunning, state.StatusComplete, state.StatusAwaitingGate}
	for i := 0; i < 10; i++ {
		putAt(t, s, NewState(fmt.Sprintf("c%02d", i), statuses[i%3]), t0.Add(time.Duration(i/2)*time.Second))
	}
	check := func(when string) {
		t.Helper()
		all := list(t, s, engine.ListFilter{})
		filters := []engine.ListFilter{{}, {Limit: 2}}
		for _, st := range append(statuses, state.StatusFailed) {
			filters = append(filters, engine.ListFilter{Status: st})
		}
		for _, sum := range all {
			filters = append(filters, engine.ListFilter{After: sum.Cursor()},
				engine.ListFilter{After: sum.Cursor(), Status: state.StatusRunning})
		}
		for _, f := range filters {
			want := len(list(t, s, engine.ListFilter{Status: f.Status, After: f.After}))
			var got int
			if err := s.View(ctx, func(tx engine.Tx) error {
				var err error
				got, err = tx.Count(f)
				return err
			}); err != nil {
				t.Fatalf("%s: Count %+v: %v", when, f, err)
			}
			if got != want {
				t.Fatalf("%s: Count %+v = %d, List returns %d", when, f, got, want)
			}
		}
	}
	check("created")
	st := get(t, s, "c04")
	st.Status = state.StatusFailed
	putAt(t, s, st, t0.Add(time.Hour))
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("c07") }); err != nil {
		t.Fatal(err)
	}
	check("after a status change and a deletion")
	// In a write transaction, its own writes count.
	if err := s.Update(ctx, func(tx engine.Tx) error {
		n, err := tx.Count(engine.ListFilter{Status: state.StatusRunning})
		if err != nil {
			return err
		}
		nst := NewState("c99", state.StatusRunning)
		expect := nst.Stamp(t0.Add(2 * time.Hour))
		if err := tx.Put(nst, engine.Summarize(nst, nil), expect); err != nil {
			return err
		}
		m, err := tx.Count(engine.ListFilter{Status: state.StatusRunning})
		if err != nil {
			return err
		}
		if m != n+1 {
			t.Errorf("Count of running flows in the transaction that created one = %d, before %d", m, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	check("after a write transaction")
}
