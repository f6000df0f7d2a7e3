package run

// The runner's hold on the flows it drives: it claims a stored flow's
// lease (taking over one whose holder is gone from this host), keeps every
// lease it holds alive with one heartbeat (its Holder, lease.go), and releases them
// when a flow ends or the runner stops.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// claim takes the lease of a stored flow. A live lease held by a process
// that no longer exists on this host is taken over.
func (r *Runner) claim(ctx context.Context, st *state.FlowState) error {
	err := r.svc.Leases().Claim(ctx, st.FlowID, r.holder.Lease())
	if !errors.Is(err, engine.ErrLeaseHeld) {
		return err
	}
	if cur, gerr := r.svc.Query().Get(ctx, st.FlowID); gerr == nil && cur.Owner != nil {
		st = cur // the lease that refused us, not the one read before
	}
	host, _ := os.Hostname()
	o := st.Owner
	if o == nil || o.Host != host || processAlive(o.PID) {
		return leaseHeldError(st.FlowID, o, err)
	}
	// The owner died (kill -9): take its lease over, only if it is still
	// the same lease.
	return r.svc.Leases().TakeOver(ctx, st.FlowID, o.ID, r.holder.Lease())
}

// leaseHeldError says who holds a flow's lease and until when.
func leaseHeldError(flowID string, o *state.Lease, err error) error {
	if o == nil {
		return fmt.Errorf("%w; another `stratum run` is driving it (wait for it, or for its lease to expire)", err)
	}
	who := "another `stratum run`"
	switch {
	case o.PID > 0 && o.Host != "":
		who += fmt.Sprintf(" (pid %d on host %s)", o.PID, o.Host)
	case o.PID > 0:
		who += fmt.Sprintf(" (pid %d)", o.PID)
	case o.Host != "":
		who += fmt.Sprintf(" (on host %s)", o.Host)
	}
	return &leaseError{err: err, msg: fmt.Sprintf("flow %s: %v: %s holds it (lease %s) until %s; wait for that run to end, or for its lease to expire",
		flowID, engine.ErrLeaseHeld, who, o.ID, o.ExpiresAt.UTC().Format(time.RFC3339))}
}

// leaseError is a refused claim (errors.Is(err, engine.ErrLeaseHeld)).
type leaseError struct {
	err error
	msg string
}

func (e *leaseError) Error() string { return e.msg }
func (e *leaseError) Unwrap() error { return e.err }

func (r *Runner) hold(flowID string) {
	r.mu.Lock()
	r.held[flowID] = true
	r.mu.Unlock()
}

func (r *Runner) unhold(ctx context.Context, flowID string) {
	// Hold beat so that no heartbeat round renews the lease after its release.
	r.beat.Lock()
	defer r.beat.Unlock()
	r.mu.Lock()
	delete(r.held, flowID)
	r.mu.Unlock()
	_ = r.svc.Leases().Release(ctx, flowID, r.holder.ID())
}

func (r *Runner) releaseAll() {
	r.mu.Lock()
	ids := make([]string, 0, len(r.held))
	for id := range r.held {
		ids = append(ids, id)
	}
	r.held = map[string]bool{}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range ids {
		if r.opts.HandBack {
			_ = r.svc.Leases().HandBack(ctx, id, r.holder.ID())
		} else {
			_ = r.svc.Leases().Release(ctx, id, r.holder.ID())
		}
	}
}

// heartbeat renews the lease of every held flow until ctx ends (the
// holder's keep-alive). Losing a lease (another runner took it after it
// expired) cancels the run.
func (r *Runner) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) {
	if lost := r.holder.KeepAlive(ctx, r.renewHeld); lost != nil {
		cancel(lost)
	}
}

// renewHeld renews the lease of every held flow with l; it returns an
// error when a lease was lost (another runner took it after it expired).
// Other failures (a busy store) wait for the next round.
func (r *Runner) renewHeld(ctx context.Context, l state.Lease) error {
	r.beat.Lock()
	defer r.beat.Unlock()
	r.mu.Lock()
	ids := make([]string, 0, len(r.held))
	for id := range r.held {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, id := range ids {
		err := r.svc.Leases().Claim(ctx, id, l)
		if errors.Is(err, engine.ErrLeaseHeld) {
			return fmt.Errorf("lost the lease of flow %s: %w", id, err)
		}
	}
	return nil
}
