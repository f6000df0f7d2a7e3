package backend_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/shared"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestCopy: bbolt → etcd → bbolt keeps flows (times, versions, summaries),
// the log in order and the cache; a non-empty destination is refused
// without force, and copying again with force changes nothing.
func TestCopy(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	dir := t.TempDir()
	openAt := func(loc string) *backend.Opened {
		t.Helper()
		o, err := backend.Open(ctx, shared.Settings{Home: dir, Store: loc})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o
	}
	src := openAt(filepath.Join(dir, "src.db"))
	for i, status := range []state.FlowStatus{state.StatusRunning, state.StatusComplete, state.StatusAwaitingGate} {
		st := storetest.NewState(string(rune('a'+i)), status)
		if status == state.StatusAwaitingGate {
			st.Gate = &state.PendingGate{StepID: "review"}
		}
		for j := 0; j <= i; j++ {
			if err := src.Update(ctx, func(tx engine.Tx) error {
				if err := storetest.Put(tx, st); err != nil {
					return err
				}
				return tx.Append(engine.Event{FlowID: st.FlowID, Type: engine.EventStepDone, StepID: "s"})
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := src.Update(ctx, func(tx engine.Tx) error { return tx.CachePut("k", []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := src.Update(ctx, func(tx engine.Tx) error {
		if err := tx.GuardPut("abc123", []byte(`{"reg":1}`)); err != nil {
			return err
		}
		if err := tx.GuardAppend("abc123", 0, []byte("e0")); err != nil {
			return err
		}
		return tx.GuardAppend("abc123", 1, []byte("e1"))
	}); err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, src)

	mid := openAt(c.URL("copy"))
	if _, err := backend.Copy(ctx, src, mid, false); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, mid); got != want {
		t.Fatalf("etcd copy differs:\n got  %s\n want %s", got, want)
	}
	if _, err := backend.Copy(ctx, src, mid, false); !errors.Is(err, backend.ErrNotEmpty) {
		t.Fatalf("copy into a non-empty store without force: %v", err)
	}
	if _, err := backend.Copy(ctx, src, mid, true); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, mid); got != want {
		t.Fatalf("etcd copy after a forced second copy differs:\n got  %s\n want %s", got, want)
	}
	back := openAt(filepath.Join(dir, "back.db"))
	if _, err := backend.Copy(ctx, mid, back, false); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, back); got != want {
		t.Fatalf("copy back to bbolt differs:\n got  %s\n want %s", got, want)
	}
	n, err := back.Count(ctx)
	if err != nil || n.Flows != 3 || n.Gates != 1 || n.Events != 6 || n.Cache != 1 || n.Records != 1 {
		t.Fatalf("Count = %+v, %v", n, err)
	}
	// A mistyped etcd prefix is an empty source: refused, nothing copied.
	typo := openAt(c.URL("copyy"))
	empty := openAt(filepath.Join(dir, "empty.db"))
	if _, err := backend.Copy(ctx, typo, empty, false); !errors.Is(err, backend.ErrSourceEmpty) ||
		!strings.Contains(err.Error(), "check its path or etcd prefix") {
		t.Fatalf("copy from an empty source: %v", err)
	}
}

// snapshot renders what a store holds (sequence numbers aside: a copy
// numbers its log afresh).
func snapshot(t *testing.T, o *backend.Opened) string {
	t.Helper()
	var b strings.Builder
	if err := o.View(context.Background(), func(tx engine.Tx) error {
		sums, err := tx.List(engine.ListFilter{})
		if err != nil {
			return err
		}
		for _, s := range sums {
			st, err := tx.Get(s.FlowID)
			if err != nil {
				return err
			}
			b.WriteString(s.FlowID + " " + string(s.Status) + " v" + itoa(s.Version) + " " + s.CreatedAt.UTC().String() + " " + s.UpdatedAt.UTC().String() +
				" state:" + st.UpdatedAt.UTC().String() + " v" + itoa(st.Version) + ";")
		}
		g, err := tx.PendingGates()
		if err != nil {
			return err
		}
		b.WriteString(" gates:" + itoa(int64(len(g))))
		evs, err := tx.Events(0, 0)
		if err != nil {
			return err
		}
		for _, e := range evs {
			b.WriteString(" " + e.FlowID + "/" + string(e.Type) + "@" + e.Time.UTC().String())
		}
		v, ok, err := tx.CacheGet("k")
		b.WriteString(" cache:" + string(v))
		if !ok {
			b.WriteString("(missing)")
		}
		if err != nil {
			return err
		}
		keys, err := tx.GuardKeys()
		for _, k := range keys {
			reg, _, _ := tx.GuardGet(k)
			es, _ := tx.GuardEntries(k)
			b.WriteString(" record:" + k + "=" + string(reg))
			for _, e := range es {
				b.WriteString("," + string(e))
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
