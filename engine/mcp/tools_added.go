package mcp

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// Defaults of the added tools.
const (
	defaultWaitSeconds = 60
	defaultListLimit   = 50
	maxListLimit       = 1000
)

type waitGateArgs struct {
	FlowID         string  `json:"flow_id" jsonschema:"the flow waiting at a gate"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"how long to wait at most, in seconds (default 60 when absent or 0, max 300)"`
}

type listFlowsArgs struct {
	Status string `json:"status,omitempty" jsonschema:"only flows with this status: running, awaiting_gate, complete, killed, failed, budget_exhausted (default: all)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many flows, newest first (default 50 when absent or 0, max 1000)"`
}

func (s *server) registerAddedTools(srv *mcp.Server) {
	addTool(srv, s, &mcp.Tool{Name: "stratum_wait_gate", Description: `Wait (bounded) until a flow is no longer waiting at its gate, i.e. until someone decides it (the TUI, "stratum gate approve|revise|reject" in a shell, another agent) or its timeout fires, then return the flow's current dispatch exactly like stratum_resume plus waited_ms.
Use it after an await_gate dispatch instead of polling. timeout_seconds defaults to 60 (max 300).
Returns: the next dispatch (execute_step after approve or revise, …), the completion (complete / killed), or, if nobody decided in time, the await_gate dispatch again with timed_out: true (call it again to keep waiting). If the flow is not at a gate it returns its dispatch at once (waited_ms 0). Unknown id: flow_not_found.`},
		s.waitGate)

	addTool(srv, s, &mcp.Tool{Name: "stratum_list_flows", Annotations: readOnly(), Description: `List flow executions in the shared store, newest first (flows started by any agent, "stratum run" or the TUI).
Returns {flows: [{flow_id, flow_name, status, current_step_id, step_number, total_steps, round, driver, gate ({step_id, round, deadline, approver} when awaiting_gate), owner (the runner's lease {id, pid, host, heartbeat, expires_at} while a runner holds one), created_at, updated_at, version}]}. Filter with status (running, awaiting_gate, complete, killed, failed, budget_exhausted); limit defaults to 50.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in listFlowsArgs) (engine.Response, error) {
			limit := in.Limit
			if limit == 0 {
				limit = defaultListLimit
			}
			if limit < 1 || limit > maxListLimit {
				return nil, badArgs("limit must be between 1 and %d, got %d", maxListLimit, limit)
			}
			list, err := s.svc.Query().List(ctx, engine.ListFilter{Status: state.FlowStatus(in.Status), Limit: limit})
			if err != nil {
				return nil, err
			}
			if list == nil {
				list = []state.FlowSummary{}
			}
			return engine.Response{"flows": list}, nil
		})
}

// waitGate is stratum_wait_gate. It follows the store's events
// (Service.Watch: this process's commits at once, other processes' as the
// store sees them) and reads them as every gate waiter does
// (engine.GateNews): the gate_resolved event of the gate's step and round
// ends the wait without a read of the flow; the flow is read again only
// when an event about it does not tell (a revert, a kill, an older log's
// decision) or after the deadline's timer. Then it answers Resume. The
// timer at the gate's deadline applies it (CheckTimeouts), in case no
// sweeper runs; another bounds the wait.
func (s *server) waitGate(ctx context.Context, _ *mcp.CallToolRequest, in waitGateArgs) (engine.Response, error) {
	if err := required("flow_id", in.FlowID); err != nil {
		return nil, err
	}
	wait := defaultWaitSeconds * time.Second
	if t := in.TimeoutSeconds; t != 0 {
		if math.IsNaN(t) || t < 0 {
			return nil, badArgs("timeout_seconds must be between 0 and %g", s.opts.MaxWait.Seconds())
		}
		if t > s.opts.MaxWait.Seconds() {
			t = s.opts.MaxWait.Seconds()
		}
		wait = time.Duration(t * float64(time.Second))
	}
	if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
		return resp, err
	}
	start := time.Now()
	// The end of the log before the first read: Watch delivers everything
	// after it, so a decision made in between is not missed.
	after, err := s.svc.Query().LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	first, err := s.svc.Query().Get(ctx, in.FlowID)
	if errors.Is(err, engine.ErrNotFound) {
		return answer(s.svc.Resume(ctx, in.FlowID)) // answers flow_not_found
	}
	if err != nil {
		return nil, err
	}
	done := func(waited time.Duration, timedOut bool) (engine.Response, error) {
		resp, err := answer(s.svc.Resume(ctx, in.FlowID))
		if err != nil {
			return nil, err
		}
		resp["waited_ms"] = waited.Milliseconds()
		if timedOut {
			resp["timed_out"] = true
		}
		return resp, nil
	}
	if first.Status != state.StatusAwaitingGate || first.Gate == nil {
		return done(0, false)
	}
	gate := *first.Gate
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	events, err := s.svc.Watch(watchCtx, after)
	if err != nil {
		return nil, err
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	var expired <-chan time.Time
	if gate.Deadline != nil {
		t := time.NewTimer(time.Until(*gate.Deadline))
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout.C:
			return done(time.Since(start), true)
		case <-expired:
			expired = nil
			// Apply the expired deadline here too, in case no sweeper runs.
			if _, err := s.svc.CheckTimeouts(ctx, in.FlowID); err != nil && engine.AsError(err) == nil {
				return nil, err
			}
		case batch, ok := <-events:
			if !ok {
				return nil, ctx.Err()
			}
			_, decided, reread := engine.GateNews(batch, in.FlowID, gate.StepID, gate.Round)
			if decided {
				return done(time.Since(start), false)
			}
			if !reread {
				continue
			}
		}
		st, err := s.svc.Query().Get(ctx, in.FlowID)
		if errors.Is(err, engine.ErrNotFound) {
			return answer(s.svc.Resume(ctx, in.FlowID))
		}
		if err != nil {
			return nil, err
		}
		if st.Status != state.StatusAwaitingGate || st.Gate == nil || st.Gate.StepID != gate.StepID || st.Gate.Round != gate.Round {
			return done(time.Since(start), false)
		}
	}
}
