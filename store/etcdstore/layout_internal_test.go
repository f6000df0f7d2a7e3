package etcdstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

// putFlow writes a flow at status st (a transition of the flow when it is
// stored, reading it first as the engine does).
func putFlow(t *testing.T, s *Store, id string, status state.FlowStatus) {
	t.Helper()
	if err := s.Update(context.Background(), func(tx engine.Tx) error {
		st, err := tx.Get(id)
		if err != nil {
			st = &state.FlowState{FlowID: id, FlowName: "main"}
		}
		st.Status = status
		expect := st.Stamp(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(len(id)) * time.Second))
		return tx.Put(st, engine.Summarize(st, nil), expect)
	}); err != nil {
		t.Fatal(err)
	}
}

// keyCount is the number of keys under the store's prefix p.
func keyCount(t *testing.T, s *Store, p string) int64 {
	t.Helper()
	r, err := s.cli.Get(context.Background(), s.key(p), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return r.Count
}

// listIDs lists the flows (of status, or all) as "id:status", newest first.
func listIDs(t *testing.T, s *Store, status state.FlowStatus) string {
	t.Helper()
	var out []string
	if err := s.View(context.Background(), func(tx engine.Tx) error {
		sums, err := tx.List(engine.ListFilter{Status: status})
		for _, sum := range sums {
			out = append(out, sum.FlowID+":"+string(sum.Status))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// TestSchema4IndexCopies: a prefix of schema 4, whose index entries c/ and
// t/ hold copies of the summaries, opens as schema 5 without moving a
// key; its listings read the summaries from s/ (a copy left in an entry
// whose key did not change is stale and not read), and a transition
// writes no index entry unless the status changes.
func TestSchema4IndexCopies(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/four/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "bb", "ccc"} {
		putFlow(t, s, id, state.StatusRunning)
	}
	s.Close()
	// As schema 4 wrote them: each index entry holds the summary.
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	root := keyRoot("/four/")
	for _, p := range []string{"c/", "t/"} {
		r, err := cli.Get(ctx, root+p, clientv3.WithPrefix())
		if err != nil || len(r.Kvs) != 3 {
			t.Fatalf("%s: %v %v", p, r, err)
		}
		for _, k := range r.Kvs {
			if len(k.Value) != 0 {
				t.Fatalf("schema 5 entry %q holds %q, want nothing", k.Key, k.Value)
			}
			id := string(k.Key[strings.LastIndexByte(string(k.Key), 0)+1:])
			sum, err := cli.Get(ctx, root+"s/"+id)
			if err != nil || len(sum.Kvs) != 1 {
				t.Fatal(err)
			}
			if _, err := cli.Put(ctx, string(k.Key), string(sum.Kvs[0].Value)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := cli.Put(ctx, root+"meta/schema_version", "4"); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/four/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersionOf(ctx); err != nil || v != SchemaVersion {
		t.Fatalf("schema after Open: %d %v, want %d", v, err, SchemaVersion)
	}
	if got, want := listIDs(t, s, ""), "ccc:running bb:running a:running"; got != want {
		t.Fatalf("listing after the upgrade: %q, want %q", got, want)
	}
	// bb moves on (its c/ entry keeps its stale copy), a stays running
	// but is written again.
	putFlow(t, s, "bb", state.StatusComplete)
	before, err := cli.Get(ctx, root, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	putFlow(t, s, "a", state.StatusRunning)
	for _, tc := range []struct {
		status state.FlowStatus
		want   string
	}{
		{"", "ccc:running bb:complete a:running"},
		{state.StatusRunning, "ccc:running a:running"},
		{state.StatusComplete, "bb:complete"},
	} {
		if got := listIDs(t, s, tc.status); got != tc.want {
			t.Errorf("List(%q) = %q, want %q", tc.status, got, tc.want)
		}
	}
	// The transition of a that kept its status put only f/ and s/.
	r, err := cli.Get(ctx, root, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMinModRev(before.Header.Revision+1))
	if err != nil {
		t.Fatal(err)
	}
	var put []string
	for _, k := range r.Kvs {
		put = append(put, strings.TrimPrefix(string(k.Key), root))
	}
	if got := strings.Join(put, " "); got != "f/a s/a" {
		t.Errorf("a transition that keeps the status wrote %q, want f/a s/a", got)
	}
}

// TestBatchedEvents: the events a commit appends to one flow one after the
// other share a key of the log (p/; e/ and x/ where schema 6's indexer
// moved it), and every read finds each of them with its own number, from
// any cursor, in either place.
func TestBatchedEvents(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/batched/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x := newTx(s, ctx, true)
	evs := []engine.Event{{FlowID: "a", Type: engine.EventStepDone, StepID: "a1"}, {FlowID: "a", Type: engine.EventStepDone, StepID: "a2"},
		{FlowID: "b", Type: engine.EventStepDone, StepID: "b1"}}
	if err := x.Append(evs[:1]...); err != nil {
		t.Fatal(err)
	}
	if err := x.Append(evs[1:]...); err != nil {
		t.Fatal(err)
	}
	a3 := []engine.Event{{FlowID: "a", Type: engine.EventStepDone, StepID: "a3"}}
	if err := x.Append(a3...); err != nil {
		t.Fatal(err)
	}
	if ok, err := x.commit(); err != nil || !ok {
		t.Fatalf("commit: %v %v", ok, err)
	}
	evs = append(evs, a3[0])
	count := func(p string) int64 { return keyCount(t, s, p) }
	steps := func(evs []engine.Event) string {
		var out []string
		for _, e := range evs {
			out = append(out, e.StepID)
		}
		return strings.Join(out, " ")
	}
	for i := range evs {
		if i > 0 && evs[i].Seq != evs[i-1].Seq+1 {
			t.Fatalf("numbers %v: not consecutive", evs)
		}
	}
	check := func(when string) {
		t.Helper()
		for _, tc := range []struct {
			after uint64
			limit int
			want  string
		}{
			{0, 0, "a1 a2 b1 a3"},
			{evs[0].Seq, 2, "a2 b1"},
			{evs[0].Seq, 1, "a2"},
			{evs[1].Seq, 0, "b1 a3"},
			{evs[3].Seq, 0, ""},
		} {
			var got []engine.Event
			if err := s.View(ctx, func(etx engine.Tx) (err error) { got, err = etx.(*tx).logEvents(tc.after, tc.limit); return err }); err != nil {
				t.Fatal(err)
			}
			if steps(got) != tc.want {
				t.Errorf("%s: Events(%d, %d) = %q, want %q", when, tc.after, tc.limit, steps(got), tc.want)
			}
		}
		var a []engine.Event
		if err := s.View(ctx, func(tx engine.Tx) (err error) { a, err = tx.FlowEvents("a"); return err }); err != nil {
			t.Fatal(err)
		}
		if steps(a) != "a1 a2 a3" || a[2].Seq != evs[3].Seq {
			t.Errorf("%s: FlowEvents(a) = %v", when, a)
		}
	}
	if n := count("p/"); n != 3 {
		t.Fatalf("%d pending keys, want 3 (a1 a2, b1, a3)", n)
	}
	check("pending")
	if err := s.indexLegacy(ctx); err != nil {
		t.Fatal(err)
	}
	if p, e, x := count("p/"), count("e/"), count("x/"); p != 0 || e != 3 || x != 3 {
		t.Fatalf("after indexing: p/ %d, e/ %d, x/ %d; want 0, 3, 3", p, e, x)
	}
	check("indexed")
}

// TestListInsideUpdate: a listing inside an Update compares what it read —
// each summary when it read a few, the range of s/ when it read more than
// etcd accepts compares of (so the commit is not refused for its size) —
// and a write of a listed flow after the snapshot fails the commit.
func TestListInsideUpdate(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/listing/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range []int{3, 200} {
		for i := range n {
			id := fmt.Sprintf("n%d-%03d", n, i)
			if err := s.Update(ctx, func(tx engine.Tx) error {
				st := &state.FlowState{FlowID: id, FlowName: "main", Status: state.StatusRunning}
				return tx.Put(st, engine.Summarize(st, nil), st.Stamp(time.Now()))
			}); err != nil {
				t.Fatal(err)
			}
		}
		x := newTx(s, ctx, true)
		sums, err := x.List(engine.ListFilter{})
		if err != nil || len(sums) < n {
			t.Fatalf("List of %d flows in an Update: %d, %v", n, len(sums), err)
		}
		if err := x.CachePut("k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if ok, err := x.commit(); err != nil || !ok {
			t.Fatalf("commit after listing %d flows: %v %v", len(sums), ok, err)
		}
		// The same, with a listed flow written after the snapshot.
		x = newTx(s, ctx, true)
		if _, err := x.List(engine.ListFilter{}); err != nil {
			t.Fatal(err)
		}
		putFlow(t, s, fmt.Sprintf("n%d-%03d", n, 0), state.StatusComplete)
		if err := x.CachePut("k", []byte("w")); err != nil {
			t.Fatal(err)
		}
		if ok, err := x.commit(); err != nil || ok {
			t.Fatalf("commit after a listed flow changed (%d listed): %v %v, want a conflict", len(sums), ok, err)
		}
	}
}
