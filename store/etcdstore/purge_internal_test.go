package etcdstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestDeleteManyEvents: a flow with more events than one etcd transaction
// may delete (inlineEvents) is deleted through a tombstone: the commit hides
// its events from every read at once, the batches that follow remove them,
// and nothing of another flow is touched. A deletion whose purge never ran
// (the process died right after the commit) is finished by GC, sparing the
// events of a flow re-created under the same id meanwhile. The same with
// the events where schema 7 keeps them (p/) and where schema 6's indexer
// moved them (e/ and x/).
func TestDeleteManyEvents(t *testing.T) {
	c := etcdtest.Start(t, 1)
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("indexed=%v", legacy), func(t *testing.T) { testDeleteManyEvents(t, c, legacy) })
	}
}

func testDeleteManyEvents(t *testing.T, c *etcdtest.Cluster, legacy bool) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: fmt.Sprintf("/purge%v/", legacy)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The events of the log, and of one flow, wherever they are.
	logged := func() int { return countEvents(t, s, "e/") + countEvents(t, s, "p/") }
	flowEvents := func(id string) int { return countEvents(t, s, "x/"+id+"\x00") + countEvents(t, s, "p/"+id+"\x00") }

	// Flows big (300 events), dead (120) and small (10), interleaved with
	// keep's one by one (so each event is a key of its own while another
	// flow's follows it), 52 per transaction (2 keys each: under etcd's
	// 128 operations).
	counts := map[string]int{"big": 300, "dead": 120, "small": 10, "keep": 200}
	for _, id := range []string{"big", "dead", "small", "keep"} {
		if err := s.Update(ctx, func(tx engine.Tx) error { return storetest.Put(tx, storetest.NewState(id, state.StatusRunning)) }); err != nil {
			t.Fatal(err)
		}
	}
	left := maps(counts)
	for n := 0; ; n++ {
		var batch []engine.Event
		for range 13 {
			for _, id := range []string{"big", "keep", "dead", "small"} {
				if left[id] > 0 {
					left[id]--
					batch = append(batch, engine.Event{FlowID: id, Type: engine.EventStepDone, StepID: fmt.Sprintf("s%d", left[id])})
				}
			}
		}
		if len(batch) == 0 {
			break
		}
		if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Append(slices.Clone(batch)...) }); err != nil {
			t.Fatal(err)
		}
	}
	keys := func(p string) int { return int(keyCount(t, s, p)) }
	total := 300 + 120 + 10 + 200
	if legacy {
		if err := s.indexLegacy(ctx); err != nil {
			t.Fatal(err)
		}
		if n := keys("p/"); n != 0 {
			t.Fatalf("%d keys left in p/ after indexing", n)
		}
	}
	if got := logged(); got != total {
		t.Fatalf("%d events in the log, want %d", got, total)
	}
	last := lastSeq(t, s)

	// Deleting big (300 events) and small (10) in one Update: small's go in
	// the transaction, big's through the tombstone and the purge after it.
	if err := s.Update(ctx, func(tx engine.Tx) error {
		if err := tx.Delete("big"); err != nil {
			return err
		}
		return tx.Delete("small")
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"x/big\x00", "x/small\x00", "p/big\x00", "p/small\x00", "d/"} {
		if n := keys(p); n != 0 {
			t.Errorf("%d keys left under %q after the deletion", n, p)
		}
	}
	if got, want := logged(), 120+200; got != want {
		t.Errorf("%d events in the log after deleting big and small, want %d", got, want)
	}
	checkLog(t, s, map[string]int{"dead": 120, "keep": 200})
	if got := lastSeq(t, s); got != last {
		t.Errorf("LastSeq %d after the deletion, want %d (numbers are never reused)", got, last)
	}

	// A process that dies between the commit of a deletion and its purge:
	// the real commit, then nothing.
	tx := newTx(s, ctx, true)
	if err := tx.Delete("dead"); err != nil {
		t.Fatal(err)
	}
	if ok, err := tx.commit(); err != nil || !ok {
		t.Fatalf("commit: %v %v", ok, err)
	}
	if len(tx.purge) != 1 || keys("d/") != 1 || flowEvents("dead") != 120 {
		t.Fatalf("want a tombstone and 120 events left to purge: purge %v, d/ %d, events of dead %d", tx.purge, keys("d/"), flowEvents("dead"))
	}
	// Its events are hidden at once; a flow re-created under the same id
	// has only its new events.
	checkLog(t, s, map[string]int{"keep": 200})
	if err := s.Update(ctx, func(tx engine.Tx) error {
		if err := storetest.Put(tx, storetest.NewState("dead", state.StatusRunning)); err != nil {
			return err
		}
		return tx.Append(engine.Event{FlowID: "dead", Type: engine.EventStepDone, StepID: "again-1"},
			engine.Event{FlowID: "dead", Type: engine.EventStepDone, StepID: "again-2"})
	}); err != nil {
		t.Fatal(err)
	}
	checkLog(t, s, map[string]int{"keep": 200, "dead": 2})

	// GC (deleting nothing: every flow is younger than a year) finishes
	// the purge.
	n, err := s.GC(ctx, 365*24*time.Hour)
	if err != nil || n != 0 {
		t.Fatalf("GC: %d, %v", n, err)
	}
	if got := keys("d/"); got != 0 {
		t.Errorf("%d tombstones after GC", got)
	}
	if got := flowEvents("dead"); got != 2 {
		t.Errorf("%d events of the re-created flow dead after GC, want its 2", got)
	}
	if got, want := logged(), 200+2; got != want {
		t.Errorf("%d events in the log after GC, want %d", got, want)
	}
	checkLog(t, s, map[string]int{"keep": 200, "dead": 2})
}

