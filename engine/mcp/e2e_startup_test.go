package mcp_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/etcdstore"
)

// TestLogsStoreAtStartup: `stratum mcp` says on stderr which store it
// opened, so a client started with another STRATUM_HOME (or STRATUM_STORE)
// is easy to spot.
func TestLogsStoreAtStartup(t *testing.T) { onBoth(t, testLogsStoreAtStartup) }

func testLogsStoreAtStartup(t *testing.T) {
	home := t.TempDir()
	s := startIn(t, home)
	s.ok("stratum_list_flows", nil, nil)
	want := fmt.Sprintf("stratum mcp: store etcd %s (schema %d)\n", s.store, etcdstore.SchemaVersion)
	if s.store == "" {
		path, err := filepath.Abs(filepath.Join(home, store.FileName))
		if err != nil {
			t.Fatal(err)
		}
		want = fmt.Sprintf("stratum mcp: store bbolt %s (schema %d)\n", path, store.SchemaVersion)
	}
	if got := s.stderr.String(); !strings.Contains(got, want) {
		t.Errorf("stderr %q does not contain %q", got, want)
	}
}
