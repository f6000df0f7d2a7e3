package etcdstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestAppendsOnOtherFlowsDoNotConflict: two transactions that each read,
// write and append to their own flow, from the same snapshot, both commit
// (schema 2 compared meta/seq in both: the second lost and was retried),
// and their events are numbered in commit order.
func TestAppendsOnOtherFlowsDoNotConflict(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/noconflict/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"a", "b"} {
		if err := s.Update(ctx, func(tx engine.Tx) error { return storetest.Put(tx, storetest.NewState(id, state.StatusRunning)) }); err != nil {
			t.Fatal(err)
		}
	}
	step := func(id string) (*tx, []engine.Event) {
		t.Helper()
		x := newTx(s, ctx, true)
		st, err := x.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		st.Round++
		if err := storetest.Put(x, st); err != nil {
			t.Fatal(err)
		}
		evs := []engine.Event{{FlowID: id, Type: engine.EventStepDone, StepID: "s"}, {FlowID: id, Type: engine.EventStepDispatched, StepID: "t"}}
		if err := x.Append(evs...); err != nil {
			t.Fatal(err)
		}
		return x, evs
	}
	ta, evA := step("a")
	tb, evB := step("b")
	for _, x := range []*tx{ta, tb} {
		if ok, err := x.commit(); err != nil || !ok {
			t.Fatalf("commit: %v %v: transactions on different flows conflict", ok, err)
		}
	}
	if evA[0].Seq == 0 || evA[1].Seq != evA[0].Seq+1 || evB[0].Seq <= evA[1].Seq || evB[1].Seq != evB[0].Seq+1 {
		t.Fatalf("sequence numbers a %d %d, b %d %d: not stamped in commit order", evA[0].Seq, evA[1].Seq, evB[0].Seq, evB[1].Seq)
	}
	// The same flow from the same snapshot: exactly one commits.
	t1, _ := step("a")
	t2, _ := step("a")
	if ok, err := t1.commit(); err != nil || !ok {
		t.Fatalf("first commit on a: %v %v", ok, err)
	}
	if ok, err := t2.commit(); err != nil || ok {
		t.Fatalf("second commit on a from the same snapshot: %v %v, want a conflict", ok, err)
	}
}

// TestPendingEvents: events committed (the commit without afterCommit: a
// process that died right after it) are read from p/ in order, by Events,
// FlowEvents and LastSeq; moved to e/ and x/ with the same numbers, as
// schema 6's indexer did, they read the same, and Delete removes them
// either way.
func TestPendingEvents(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/pending/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want []uint64
	for i, id := range []string{"a", "b", "a", "gone"} {
		x := newTx(s, ctx, true)
		evs := []engine.Event{{FlowID: id, Type: engine.EventStepDone, StepID: "s"}, {FlowID: id, Type: engine.EventStepDone, StepID: "t"}}
		if err := x.Append(evs...); err != nil {
			t.Fatal(err)
		}
		if ok, err := x.commit(); err != nil || !ok {
			t.Fatalf("commit %d: %v %v", i, ok, err)
		}
		want = append(want, evs[0].Seq, evs[1].Seq)
	}
	keys := func(p string) int64 { return keyCount(t, s, p) }
	read := func(when string) {
		t.Helper()
		var all, tail, a []engine.Event
		var last uint64
		if err := s.View(ctx, func(tx engine.Tx) (err error) {
			if all, err = tx.Events(0, 0); err != nil {
				return err
			}
			if tail, err = tx.Events(want[1], 3); err != nil {
				return err
			}
			if a, err = tx.FlowEvents("a"); err != nil {
				return err
			}
			last, err = tx.LastSeq()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		seqs := func(evs []engine.Event) []uint64 {
			out := []uint64{}
			for _, e := range evs {
				out = append(out, e.Seq)
			}
			return out
		}
		if got := seqs(all); !slices.Equal(got, want) {
			t.Fatalf("%s: Events(0) = %v, want %v", when, got, want)
		}
		if got := seqs(tail); !slices.Equal(got, want[2:5]) {
			t.Fatalf("%s: Events(after %d, 3) = %v, want %v", when, want[1], got, want[2:5])
		}
		if got := seqs(a); !slices.Equal(got, []uint64{want[0], want[1], want[4], want[5]}) {
			t.Fatalf("%s: FlowEvents(a) = %v", when, got)
		}
		if last != want[len(want)-1] {
			t.Fatalf("%s: LastSeq = %d, want %d", when, last, want[len(want)-1])
		}
	}
	if n := keys("p/"); n != 4 { // one per commit: its two events of one flow
		t.Fatalf("%d pending keys, want 4", n)
	}
	read("pending")
	if err := s.indexLegacy(ctx); err != nil {
		t.Fatal(err)
	}
	if p, e, x := keys("p/"), keys("e/"), keys("x/"); p != 0 || e != 4 || x != 4 {
		t.Fatalf("after indexing: p/ %d, e/ %d, x/ %d; want 0, 4, 4", p, e, x)
	}
	read("indexed")
	// Deleting the flow of the last events keeps LastSeq where it was.
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("gone") }); err != nil {
		t.Fatal(err)
	}
	if got := lastSeq(t, s); got != want[7] {
		t.Fatalf("LastSeq %d after deleting the last events, want %d: numbers went down", got, want[7])
	}
	var all []engine.Event
	if err := s.View(ctx, func(tx engine.Tx) (err error) { all, err = tx.Events(0, 0); return err }); err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 || all[5].Seq != want[5] {
		t.Fatalf("Events after deleting gone: %v", all)
	}
}

