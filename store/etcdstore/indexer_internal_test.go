package etcdstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

// TestIndexerMovesOwnEvents: a Store's indexer moves the events its own
// commits appended into the log, without reading p/; events another
// process moved first (an Open's or a GC's scan) are left alone, and an
// event whose flow was deleted before it was indexed is not brought back.
func TestIndexerMovesOwnEvents(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	open := func() *Store {
		t.Helper()
		s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/indexer/"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s, other := open(), open()
	count := func(p string) int64 {
		t.Helper()
		r, err := s.cli.Get(ctx, s.key(p), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return r.Count
	}
	// commit appends n events of flow id and returns them as the indexer
	// gets them, without kicking it (afterCommit is not called).
	commit := func(id string, n int) []pendingRec {
		t.Helper()
		x := newTx(s, ctx, true)
		for range n {
			if err := x.Append(engine.Event{FlowID: id, Type: engine.EventStepDone, StepID: "s"}); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := x.commit(); err != nil || !ok {
			t.Fatalf("commit: %v %v", ok, err)
		}
		return x.pendingRecs()
	}

	// Moved by another process's scan first: nothing left, nothing doubled.
	recs := commit("a", 2)
	if err := other.indexPending(ctx); err != nil {
		t.Fatal(err)
	}
	if left := s.indexOwn(ctx, recs); len(left) != 0 {
		t.Fatalf("%d events left after another indexer moved them", len(left))
	}
	// (one key each: a commit's events of one flow)
	if p, e, x := count("p/"), count("e/"), count("x/a\x00"); p != 0 || e != 1 || x != 1 {
		t.Fatalf("p/ %d, e/ %d, x/a %d; want 0, 1, 1", p, e, x)
	}

	// The flow deleted before its events were indexed: they stay deleted.
	recs = commit("gone", 3)
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("gone") }); err != nil {
		t.Fatal(err)
	}
	if left := s.indexOwn(ctx, recs); len(left) != 0 {
		t.Fatalf("%d events left after their flow was deleted", len(left))
	}
	if e, x := count("e/"), count("x/gone\x00"); e != 1 || x != 0 {
		t.Fatalf("e/ %d, x/gone %d after indexing a deleted flow's events; want 1, 0", e, x)
	}

	// The normal path: an Update's events are moved by its Store's indexer
	// with the numbers they were stamped with.
	evs := []engine.Event{{FlowID: "b", Type: engine.EventStepDone, StepID: "s"}, {FlowID: "b", Type: engine.EventStepDone, StepID: "t"}}
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) }); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for count("p/") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the indexer left the events of an Update in p/")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var got []engine.Event
	if err := s.View(ctx, func(tx engine.Tx) (err error) { got, err = tx.FlowEvents("b"); return err }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != evs[0].Seq || got[1].Seq != evs[1].Seq || got[1].StepID != "t" {
		t.Fatalf("indexed events of b %v, want the seqs %d %d", got, evs[0].Seq, evs[1].Seq)
	}
	r, err := s.cli.Get(ctx, s.key("e/", hex16(evs[0].Seq)))
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("e/ key of the commit's events: %v %v", r, err)
	}
	if both, err := decodeEvents(kv{key: string(r.Kvs[0].Key), val: r.Kvs[0].Value}); err != nil || len(both) != 2 || both[1].Seq != evs[1].Seq {
		t.Fatalf("e/ key of the commit's events holds %v %v, want both", both, err)
	}
}

// TestCommitCarriesMoves: a Store's next commit moves the events its
// previous commits left pending (no indexing transaction of its own), and
// a commit that deletes a flow carries none.
func TestCommitCarriesMoves(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/carry/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	indexed := func(e engine.Event) bool {
		t.Helper()
		r, err := s.cli.Get(ctx, s.key("e/", hex16(e.Seq)), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return r.Count == 1
	}
	appendOne := func(id string) engine.Event {
		t.Helper()
		evs := []engine.Event{{FlowID: id, Type: engine.EventStepDone, StepID: "s"}}
		if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) }); err != nil {
			t.Fatal(err)
		}
		return evs[0]
	}
	first := appendOne("a")
	second := appendOne("a")
	if !indexed(first) {
		t.Fatal("the next commit did not move the previous commit's event")
	}
	// A Delete of the flow right after its event: the event stays gone.
	third := appendOne("b")
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("b") }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * indexDelay)
	if indexed(third) {
		t.Fatal("the event of a flow deleted before it was indexed came back")
	}
	if !indexed(second) {
		t.Fatal("the indexer did not move what no later commit carried")
	}
}

// TestCarryingWithinLowerLimits: on members that accept fewer operations
// per transaction than etcd's default, a commit refused because of the
// moves it carried is sent again without them (and the Store carries none
// from then on): carrying never fails an Update.
func TestCarryingWithinLowerLimits(t *testing.T) {
	c := etcdtest.StartWith(t, etcdtest.Options{MaxTxnOps: 50})
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/limits/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendN := func(n int) {
		t.Helper()
		evs := make([]engine.Event, n)
		for i := range evs { // a flow each: a key each
			evs[i] = engine.Event{FlowID: fmt.Sprintf("f%d", i), Type: engine.EventStepDone, StepID: "s"}
		}
		if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) }); err != nil {
			t.Fatal(err)
		}
	}
	appendN(20) // 22 operations: within the members' 50
	appendN(1)  // would carry 20 moves (60 operations)
	if !s.noCarry.Load() {
		t.Fatal("the Store still carries moves after the members refused them")
	}
	var n int
	if err := s.View(ctx, func(tx engine.Tx) error { evs, err := tx.Events(0, 0); n = len(evs); return err }); err != nil {
		t.Fatal(err)
	}
	if n != 21 {
		t.Fatalf("%d events in the log, want 21", n)
	}
}
