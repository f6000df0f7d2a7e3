package mcp_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
	"github.com/stratum-go/stratum/store/shared"
)

// The end-to-end tests run twice: on the default bbolt file in a temporary
// STRATUM_HOME, and with STRATUM_STORE=etcd://… on one embedded etcd member
// that TestMain starts for the whole package, each test on a prefix of its
// own.

// cluster is the package's etcd member (nil until TestMain started it).
var cluster *etcdtest.Cluster

// etcdStores maps the name of an "etcd" subtest to its STRATUM_STORE.
var etcdStores sync.Map

var prefixes atomic.Int64

// onBoth runs body as the subtests "bbolt" and "etcd".
func onBoth(t *testing.T, body func(t *testing.T)) {
	t.Run("bbolt", body)
	t.Run("etcd", func(t *testing.T) {
		etcdStores.Store(t.Name(), cluster.URL(fmt.Sprintf("e2e-%d", prefixes.Add(1))))
		body(t)
	})
}

// storeFor is the STRATUM_STORE of t ("" for the default bbolt file): that
// of the enclosing "etcd" subtest, if any.
func storeFor(t testing.TB) string {
	for name := t.Name(); ; {
		if v, ok := etcdStores.Load(name); ok {
			return v.(string)
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return ""
		}
		name = name[:i]
	}
}

// environ is the environment of a stratum process of the test: home and,
// on etcd, STRATUM_STORE.
func environ(home, storeURL string) []string {
	env := append(os.Environ(), "STRATUM_HOME="+home)
	if storeURL != "" {
		env = append(env, "STRATUM_STORE="+storeURL)
	}
	return env
}

// openStore opens the server's store in the test process, whichever the
// backend (as another stratum process would); it is closed when the test
// ends.
func (s *server) openStore() *backend.Opened {
	s.t.Helper()
	st, err := backend.Open(context.Background(), shared.Settings{Store: s.store, Home: s.home})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = st.Close() })
	return st
}
