package etcdstore

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestFollows: the store's rule of its sequence numbers (engine.EventOrder)
// for the commits its Service publishes: within a commit numbers are
// consecutive; the first event of a commit follows the last event of the
// appending commit before it — whoever made it, whatever commits without
// events came between — and nothing else.
func TestFollows(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	open := func() *Store {
		t.Helper()
		s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/order/"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s, other := open(), open()
	appendTwo := func(st *Store) []engine.Event {
		t.Helper()
		evs := []engine.Event{{FlowID: "f", Type: engine.EventStepDone, StepID: "s"}, {FlowID: "f", Type: engine.EventStepDone, StepID: "t"}}
		if err := st.Update(ctx, func(tx engine.Tx) error { return tx.Append(evs...) }); err != nil {
			t.Fatal(err)
		}
		return evs
	}
	a := appendTwo(s) // the prefix's first append: no predecessor known
	b := appendTwo(s)
	if err := s.Update(ctx, func(tx engine.Tx) error { return storetest.Put(tx, storetest.NewState("f", state.StatusRunning)) }); err != nil {
		t.Fatal(err)
	}
	cc := appendTwo(s) // after a commit without events
	d := appendTwo(other)
	e := appendTwo(s) // after another Store's commit
	for _, tc := range []struct {
		after, seq uint64
		want       bool
	}{
		{0, a[0].Seq, false},
		{a[0].Seq, a[1].Seq, true},
		{a[1].Seq, b[0].Seq, true},
		{a[0].Seq, b[0].Seq, false},
		{a[1].Seq, b[1].Seq, false},
		{b[1].Seq, cc[0].Seq, true},
		{cc[1].Seq, e[0].Seq, false},
		{d[1].Seq, e[0].Seq, true},
		{d[0].Seq, e[0].Seq, false},
		{d[1].Seq, e[1].Seq, false},
	} {
		if got := s.Follows(tc.after, tc.seq); got != tc.want {
			t.Errorf("Follows(%d, %d) = %v, want %v", tc.after, tc.seq, got, tc.want)
		}
	}
	if got := other.Follows(cc[1].Seq, d[0].Seq); !got {
		t.Errorf("the other Store: Follows(%d, %d) = false for its own commit", cc[1].Seq, d[0].Seq)
	}
	if got := lastSeq(t, other); got != e[1].Seq {
		t.Fatalf("LastSeq %d, want the last appended %d", got, e[1].Seq)
	}
}

// TestSchema3Upgrade: a prefix of schema 3 becomes the current schema at Open
// without moving a key (meta/last_append comes with the next append).
func TestSchema3Upgrade(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	root := keyRoot("/three/")
	for k, v := range map[string]string{"meta/format": format, "meta/schema_version": "3", "meta/seq": "0"} {
		if _, err := cli.Put(ctx, root+k, v); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/three/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersionOf(ctx); err != nil || v != SchemaVersion {
		t.Fatalf("schema after Open: %d %v, want %d", v, err, SchemaVersion)
	}
}
