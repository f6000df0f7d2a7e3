package run

import (
	"context"
	"os"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// DefaultLeaseTTL is how long a lease lives without a renewal unless the
// holder says otherwise.
const DefaultLeaseTTL = 30 * time.Second

// Holder is one holder of leases in this process: a runner on the flows it
// drives (engine.Leases.Claim; the etcd backend backs each with an etcd
// lease its renewals keep alive), an MCP server on a fan-out it runs
// (engine.Leases.ClaimParallelRun). It is the identity every lease it
// takes carries (id, pid, host), their term, and the one keep-alive that
// renews them.
type Holder struct {
	id   string
	pid  int
	host string
	ttl  time.Duration
	now  func() time.Time
}

// NewHolder returns a holder for this process whose id is
// prefix-<random uuid>, taking leases that live ttl (DefaultLeaseTTL when
// not positive) on the clock now (the UTC wall clock when nil).
func NewHolder(prefix string, ttl time.Duration, now func() time.Time) *Holder {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	if now == nil {
		now = func() time.Time { return time.Now().UTC() }
	}
	host, _ := os.Hostname()
	return &Holder{id: prefix + "-" + engine.NewUUID(), pid: os.Getpid(), host: host, ttl: ttl, now: now}
}

// ID is the id every lease of h carries.
func (h *Holder) ID() string { return h.id }

// Lease is a fresh lease of h: its heartbeat now, expiring a TTL from now.
func (h *Holder) Lease() state.Lease {
	now := h.now()
	return state.Lease{ID: h.id, PID: h.pid, Host: h.host, Heartbeat: now, ExpiresAt: now.Add(h.ttl)}
}

// KeepAlive renews what h holds every third of its TTL until ctx ends: it
// calls renew with a fresh Lease each time. An error from renew ends it
// and is returned (the holder lost what it held: the caller stops what
// the lease guarded); it returns nil once ctx ended.
func (h *Holder) KeepAlive(ctx context.Context, renew func(context.Context, state.Lease) error) error {
	t := time.NewTicker(h.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := renew(ctx, h.Lease()); err != nil {
			return err
		}
	}
}

// ProcessAlive reports whether a process with this id exists on this host
// (always true where that cannot be told): how a holder whose lease is
// still live is known to be gone (kill -9).
func ProcessAlive(pid int) bool { return processAlive(pid) }
