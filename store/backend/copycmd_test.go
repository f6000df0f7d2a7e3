package backend_test

import (
	"strings"
	"testing"

	"github.com/stratum-go/stratum/store/backend"
	"github.com/stratum-go/stratum/store/shared"
)

func TestCopyLocations(t *testing.T) {
	src, dst, err := backend.CopyLocations("/tmp/a.db", "etcd://127.0.0.1:2379/team")
	if err != nil || src.Kind != shared.KindBbolt || src.Path != "/tmp/a.db" || dst.Kind != shared.KindEtcd || dst.Prefix != "team" {
		t.Fatalf("CopyLocations = %+v, %+v, %v", src, dst, err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"etcd://h:1", "/tmp/b.db", "--from: store etcd://h:1: a prefix is required"},
		{"/tmp/a.db", "redis://h:1/x", "--to: "},
		{"/tmp/a.db", "/tmp/a.db", "--from and --to are the same store"},
		{"etcd://127.0.0.1:2379/team", "etcd://127.0.0.1:2379/team", "--from and --to are the same store"},
	} {
		_, _, err := backend.CopyLocations(tc.from, tc.to)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("CopyLocations(%q, %q) = %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}
