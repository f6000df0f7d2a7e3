package backend_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

func TestParse(t *testing.T) {
	l, err := backend.Parse("etcd://10.0.0.1:2379,10.0.0.2:2379/team-a")
	if err != nil || l.Kind != backend.KindEtcd || len(l.Endpoints) != 2 || l.Prefix != "team-a" {
		t.Fatalf("Parse = %+v, %v", l, err)
	}
	if l, err := backend.Parse("/tmp/x.db"); err != nil || l.Kind != backend.KindBbolt || l.Path != "/tmp/x.db" {
		t.Fatalf("Parse(path) = %+v, %v", l, err)
	}
	for in, want := range map[string]string{
		"etcd://h:1":                 "a prefix is required",
		"etcd://h:1/":                "a prefix is required",
		"etcd://h/x":                 "want HOST:PORT",
		"etcd:///x":                  "no endpoint",
		"redis://h:1/x":              "unknown scheme",
		"etcd://bob:s3cret@h:2379/x": "credentials do not belong",
		"etcd://h:99999/x":           "bad port",
		// A query or fragment became part of the prefix, echoed in
		// store info, the TUI header, errors and every key (issue 23).
		"etcd://h:2379/team?password=s3cret":    "a query or fragment",
		"etcd://h:2379/team#s3cret":             "a query or fragment",
		"etcd://h:2379?password=s3cret":         "a query or fragment",
		"etcds://h:2379/team/?user=a&pw=s3cret": "a query or fragment",
		"etcd://h:2379/te\x00am":                "control character",
		"etcd://h:2379/te\nam":                  "control character",
	} {
		_, err := backend.Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q) leaks the password: %v", in, err)
		}
	}
}

func TestSettingsPrecedence(t *testing.T) {
	cfg := config.Config{Store: "etcd://127.0.0.1:2379/from-config", StoreTimeout: 7 * time.Second, Etcd: config.Etcd{User: "cfg-user", Password: "cfg-pass"}}
	env := map[string]string{"STRATUM_STORE": "etcd://127.0.0.1:2379/from-env", "STRATUM_ETCD_PASSWORD": "env-pass"}
	s, err := backend.FromEnv("/home/x", cfg, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.Store != env["STRATUM_STORE"] || s.Timeout != 7*time.Second || s.Etcd.User != "cfg-user" || s.Etcd.Password != "env-pass" {
		t.Fatalf("settings = %+v", s)
	}
	s, _ = backend.FromEnv("/home/x", config.Config{}, func(string) string { return "" })
	if l, _ := s.Location(); l.Kind != backend.KindBbolt || l.Path != filepath.Join("/home/x", "stratum.db") {
		t.Fatalf("default location = %+v", l)
	}
	if _, err := backend.FromEnv("/h", config.Config{}, func(k string) string {
		return map[string]string{"STRATUM_STORE_TIMEOUT": "soon"}[k]
	}); err == nil {
		t.Fatal("a bad STRATUM_STORE_TIMEOUT was accepted")
	}
}

func TestInsecureRefused(t *testing.T) {
	s := backend.Settings{Store: "etcd://192.0.2.1:2379/team", Etcd: config.Etcd{Password: "s3cret"}}
	_, err := backend.Open(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "not a loopback address") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open of a remote endpoint without TLS: %v", err)
	}
}

// TestUnreachable: a cluster nobody answers for fails within the timeout
// with one line naming the endpoint and what to do.
func TestUnreachable(t *testing.T) {
	s := backend.Settings{Store: "etcd://127.0.0.1:9/team", Timeout: time.Second, Etcd: config.Etcd{User: "u", Password: "s3cret"}}
	t0 := time.Now()
	_, err := backend.Open(context.Background(), s)
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("Open took %v with a 1s timeout", d)
	}
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:9") || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open of an unreachable cluster: %v", err)
	}
	t.Log(err)
}

// TestCopy: bbolt → etcd → bbolt keeps flows (times, versions, summaries),
// the log in order and the cache; a non-empty destination is refused
// without force, and copying again with force changes nothing.
func TestCopy(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	dir := t.TempDir()
	openAt := func(loc string) *backend.Opened {
		t.Helper()
		o, err := backend.Open(ctx, backend.Settings{Home: dir, Store: loc})
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
