package mcp

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
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
			list, err := s.svc.List(ctx, engine.ListFilter{Status: engine.FlowStatus(in.Status), Limit: limit})
			if err != nil {
				return nil, err
			}
			if list == nil {
				list = []engine.FlowSummary{}
			}
			return engine.Response{"flows": list}, nil
		})
}

// waitGate is stratum_wait_gate: it re-reads the flow every PollInterval
// until the gate it found is no longer the one waiting, then answers Resume.
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
	start := time.Now()
	first, err := s.svc.Get(ctx, in.FlowID)
	if errors.Is(err, engine.ErrNotFound) {
		return answer(s.svc.Resume(ctx, in.FlowID)) // answers flow_not_found
	}
	if err != nil {
		return nil, err
	}
	done := func(timedOut bool) (engine.Response, error) {
		resp, err := answer(s.svc.Resume(ctx, in.FlowID))
		if err != nil {
			return nil, err
		}
		resp["waited_ms"] = time.Since(start).Milliseconds()
		if timedOut {
			resp["timed_out"] = true
		}
		return resp, nil
	}
	if first.Status != engine.StatusAwaitingGate || first.Gate == nil {
		return done(false)
	}
	gate := *first.Gate
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return done(true)
		case <-tick.C:
		}
		if gate.Deadline != nil && !time.Now().Before(*gate.Deadline) {
			// Apply the expired deadline here too, in case no sweeper runs.
			if _, err := s.svc.CheckTimeouts(ctx, in.FlowID); err != nil {
				return nil, err
			}
		}
		st, err := s.svc.Get(ctx, in.FlowID)
		if errors.Is(err, engine.ErrNotFound) {
			return answer(s.svc.Resume(ctx, in.FlowID))
		}
		if err != nil {
			return nil, err
		}
		if st.Status != engine.StatusAwaitingGate || st.Gate == nil || st.Gate.StepID != gate.StepID || st.Gate.Round != gate.Round {
			return done(false)
		}
	}
}