// TestSchema2Upgrade: a prefix of schema 2 (dense numbers from meta/seq)
// becomes schema 3 at Open without moving a key: its events keep their
// numbers, LastSeq is meta/seq's, and new events are numbered above them.
func TestSchema2Upgrade(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	root := keyRoot("/old/")
	put := func(k, v string) {
		t.Helper()
		if _, err := cli.Put(ctx, root+k, v); err != nil {
			t.Fatal(err)
		}
	}
	put("meta/format", format)
	put("meta/schema_version", "2")
	put("meta/seq", "3") // event 3 was deleted
	for _, n := range []uint64{1, 2} {
		ev := engine.Event{Seq: n, FlowID: "f", Type: engine.EventStepDone, StepID: "s"}
		b, err := ev.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		put("e/"+hex16(n), string(b))
		put("x/f\x00"+hex16(n), string(b))
	}
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/old/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersionOf(ctx); err != nil || v != SchemaVersion {
		t.Fatalf("schema after Open: %d %v, want %d", v, err, SchemaVersion)
	}
	if got := lastSeq(t, s); got != 3 {
		t.Fatalf("LastSeq = %d, want meta/seq's 3", got)
	}
	evs := []engine.Event{{FlowID: "f", Type: engine.EventStepDone, StepID: "new"}}
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) }); err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq <= 3 {
		t.Fatalf("new event numbered %d, not above schema 2's", evs[0].Seq)
	}
	var all, f []engine.Event
	if err := s.View(ctx, func(tx engine.Tx) (err error) {
		if all, err = tx.Events(0, 0); err != nil {
			return err
		}
		f, err = tx.FlowEvents("f")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Seq != 1 || all[1].Seq != 2 || all[2].Seq != evs[0].Seq || len(f) != 3 {
		t.Fatalf("log after the upgrade: %v; flow f: %v", all, f)
	}
}

// TestLostRacesAreConflicts: an Update whose timeout runs out after it
// lost races is reported as a conflict (errors.Is engine.ErrConflict), one
// that never got an answer as a cluster that does not answer.
func TestLostRacesAreConflicts(t *testing.T) {
	s := &Store{pfx: "/p/", eps: []string{"127.0.0.1:1"}, timeout: time.Second}
	c, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-c.Done()
	if err := s.lostRaces("update", 3, c, c.Err()); !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "3 attempts each lost a race") {
		t.Fatalf("after 3 lost races: %v, want a conflict", err)
	}
	if err := s.lostRaces("update", 0, c, c.Err()); errors.Is(err, engine.ErrConflict) {
		t.Fatalf("with no lost race: %v, want no conflict", err)
	}
}
