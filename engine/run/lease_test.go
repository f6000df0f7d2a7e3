package run

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// TestHolder: a holder's leases carry its one identity and a TTL from its
// clock; its keep-alive renews every third of the TTL with a fresh lease
// until ctx ends (nil) or a renewal fails (that error: the hold was lost).
func TestHolder(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Second); return now }
	h := NewHolder("test", 30*time.Millisecond, clock)
	if !strings.HasPrefix(h.ID(), "test-") || NewHolder("test", 0, nil).ID() == h.ID() {
		t.Fatalf("holder id %q: want test-<uuid>, one per holder", h.ID())
	}
	l := h.Lease()
	host, _ := os.Hostname()
	if l.ID != h.ID() || l.PID != os.Getpid() || l.Host != host || !l.ExpiresAt.Equal(l.Heartbeat.Add(30*time.Millisecond)) {
		t.Fatalf("lease %+v", l)
	}

	lost := errors.New("lost")
	var got []state.Lease
	start := time.Now()
	err := h.KeepAlive(context.Background(), func(_ context.Context, l state.Lease) error {
		got = append(got, l)
		if len(got) == 3 {
			return lost
		}
		return nil
	})
	if !errors.Is(err, lost) || len(got) != 3 {
		t.Fatalf("KeepAlive = %v after %d renewals, want the renewal's error after 3", err, len(got))
	}
	if el := time.Since(start); el < 25*time.Millisecond {
		t.Fatalf("3 renewals in %v: want one every third of the TTL (10ms)", el)
	}
	for i, l := range got {
		if l.ID != h.ID() || !l.ExpiresAt.Equal(l.Heartbeat.Add(30*time.Millisecond)) || (i > 0 && !l.Heartbeat.After(got[i-1].Heartbeat)) {
			t.Fatalf("renewal %d: %+v, want a fresh lease of the holder", i, l)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.KeepAlive(ctx, func(context.Context, state.Lease) error { return nil })
	}()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("KeepAlive after ctx ended = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("KeepAlive did not end with its context")
	}
}
