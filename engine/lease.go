package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// Claim takes (or renews) the runner lease of a flow: it succeeds when the
// flow has no live lease or the live lease has the same id. The flow's driver
// becomes "runner".
func (ls Leases) Claim(ctx context.Context, flowID string, l state.Lease) error {
	return ls.s.claim(ctx, flowID, l, "")
}

// TakeOver is Claim that may also replace the live lease deadID, whose
// holder the caller knows to be dead (a runner killed with -9 on this
// host); any other live lease still refuses with ErrLeaseHeld.
func (ls Leases) TakeOver(ctx context.Context, flowID, deadID string, l state.Lease) error {
	return ls.s.claim(ctx, flowID, l, deadID)
}

func (s *Service) claim(ctx context.Context, flowID string, l state.Lease, deadID string) error {
	_, err := s.optimistic(ctx, "lease of flow "+flowID, func(sn *snapshot, now time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if err != nil {
			return computed{}, err
		}
		if o := st.Owner; o != nil && o.ExpiresAt.After(now) && o.ID != l.ID && (deadID == "" || o.ID != deadID) {
			return computed{}, fmt.Errorf("flow %s: %w (lease %s until %s)", flowID, ErrLeaseHeld, o.ID, o.ExpiresAt.UTC().Format(time.RFC3339))
		}
		lease := l
		if lease.Heartbeat.IsZero() {
			lease.Heartbeat = now
		}
		st.Owner = &lease
		st.Driver = state.DriverRunner
		return computed{st: st}, nil
	})
	return err
}

// Release drops the flow's lease if it is held by leaseID.
func (ls Leases) Release(ctx context.Context, flowID, leaseID string) error {
	_, err := ls.s.optimistic(ctx, "release of flow "+flowID, func(sn *snapshot, now time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if err != nil {
			return computed{}, err
		}
		if st.Owner == nil || st.Owner.ID != leaseID {
			return computed{res: transitionResult{Unchanged: true}}, nil
		}
		st.Owner = nil
		return computed{st: st}, nil
	})
	return err
}

// HandBack is Release that also gives the flow back to agents (driver
// "agent"): a run that drove the flow for an agent (the MCP server's
// background runs) ends, and the flow is not a runner's stalled flow.
func (ls Leases) HandBack(ctx context.Context, flowID, leaseID string) error {
	_, err := ls.s.optimistic(ctx, "hand-back of flow "+flowID, func(sn *snapshot, now time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if err != nil {
			return computed{}, err
		}
		if st.Owner == nil || st.Owner.ID != leaseID {
			return computed{res: transitionResult{Unchanged: true}}, nil
		}
		st.Owner, st.Driver = nil, state.DriverAgent
		return computed{st: st}, nil
	})
	return err
}

// Leases are the runner leases of a Service's flows: the lease on a whole
// flow a runner holds while it drives the flow (Claim, TakeOver, Release),
// and the lease on one fan-out step's run (ClaimParallelRun,
// EndParallelRun). A live lease makes the Service refuse reports from
// anyone but its holder (error_type flow_owned). Get them with
// Service.Leases.
type Leases struct{ s *Service }

// Leases returns the lease operations of s.
func (s *Service) Leases() Leases { return Leases{s: s} }
