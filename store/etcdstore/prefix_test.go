package etcdstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/shared"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestNestedPrefixesIsolated: the prefixes p, p/d and p/e share a cluster
// and none sees or touches another's keys. With schema 1 (keys below
// "/p/"), p's tombstone range d/ held every key of p/d, so gc on p printed
// {"deleted":0} and erased p/d's flows, and p's event log range e/ held
// p/e's keys, so store info on p failed to decode them.
func TestNestedPrefixesIsolated(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	open := func(prefix string) *backend.Opened {
		t.Helper()
		loc, err := shared.Parse(c.URL(prefix))
		if err != nil {
			t.Fatal(err)
		}
		o, err := backend.OpenAt(ctx, loc, shared.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o
	}
	stores := map[string]*backend.Opened{"p": open("p"), "p/d": open("p/d"), "p/e": open("p/e")}
	for name, o := range stores {
		err := o.Update(ctx, func(tx engine.Tx) error {
			if err := storetest.Put(tx, storetest.NewState(name+"-done", state.StatusComplete)); err != nil {
				return err
			}
			if err := storetest.Put(tx, storetest.NewState(name+"-waiting", state.StatusRunning)); err != nil {
				return err
			}
			return tx.Append(engine.Event{FlowID: name + "-done", Type: engine.EventFlowCreated},
				engine.Event{FlowID: name + "-waiting", Type: engine.EventFlowCreated})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	flows := func(o *backend.Opened) []string {
		t.Helper()
		var ids []string
		if err := o.View(ctx, func(tx engine.Tx) error {
			sums, err := tx.List(engine.ListFilter{})
			for _, s := range sums {
				ids = append(ids, s.FlowID)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return ids
	}

	// info on each prefix counts its own flows and events only.
	for name, o := range stores {
		n, err := o.Count(ctx)
		if err != nil {
			t.Fatalf("count %s: %v", name, err)
		}
		if n.Flows != 2 || n.Events != 2 {
			t.Errorf("%s: %d flows, %d events, want 2 and 2", name, n.Flows, n.Events)
		}
		if _, err := backend.Describe(ctx, o); err != nil {
			t.Errorf("info %s: %v", name, err)
		}
	}

	// gc on p deletes p's finished flow, nothing of p/d or p/e.
	gc, ok := stores["p"].Store.(interface {
		GC(context.Context, time.Duration) (int, error)
	})
	if !ok {
		t.Fatal("no GC")
	}
	n, err := gc.GC(ctx, 0)
	if err != nil || n != 1 {
		t.Fatalf("gc p = %d, %v; want 1", n, err)
	}
	if got := flows(stores["p"]); len(got) != 1 || got[0] != "p-waiting" {
		t.Errorf("p after its gc: %v", got)
	}
	for _, name := range []string{"p/d", "p/e"} {
		if got := flows(stores[name]); len(got) != 2 {
			t.Errorf("%s after p's gc: %v, want its 2 flows", name, got)
		}
	}

	// copy of p takes p's flow only.
	dst := open("q")
	if _, err := backend.Copy(ctx, stores["p"], dst, false); err != nil {
		t.Fatal(err)
	}
	if got := flows(dst); len(got) != 1 || got[0] != "p-waiting" {
		t.Errorf("copy of p: %v", got)
	}
}
