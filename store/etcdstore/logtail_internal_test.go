package etcdstore

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

// TestLogTail: the log after a cursor read from etcd's history (a recent
// cursor, in a View), from the keys of p/ (inside an Update, or a cursor
// whose history the cluster compacted) and with the events moved where
// schema 6's indexer put them is the same: every event committed after
// the cursor, in order, none of a flow deleted in its transaction or
// through a tombstone, in pages of limit. The events are written once:
// each commit's events of a flow are one key of p/, and nothing moves them.
// On one member and on three (where the history may be read from a member
// that has not applied the snapshot yet).
func TestLogTail(t *testing.T) {
	for _, members := range []int{1, 3} {
		t.Run(fmt.Sprintf("members=%d", members), func(t *testing.T) { testLogTail(t, etcdtest.Start(t, members)) })
	}
}

func testLogTail(t *testing.T, c *etcdtest.Cluster) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/tail/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want []engine.Event
	ev := func(id, step string) engine.Event {
		return engine.Event{FlowID: id, Type: engine.EventStepDone, StepID: step}
	}
	commit := func(keep bool, evs ...engine.Event) {
		t.Helper()
		if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) }); err != nil {
			t.Fatal(err)
		}
		if keep {
			want = append(want, evs...)
		}
	}
	commit(true, ev("a", "a1"), ev("a", "a2"))
	commit(false, ev("gone", "g1"))
	commit(true, ev("b", "b1"))
	commit(true, ev("a", "a3"), ev("b", "b2"), ev("a", "a4")) // three keys
	for i := range inlineEvents + 1 {                         // more keys than Delete removes at once
		commit(false, ev("big", fmt.Sprint("big", i)))
	}
	commit(false, ev("gone", "g2"))
	commit(true, ev("c", "c1"))
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("gone") }); err != nil {
		t.Fatal(err)
	}
	// big's deletion leaves its tombstone: its purge does not run.
	x := newTx(s, ctx, true)
	if err := x.Delete("big"); err != nil {
		t.Fatal(err)
	}
	if ok, err := x.commit(); err != nil || !ok || len(x.purge) != 1 {
		t.Fatalf("delete big: %v %v, purge %v", ok, err, x.purge)
	}
	commit(true, ev("c", "c2"))

	count := func(p string) int64 { return keyCount(t, s, p) }
	if p, e, x := count("p/"), count("e/"), count("x/"); p != 7+inlineEvents+1 || e != 0 || x != 0 {
		t.Fatalf("p/ %d, e/ %d, x/ %d keys; want %d, 0, 0", p, e, x, 7+inlineEvents+1)
	}
	steps := func(evs []engine.Event) string {
		out := ""
		for _, e := range evs {
			out += e.StepID + " "
		}
		return out
	}
	cursors := []uint64{0}
	for _, e := range want {
		cursors = append(cursors, e.Seq)
	}
	check := func(how string, scans bool, update bool) {
		t.Helper()
		scans0 := logScans.Load()
		for _, after := range cursors {
			i := 0
			for i < len(want) && want[i].Seq <= after {
				i++
			}
			for _, limit := range []int{0, 2} {
				exp := want[i:]
				if limit > 0 {
					exp = exp[:min(limit, len(exp))]
				}
				var got []engine.Event
				read := func(etx engine.Tx) (err error) { got, err = etx.(*tx).logEvents(after, limit); return err }
				if update {
					err = s.Update(ctx, read)
				} else {
					err = s.View(ctx, read)
				}
				if err != nil {
					t.Fatal(err)
				}
				if steps(got) != steps(exp) || !slices.EqualFunc(got, exp, func(a, b engine.Event) bool { return a.Seq == b.Seq }) {
					t.Errorf("%s: Events(%d, %d) = %q, want %q", how, after, limit, steps(got), steps(exp))
				}
			}
		}
		if scanned := logScans.Load() > scans0; scanned != scans {
			t.Errorf("%s: scanned p/ %v, want %v", how, scanned, scans)
		}
	}
	check("history", false, false)
	check("keys of p/ (Update)", true, true)

	// Compacted history: the keys of p/.
	r, err := s.cli.Get(ctx, s.key("meta/gen"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.cli.Compact(ctx, r.Header.Revision); err != nil {
		t.Fatal(err)
	}
	check("compacted", true, false)

	// Moved by a stratum of schema 6 (e/ and x/): the same, once each.
	if err := s.indexLegacy(ctx); err != nil {
		t.Fatal(err)
	}
	if p := count("p/"); p != 0 {
		t.Fatalf("p/ %d keys after the legacy indexer", p)
	}
	check("indexed", true, false)
}

// TestSchema6Log: a prefix of schema 6 — events its indexer moved into e/
// and x/, and some still in p/ — becomes schema 7 at Open without moving a
// key; every read finds the old events with their numbers, and the new
// ones after them, from every cursor; Delete removes a flow's events from
// both places.
func TestSchema6Log(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/six/"})
	if err != nil {
		t.Fatal(err)
	}
	var want []engine.Event
	commit := func(s *Store, ids ...string) {
		t.Helper()
		evs := make([]engine.Event, len(ids))
		for i, id := range ids {
			evs[i] = engine.Event{FlowID: id, Type: engine.EventStepDone, StepID: fmt.Sprint(id, len(want)+i)}
		}
		if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) }); err != nil {
			t.Fatal(err)
		}
		want = append(want, evs...)
	}
	commit(s, "a", "a")
	commit(s, "b")
	commit(s, "a", "b")
	if err := s.indexLegacy(ctx); err != nil {
		t.Fatal(err)
	}
	commit(s, "b", "a") // left in p/
	if _, err := s.cli.Put(ctx, s.key("meta/schema_version"), "6"); err != nil {
		t.Fatal(err)
	}
	count := func(p string) int64 { return keyCount(t, s, p) }
	before := [3]int64{count("e/"), count("x/"), count("p/")}
	s.Close()
	if before != [3]int64{4, 4, 2} {
		t.Fatalf("schema 6 layout: e/ x/ p/ %v keys, want 4 4 2", before)
	}

	s, err = Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/six/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersionOf(ctx); err != nil || v != SchemaVersion || SchemaVersion != 7 {
		t.Fatalf("schema after Open: %d %v, want 7", v, err)
	}
	if now := [3]int64{count("e/"), count("x/"), count("p/")}; now != before {
		t.Fatalf("Open moved keys: e/ x/ p/ %v, before %v", now, before)
	}
	check := func(when string) {
		t.Helper()
		if err := s.View(ctx, func(tx engine.Tx) error {
			for i := -1; i < len(want); i++ {
				after := uint64(0)
				if i >= 0 {
					after = want[i].Seq
				}
				for _, limit := range []int{0, 2} {
					got, err := tx.Events(after, limit)
					if err != nil {
						return err
					}
					exp := want[i+1:]
					if limit > 0 {
						exp = exp[:min(limit, len(exp))]
					}
					if !slices.EqualFunc(got, exp, func(a, b engine.Event) bool { return a.Seq == b.Seq && a.StepID == b.StepID }) {
						t.Errorf("%s: Events(%d, %d) = %v, want %v", when, after, limit, got, exp)
					}
				}
			}
			for _, id := range []string{"a", "b"} {
				var exp []engine.Event
				for _, e := range want {
					if e.FlowID == id {
						exp = append(exp, e)
					}
				}
				got, err := tx.FlowEvents(id)
				if err != nil {
					return err
				}
				if !slices.EqualFunc(got, exp, func(a, b engine.Event) bool { return a.Seq == b.Seq && a.StepID == b.StepID }) {
					t.Errorf("%s: FlowEvents(%s) = %v, want %v", when, id, got, exp)
				}
			}
			last, err := tx.LastSeq()
			if err == nil && len(want) > 0 && last != want[len(want)-1].Seq {
				t.Errorf("%s: LastSeq %d, want %d", when, last, want[len(want)-1].Seq)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	check("upgraded")
	commit(s, "a", "c")
	check("appended")
	if e, x, p := count("e/"), count("x/"), count("p/"); e != 4 || x != 4 || p != 4 {
		t.Fatalf("after an append: e/ %d, x/ %d, p/ %d keys, want 4 4 4", e, x, p)
	}
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("a") }); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(e engine.Event) bool { return e.FlowID == "a" })
	check("a deleted")
	if x, p := count("x/a\x00"), count("p/a\x00"); x != 0 || p != 0 {
		t.Fatalf("after deleting a: x/a %d, p/a %d keys", x, p)
	}
}
