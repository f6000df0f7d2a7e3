package team_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/store/shared"
	_ "github.com/stratum-go/stratum/store/team"
)

func TestInsecureRefused(t *testing.T) {
	s := shared.Settings{Store: "etcd://192.0.2.1:2379/team", Etcd: config.Etcd{Password: "s3cret"}}
	_, err := shared.Open(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "not a loopback address") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open of a remote endpoint without TLS: %v", err)
	}
}

// TestUnreachable: a cluster nobody answers for fails within the timeout
// with one line naming the endpoint and what to do.
func TestUnreachable(t *testing.T) {
	s := shared.Settings{Store: "etcd://127.0.0.1:9/team", Timeout: time.Second, Etcd: config.Etcd{User: "u", Password: "s3cret"}}
	t0 := time.Now()
	_, err := shared.Open(context.Background(), s)
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("Open took %v with a 1s timeout", d)
	}
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:9") || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open of an unreachable cluster: %v", err)
	}
	t.Log(err)
}
