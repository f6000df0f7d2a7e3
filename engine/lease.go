package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrLeaseHeld is returned by Claim and TakeOver when another live lease
// owns the flow.
var ErrLeaseHeld = errors.New("flow is owned by another live lease")

// Claim takes (or renews) the runner lease of a flow: it succeeds when the
// flow has no live lease or the live lease has the same id. The flow's driver
// becomes "runner".
func (s *Service) Claim(ctx context.Context, flowID string, l Lease) error {
	return s.claim(ctx, flowID, l, "")
}

// TakeOver is Claim that may also replace the live lease deadID, whose
// holder the caller knows to be dead (a runner killed with -9 on this
// host); any other live lease still refuses with ErrLeaseHeld.
func (s *Service) TakeOver(ctx context.Context, flowID, deadID string, l Lease) error {
	return s.claim(ctx, flowID, l, deadID)
}

func (s *Service) claim(ctx context.Context, flowID string, l Lease, deadID string) error {
	return s.Store.Update(ctx, func(tx Tx) error {
		st, err := tx.Get(flowID)
		if err != nil {
			return err
		}
		now := s.now()
		if o := st.Owner; o != nil && o.ExpiresAt.After(now) && o.ID != l.ID && (deadID == "" || o.ID != deadID) {
			return fmt.Errorf("flow %s: %w (lease %s until %s)", flowID, ErrLeaseHeld, o.ID, o.ExpiresAt.UTC().Format(time.RFC3339))
		}
		if l.Heartbeat.IsZero() {
			l.Heartbeat = now
		}
		st.Owner = &l
		st.Driver = DriverRunner
		return s.put(tx, st, nil)
	})
}

// Release drops the flow's lease if it is held by leaseID.
func (s *Service) Release(ctx context.Context, flowID, leaseID string) error {
	return s.Store.Update(ctx, func(tx Tx) error {
		st, err := tx.Get(flowID)
		if err != nil {
			return err
		}
		if st.Owner == nil || st.Owner.ID != leaseID {
			return nil
		}
		st.Owner = nil
		return s.put(tx, st, nil)
	})
}