func maps(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func lastSeq(t *testing.T, s *Store) uint64 {
	t.Helper()
	var n uint64
	if err := s.View(context.Background(), func(tx engine.Tx) (err error) { n, err = tx.LastSeq(); return err }); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkLog checks that the log (whole, and read 7 at a time) and each
// flow's events hold exactly want's flows with their counts, in order.
func checkLog(t *testing.T, s *Store, want map[string]int) {
	t.Helper()
	ctx := context.Background()
	if err := s.View(ctx, func(tx engine.Tx) error {
		all, err := tx.Events(0, 0)
		if err != nil {
			return err
		}
		var paged []engine.Event
		for after := uint64(0); ; {
			page, err := tx.Events(after, 7)
			if err != nil {
				return err
			}
			if len(page) == 0 {
				break
			}
			if len(page) > 7 {
				t.Errorf("Events(%d, 7) returned %d", after, len(page))
			}
			paged = append(paged, page...)
			after = page[len(page)-1].Seq
		}
		if len(paged) != len(all) {
			t.Errorf("paged log %d events, whole %d", len(paged), len(all))
		}
		got := map[string]int{}
		for i, e := range all {
			got[e.FlowID]++
			if i > 0 && e.Seq <= all[i-1].Seq {
				t.Errorf("log out of order at %d", e.Seq)
			}
		}
		for _, id := range []string{"big", "dead", "small", "keep"} {
			if got[id] != want[id] {
				t.Errorf("log: %d events of %s, want %d", got[id], id, want[id])
			}
			evs, err := tx.FlowEvents(id)
			if err != nil {
				return err
			}
			if len(evs) != want[id] {
				t.Errorf("FlowEvents(%s): %d, want %d", id, len(evs), want[id])
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// countEvents counts the events held under p (a key holds those one
// commit appended to one flow one after the other).
func countEvents(t *testing.T, s *Store, p string) int {
	t.Helper()
	r, err := s.cli.Get(context.Background(), s.key(p), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range r.Kvs {
		evs, err := decodeEvents(kv{key: string(k.Key), val: k.Value})
		if err != nil {
			t.Fatal(err)
		}
		n += len(evs)
	}
	return n
}
