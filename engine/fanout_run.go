package engine

import (
	"context"
	"fmt"
	"time"
)

// ParallelRun is a parallel_dispatch step's fan-out executed by an MCP
// server (stratum_parallel_start), as recorded in FlowState.ParallelRuns:
// the server's lease while it runs, and once every task settled the merge
// of the task branches. A server restarted, or another server sharing the
// store, reads from it what a poll must answer: the real merge outcome,
// and whether tasks still "running" have anyone running them.
type ParallelRun struct {
	// Dispatch is the step's dispatch the run belongs to (see
	// ParallelTask.Dispatch).
	Dispatch string `json:"dispatch"`
	// Lease is held by the server running the tasks, renewed while they
	// run; nil once the run ended.
	Lease *Lease `json:"lease,omitempty"`
	// Done is set when the fan-out ended (its tasks settled and, under
	// isolation: worktree, their branches merged or refused).
	Done bool `json:"done,omitempty"`
	// MergeStatus is "clean" or "conflict" once Done; Details explain a
	// conflict or the failed tasks.
	MergeStatus string   `json:"merge_status,omitempty"`
	Details     []string `json:"details,omitempty"`
}

// Live reports whether the run's lease is held at now (its server is
// running the tasks).
func (r *ParallelRun) Live(now time.Time) bool {
	return r != nil && r.Lease != nil && r.Lease.ExpiresAt.After(now)
}

func cloneParallelRuns(m map[string]*ParallelRun) map[string]*ParallelRun {
	if m == nil {
		return nil
	}
	out := make(map[string]*ParallelRun, len(m))
	for k, r := range m {
		if r == nil {
			out[k] = nil
			continue
		}
		c := *r
		c.Lease = clonePtr(r.Lease)
		c.Details = append([]string(nil), r.Details...)
		out[k] = &c
	}
	return out
}

// ParallelRunOf is the recorded server run of stepID's current dispatch
// (nil: none).
func (st *FlowState) ParallelRunOf(stepID string) *ParallelRun {
	r := st.ParallelRuns[stepID]
	if r == nil || r.Dispatch != dispatchKey(st, stepID) || r.Dispatch == "" {
		return nil
	}
	return r
}

// ClaimParallelRun takes (or renews, same lease id) the run of stepID's
// current dispatch for the caller's lease. It fails with
// ErrParallelRunHeld while another live lease holds it, and when the step
// is not the flow's current dispatched step.
func (s *Service) ClaimParallelRun(ctx context.Context, flowID, stepID string, l Lease) error {
	_, err := s.optimistic(ctx, "fan-out lease of flow "+flowID, func(sn *snapshot, now time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if err != nil {
			return computed{}, err
		}
		key := dispatchKey(st, stepID)
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
			st.ParallelRuns = map[string]*ParallelRun{}
		}
		st.ParallelRuns[stepID] = &ParallelRun{Dispatch: key, Lease: &lease}
		return computed{st: st}, nil
	})
	return err
}

// EndParallelRun records how the run of stepID's current dispatch held by
// leaseID ended (its merge) and drops the lease. A run no longer held by
// leaseID, or of an earlier dispatch, is left as it is.
func (s *Service) EndParallelRun(ctx context.Context, flowID, stepID, leaseID, mergeStatus string, details []string) error {
	_, err := s.optimistic(ctx, "fan-out end of flow "+flowID, func(sn *snapshot, now time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if err != nil {
			return computed{}, err
		}
		r := st.ParallelRunOf(stepID)
		if r == nil || r.Lease == nil || r.Lease.ID != leaseID {
			return computed{res: transitionResult{Unchanged: true}}, nil
		}
		st.ParallelRuns[stepID] = &ParallelRun{Dispatch: r.Dispatch, Done: mergeStatus != "", MergeStatus: mergeStatus,
			Details: append([]string(nil), details...)}
		return computed{st: st}, nil
	})
	return err
}
