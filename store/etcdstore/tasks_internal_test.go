package etcdstore

import (
	"context"
	"fmt"
	stdmaps "maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sjson "github.com/segmentio/encoding/json"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

// taskRec is a task record as the engine holds it (decoded JSON).
func taskRec(id, st string) map[string]any {
	return map[string]any{"task_id": id, "state": st, "result": map[string]any{"n": float64(len(id))}, "error": nil}
}

// changeTasks runs an Update that applies fn to the flow's task records
// (creating the flow) and returns the keys below the root it wrote or
// deleted.
func changeTasks(t *testing.T, s *Store, cli *clientv3.Client, id string, fn func(map[string]any)) []string {
	t.Helper()
	return writtenBy(t, s, cli, func(tx engine.Tx) error {
		st, err := tx.Get(id)
		if err != nil {
			st = &state.FlowState{FlowID: id, FlowName: "main", Status: state.StatusRunning}
		}
		if st.ParallelTasks == nil {
			st.ParallelTasks = map[string]any{}
		}
		fn(st.ParallelTasks)
		expect := st.Stamp(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		return tx.Put(st, engine.Summarize(st, nil), expect)
	})
}

// writtenBy runs an Update of fn and returns the keys below the root it
// wrote or deleted.
func writtenBy(t *testing.T, s *Store, cli *clientv3.Client, fn func(engine.Tx) error) []string {
	t.Helper()
	ctx := context.Background()
	before, err := cli.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, fn); err != nil {
		t.Fatal(err)
	}
	// What changed since: the keys present now with a newer revision, and
	// the deletions seen by a watch from then.
	root := s.root
	r, err := cli.Get(ctx, root, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMinModRev(before.Header.Revision+1))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range r.Kvs {
		out = append(out, strings.TrimPrefix(string(k.Key), root))
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w := cli.Watch(wctx, root, clientv3.WithPrefix(), clientv3.WithRev(before.Header.Revision+1))
	for resp := range w {
		for _, e := range resp.Events {
			if e.Type == clientv3.EventTypeDelete {
				out = append(out, "-"+strings.TrimPrefix(string(e.Kv.Key), root))
			}
		}
		if resp.Header.Revision >= r.Header.Revision || len(resp.Events) == 0 {
			break
		}
		if last := resp.Events[len(resp.Events)-1]; last.Kv.ModRevision >= r.Header.Revision {
			break
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// storedTasks reads the flow's records through s (a View).
func viewTasks(t *testing.T, s *Store, id string) map[string]any {
	t.Helper()
	var got map[string]any
	if err := s.View(context.Background(), func(tx engine.Tx) error {
		st, err := tx.Get(id)
		if err == nil {
			got = st.ParallelTasks
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func taskKeys(t *testing.T, s *Store, cli *clientv3.Client, id string) int {
	t.Helper()
	r, err := cli.Get(context.Background(), s.taskPrefix(id), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return int(r.Count)
}

// TestTaskKeys: a flow with more than tasksInline task records keeps them
// one key each; a transition writes the records that changed and f/ s/
// only; a second Store (no cache) reads and writes them the same; back
// under the bound they return to the state; Delete removes them.
func TestTaskKeys(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/tasks/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	want := map[string]any{}
	for i := range 40 {
		want[fmt.Sprintf("t%02d", i)] = taskRec(fmt.Sprintf("t%02d", i), state.TaskPending)
	}
	changeTasks(t, s, cli, "a", func(m map[string]any) { maps2(m, want) })
	if n := taskKeys(t, s, cli, "a"); n != 40 {
		t.Fatalf("%d task keys, want 40", n)
	}
	raw, err := cli.Get(ctx, s.key("f/", "a"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := unpackState(raw.Kvs[0].Value)
	if err != nil || strings.Contains(string(j), "parallel_tasks") || tasksOf(j) != 40 {
		t.Fatalf("f/a holds %.200s (%v), want no records and a count of 40", j, err)
	}
	if got := viewTasks(t, s, "a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("records read back: %v, want %v", got, want)
	}

	// One record changes, one is added: those two keys, f/ and s/.
	got := changeTasks(t, s, cli, "a", func(m map[string]any) {
		m["t07"] = taskRec("t07", state.TaskComplete)
		m["t40"] = taskRec("t40", state.TaskRunning)
	})
	want["t07"], want["t40"] = taskRec("t07", state.TaskComplete), taskRec("t40", state.TaskRunning)
	if w := "f/a r/a\x00t07 r/a\x00t40 s/a"; strings.Join(got, " ") != w {
		t.Fatalf("a transition changing two records wrote %q, want %q", got, w)
	}
	// Another Store, which has no records cached, reads them and
	// writes only what changes too; one record goes.
	s2, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/tasks/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := viewTasks(t, s2, "a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("records read by another Store: %v, want %v", got, want)
	}
	got = changeTasks(t, s2, cli, "a", func(m map[string]any) { delete(m, "t01") })
	delete(want, "t01")
	if w := "-r/a\x00t01 f/a s/a"; strings.Join(got, " ") != w {
		t.Fatalf("a transition removing a record wrote %q, want %q", got, w)
	}
	// s, whose cache is now stale, reads the new records.
	if got := viewTasks(t, s, "a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("records read after another Store's write: %v, want %v", got, want)
	}
	got = changeTasks(t, s, cli, "a", func(m map[string]any) { m["t02"] = taskRec("t02", state.TaskFailed) })
	want["t02"] = taskRec("t02", state.TaskFailed)
	if w := "f/a r/a\x00t02 s/a"; strings.Join(got, " ") != w {
		t.Fatalf("a transition after another Store's wrote %q, want %q", got, w)
	}

	// Back to tasksInline records: in the state again, no task key left.
	changeTasks(t, s, cli, "a", func(m map[string]any) {
		for k := range m {
			if k >= "t16" {
				delete(m, k)
				delete(want, k)
			}
		}
	})
	if n := taskKeys(t, s, cli, "a"); n != 0 || len(want) > tasksInline {
		t.Fatalf("%d task keys with %d records, want none", n, len(want))
	}
	if got := viewTasks(t, s2, "a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("records back in the state: %v, want %v", got, want)
	}

	// Delete removes the task keys of a flow.
	changeTasks(t, s, cli, "b", func(m map[string]any) {
		for i := range tasksInline + 1 {
			m[fmt.Sprint(i)] = taskRec(fmt.Sprint(i), "")
		}
	})
	if n := taskKeys(t, s, cli, "b"); n != tasksInline+1 {
		t.Fatalf("b: %d task keys, want %d", n, tasksInline+1)
	}
	if err := s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("b") }); err != nil {
		t.Fatal(err)
	}
	if n := taskKeys(t, s, cli, "b"); n != 0 {
		t.Fatalf("b deleted: %d task keys left", n)
	}
}

// TestTaskOpsMax: a transition that would write more task keys than one
// etcd transaction takes keeps the records in the state; one that
// deletes the flow's task keys and writes the flow again in the same
// transaction too.
func TestTaskOpsMax(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/tasksmax/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	want := map[string]any{}
	changeTasks(t, s, cli, "a", func(m map[string]any) {
		for i := range 300 {
			id := fmt.Sprintf("t%03d", i)
			m[id], want[id] = taskRec(id, state.TaskPending), taskRec(id, state.TaskPending)
		}
	})
	if n := taskKeys(t, s, cli, "a"); n != 0 {
		t.Fatalf("%d task keys after a transition adding 300 records, want none", n)
	}
	if got := viewTasks(t, s, "a"); !reflect.DeepEqual(got, want) {
		t.Fatal("300 records in the state do not read back")
	}
	// 40 records move out; then one transaction deletes the flow and
	// creates it again with 40 records: they stay in the state.
	changeTasks(t, s, cli, "b", func(m map[string]any) {
		for i := range 40 {
			m[fmt.Sprint(i)] = taskRec(fmt.Sprint(i), "")
		}
	})
	if err := s.Update(ctx, func(tx engine.Tx) error {
		st, err := tx.Get("b")
		if err != nil {
			return err
		}
		if err := tx.Delete("b"); err != nil {
			return err
		}
		st.Version = 0
		expect := st.Stamp(time.Now())
		return tx.Put(st, engine.Summarize(st, nil), expect)
	}); err != nil {
		t.Fatal(err)
	}
	if n := taskKeys(t, s, cli, "b"); n != 0 {
		t.Fatalf("b deleted and put again: %d task keys, want none", n)
	}
	if got := viewTasks(t, s, "b"); len(got) != 40 {
		t.Fatalf("b: %d records, want 40", len(got))
	}
}

// TestSchema5Tasks: a flow written by schema 5 (its 40 task records in
// f/, no count) opens as schema 6 without moving a key, reads its
// records, and moves them to their own keys at its next transition.
func TestSchema5Tasks(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/five/"})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	want := map[string]any{}
	for i := range 40 {
		want[fmt.Sprint(i)] = taskRec(fmt.Sprint(i), state.TaskComplete)
	}
	changeTasks(t, s, cli, "a", func(m map[string]any) { maps2(m, want) })
	st := viewState(t, s, "a")
	s.Close()
	// As schema 5 wrote it: the records in f/ (deflated), no task keys,
	// no count in f/ or s/.
	data, err := sjson.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	sum := engine.Summarize(st, nil)
	sumData, err := sjson.Marshal(&sum)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Txn(ctx).Then(
		clientv3.OpPut(s.key("f/", "a"), string(packState(data))),
		clientv3.OpPut(s.key("s/", "a"), string(sumData)),
		clientv3.OpDelete(s.taskPrefix("a"), clientv3.WithPrefix()),
		clientv3.OpPut(s.key("meta/schema_version"), "5")).Commit(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/five/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersionOf(ctx); err != nil || v != SchemaVersion {
		t.Fatalf("schema after Open: %d %v, want %d", v, err, SchemaVersion)
	}
	if n := taskKeys(t, s, cli, "a"); n != 0 {
		t.Fatalf("Open moved keys: %d task keys", n)
	}
	if got := viewTasks(t, s, "a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("schema 5 records read: %v, want %v", got, want)
	}
	changeTasks(t, s, cli, "a", func(m map[string]any) { m["3"] = taskRec("3", state.TaskFailed) })
	want["3"] = taskRec("3", state.TaskFailed)
	if n := taskKeys(t, s, cli, "a"); n != 40 {
		t.Fatalf("after a transition: %d task keys, want 40", n)
	}
	if got := viewTasks(t, s, "a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("records after the move: %v, want %v", got, want)
	}
}

func viewState(t *testing.T, s *Store, id string) *state.FlowState {
	t.Helper()
	var st *state.FlowState
	if err := s.View(context.Background(), func(tx engine.Tx) (err error) {
		st, err = tx.Get(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return st
}

// maps2 copies src's entries into dst (deep copies).
func maps2(dst, src map[string]any) {
	for k, v := range src {
		dst[k] = state.CloneValue(v)
	}
}

// TestTaskHandedOver: a state whose records the caller keeps across
// transitions, as the engine does (Fork shares the records it does not
// replace), has only its replaced records written, the others found
// unchanged by identity (Put's rule: a value handed to Put is never
// written into); an equal record in a new value writes nothing either; a
// record read by Get is a copy the caller may change, so it is compared,
// never trusted by identity.
func TestTaskHandedOver(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: "/handed/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := &state.FlowState{FlowID: "a", FlowName: "main", Status: state.StatusRunning, ParallelTasks: map[string]any{}}
	for i := range 40 {
		id := fmt.Sprintf("t%02d", i)
		st.ParallelTasks[id] = taskRec(id, state.TaskPending)
	}
	put := func(st *state.FlowState) []string {
		t.Helper()
		return writtenBy(t, s, cli, func(tx engine.Tx) error {
			expect := st.Stamp(at)
			return tx.Put(st, engine.Summarize(st, nil), expect)
		})
	}
	put(st)
	steps := []struct {
		name   string
		change func(m map[string]any)
		want   string
	}{
		{"one record replaced", func(m map[string]any) { m["t03"] = taskRec("t03", state.TaskRunning) }, "f/a r/a\x00t03 s/a"},
		{"none replaced", func(map[string]any) {}, "f/a s/a"},
		{"an equal record in a new value", func(m map[string]any) { m["t05"] = taskRec("t05", state.TaskPending) }, "f/a s/a"},
		{"two replaced, one removed", func(m map[string]any) {
			m["t03"], m["t06"] = taskRec("t03", state.TaskComplete), taskRec("t06", state.TaskFailed)
			delete(m, "t09")
		}, "-r/a\x00t09 f/a r/a\x00t03 r/a\x00t06 s/a"},
	}
	for _, step := range steps {
		st = st.Fork()
		step.change(st.ParallelTasks)
		if got := strings.Join(put(st), " "); got != step.want {
			t.Errorf("%s: wrote %q, want %q", step.name, got, step.want)
		}
	}
	want := st.Fork().ParallelTasks
	if got := viewTasks(t, s, "a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("records read back: %v, want %v", got, want)
	}
	// A record read by Get and changed in place is written.
	got := changeTasks(t, s, cli, "a", func(m map[string]any) {
		m["t11"].(map[string]any)["state"] = state.TaskComplete
	})
	if w := "f/a r/a\x00t11 s/a"; strings.Join(got, " ") != w {
		t.Fatalf("a record read and changed in place: wrote %q, want %q", got, w)
	}
	// What the rule buys, and why it binds: a record handed to Put is
	// trusted by identity, not compared (a caller breaking the rule by
	// writing into it would see the change not stored).
	st = st.Fork()
	st.Version++ // the Get above stored one more version
	put(st)
	st.ParallelTasks["t12"].(map[string]any)["state"] = state.TaskComplete
	if got := strings.Join(put(st), " "); got != "f/a s/a" {
		t.Fatalf("a handed-over record compared, not trusted: wrote %q", got)
	}
}

// TestTaskSetWith: a task set built change by change over shared bases
// (taskSet.with: changes over a base, a new base every taskOverMax) holds
// what a plain map given the same changes holds, and every earlier set
// still holds what it held.
func TestTaskSetWith(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	model := map[string]any{}
	var set *taskSet
	type seen struct {
		set  *taskSet
		want map[string]any
	}
	var kept []seen
	for step := range 600 {
		chg := map[string]taskEntry{}
		for range 1 + rnd.IntN(4) {
			k := fmt.Sprintf("t%03d", rnd.IntN(150))
			if _, ok := model[k]; ok && rnd.IntN(3) == 0 {
				delete(model, k)
				chg[k] = taskEntry{gone: true}
				continue
			}
			v := float64(step)
			model[k] = v
			chg[k] = taskEntry{dec: v}
		}
		set = set.with(chg)
		if step%50 == 0 {
			kept = append(kept, seen{set, stdmaps.Clone(model)})
		}
		checkSet(t, step, set, model)
	}
	for i, s := range kept {
		checkSet(t, i*50, s.set, s.want)
	}
}

func checkSet(t *testing.T, step int, set *taskSet, want map[string]any) {
	t.Helper()
	got := map[string]any{}
	set.each(func(k string, e taskEntry) { got[k] = e.dec })
	if !reflect.DeepEqual(got, want) || set.n != len(want) {
		t.Fatalf("step %d: set holds %d records (n %d), want %d", step, len(got), set.n, len(want))
	}
	for k, v := range want {
		if e, ok := set.get(k); !ok || e.dec != v {
			t.Fatalf("step %d: get(%s) = %v %v, want %v", step, k, e.dec, ok, v)
		}
	}
	if len(set.over) >= taskOverMax {
		t.Fatalf("step %d: %d changes over the base", step, len(set.over))
	}
}
