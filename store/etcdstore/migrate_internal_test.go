package etcdstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/storetest"
)

// legacyStore is a Store writing schema 1's layout (keys below the prefix
// itself), as stratum did before schema 2.
func legacyStore(t *testing.T, c *etcdtest.Cluster, pfx string) *Store {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	s := &Store{cli: cli, pfx: pfx, root: pfx, eps: c.Endpoints, timeout: 5 * time.Second}
	ctx := context.Background()
	for k, v := range map[string]string{"meta/format": format, "meta/schema_version": "1", "meta/created_at": "2026-01-01T00:00:00Z"} {
		if _, err := cli.Put(ctx, pfx+k, v); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestMigrateNestedLegacyPrefixes: prefixes written in schema 1, one nested
// in the other (/m/ and /m/d/), are each migrated in place at their first
// Open: every flow and event of each is found under its own root, nothing
// of one goes to the other, the old keys are gone but the old layout's
// meta/schema_version says 2 (an older stratum refuses the prefix), and a
// second Open finds the migration done.
func TestMigrateNestedLegacyPrefixes(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	write := func(s *Store, name string, n int) {
		t.Helper()
		for i := range n {
			id := name + "-" + strconv.Itoa(i)
			if err := s.Update(ctx, func(tx engine.Tx) error {
				if err := storetest.Put(tx, storetest.NewState(id, state.StatusRunning)); err != nil {
					return err
				}
				return tx.Append(engine.Event{FlowID: id, Type: engine.EventFlowCreated})
			}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Update(ctx, func(tx engine.Tx) error { return tx.CachePut(name+"/cache", []byte("v")) }); err != nil {
			t.Fatal(err)
		}
		// Schema 1 had no p/: index them as it would have
		// written them (e/ and x/).
		if err := s.indexLegacy(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write(legacyStore(t, c, "/m/"), "m", 150) // more than one batch
	write(legacyStore(t, c, "/m/d/"), "d", 3)

	check := func(pfx, name string, n int) {
		t.Helper()
		s, err := Open(ctx, Options{Endpoints: c.Endpoints, Prefix: pfx})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if v, err := s.SchemaVersionOf(ctx); err != nil || v != SchemaVersion {
			t.Fatalf("%s: schema %d, %v", pfx, v, err)
		}
		var sums []state.FlowSummary
		var evs []engine.Event
		var cached []byte
		if err := s.View(ctx, func(tx engine.Tx) error {
			var err error
			if sums, err = tx.List(engine.ListFilter{}); err != nil {
				return err
			}
			if evs, err = tx.Events(0, 0); err != nil {
				return err
			}
			cached, _, err = tx.CacheGet(name + "/cache")
			return err
		}); err != nil {
			t.Fatalf("%s: %v", pfx, err)
		}
		if len(sums) != n || len(evs) != n || string(cached) != "v" {
			t.Fatalf("%s: %d flows, %d events, cache %q; want %d, %d, v", pfx, len(sums), len(evs), cached, n, n)
		}
		for _, sum := range sums {
			if sum.FlowID[:len(name)+1] != name+"-" {
				t.Fatalf("%s holds %s", pfx, sum.FlowID)
			}
		}
		v, err := s.cli.Get(ctx, pfx+"meta/schema_version")
		if err != nil || len(v.Kvs) != 1 || string(v.Kvs[0].Value) != "2" {
			t.Fatalf("%s: the old layout's schema_version: %v %v", pfx, v, err)
		}
		own, _, err := s.legacyKeys(ctx)
		if err != nil || len(own) != 2 { // meta/format and meta/schema_version
			t.Fatalf("%s: old keys left: %q %v", pfx, own, err)
		}
	}
	check("/m/", "m", 150)
	check("/m/d/", "d", 3)
	check("/m/", "m", 150) // already migrated
}
