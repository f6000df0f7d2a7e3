package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// ClaimParallelRun takes (or renews, same lease id) the run of stepID's
// current dispatch for the caller's lease. It fails with
// ErrParallelRunHeld while another live lease holds it, and when the step
// is not the flow's current dispatched step.
func (ls Leases) ClaimParallelRun(ctx context.Context, flowID, stepID string, l state.Lease) error {
	_, err := ls.s.optimistic(ctx, "fan-out lease of flow "+flowID, func(sn *snapshot, now time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if err != nil {
			return computed{}, err
		}
		key := st.DispatchKey(stepID)
		if key == "" || st.Status.Finished() {
			return computed{}, fmt.Errorf("flow %s: step '%s' is not dispatched", flowID, stepID)
		}
		r := st.ParallelRunOf(stepID)
		if r.Live(now) && r.Lease.ID != l.ID {
			return computed{}, fmt.Errorf("flow %s step '%s': %w (lease %s until %s)", flowID, stepID, ErrParallelRunHeld, r.Lease.ID, r.Lease.ExpiresAt.UTC().Format(time.RFC3339))
		}
		if r != nil && r.Done {
			return computed{}, fmt.Errorf("flow %s step '%s': the fan-out already ended", flowID, stepID)
		}
		lease := l
		if lease.Heartbeat.IsZero() {
			lease.Heartbeat = now
		}
		if st.ParallelRuns == nil {
			st.ParallelRuns = map[string]*state.ParallelRun{}
		}
		st.ParallelRuns[stepID] = &state.ParallelRun{Dispatch: key, Lease: &lease}
		return computed{st: st}, nil
	})
	return err
}

// EndParallelRun records how the run of stepID's current dispatch held by
// leaseID ended (its merge) and drops the lease. A run no longer held by
// leaseID, or of an earlier dispatch, is left as it is.
func (ls Leases) EndParallelRun(ctx context.Context, flowID, stepID, leaseID, mergeStatus string, details []string) error {
	_, err := ls.s.optimistic(ctx, "fan-out end of flow "+flowID, func(sn *snapshot, now time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if err != nil {
			return computed{}, err
		}
		r := st.ParallelRunOf(stepID)
		if r == nil || r.Lease == nil || r.Lease.ID != leaseID {
			return computed{res: transitionResult{Unchanged: true}}, nil
		}
		st.ParallelRuns[stepID] = &state.ParallelRun{Dispatch: r.Dispatch, Done: mergeStatus != "", MergeStatus: mergeStatus,
			Details: append([]string(nil), details...)}
		return computed{st: st}, nil
	})
	return err
}
