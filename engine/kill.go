package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// Ending a flow by hand. A flow whose runner or Go program died stays
// running (or awaiting_gate) for good: nothing drives it, gc keeps active
// flows, and a library flow is never resumed. Kill ends such a flow —
// `stratum kill`, the TUI's :kill, `stratum gc --stalled` — recorded with
// who, why and through which channel (FlowState.Ended, and a flow_finished
// event carrying reviewer, rationale and channel). It ends only what
// nothing drives: a live lease (a runner, a Go program) refuses it
// (flow_owned); so does a flow at, or above, a pending approver: human gate
// unless the channel is a human's (human_gate_pending): ending a flow ends
// its gate without a decision, and that is a person's call. The flow's
// active descendants (its running child flow, and so on) end with it; the
// open reviews of a Go program's flow are withdrawn.

// KillRequest asks Service.Kill to end a flow.
type KillRequest struct {
	// By is who ends it (a name, $USER, the TUI's reviewer).
	By string
	// Reason is why; required.
	Reason string
	// Channel is how the request came: cli, tui (a human's channels), or
	// policy (gc --stalled: it ends no flow at a human gate).
	Channel review.Channel
}

// FlowKilled answers Kill: the flows ended, the named flow first.
type FlowKilled struct {
	FlowID string
	// Flows are every flow ended: FlowID, then its active descendants.
	Flows  []string
	Ending state.Ending
}

// WireStatus implements Outcome.
func (k *FlowKilled) WireStatus() string { return string(state.StatusKilled) }

func (k *FlowKilled) wire() Response {
	return Response{"status": k.WireStatus(), "flow_id": k.FlowID, "killed_flows": k.Flows,
		"by": k.Ending.By, "reason": k.Ending.Reason, "channel": k.Ending.Channel, "stalled": k.Ending.Stalled}
}

// Kill ends flowID (and its active descendants) as killed, recording k
// (see above). A refusal is an *Error: flow_already_complete (it has ended
// already), flow_owned (a live lease drives it or a descendant),
// human_gate_pending (a human gate waits and the channel is not a human's),
// rationale_required (no reason).
func (s *Service) Kill(ctx context.Context, flowID string, k KillRequest) (Outcome, error) {
	if strings.TrimSpace(k.Reason) == "" {
		return nil, refusal(ErrTypeRationaleRequired, "Ending flow '%s' needs a reason (--reason TEXT): it is recorded with the kill", flowID)
	}
	return s.transitionWith(ctx, flowID, nil, true, retryPatiently, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return killFlow(st, env, k)
	})
}

func killFlow(st *state.FlowState, env transitionEnv, k KillRequest) (transitionResult, error) {
	if st.Status.Finished() {
		return refused(refusal(ErrTypeFlowComplete, "Flow '%s' has already ended (%s)", st.FlowID, st.Status)), nil
	}
	chain, err := activeChain(st, env)
	if err != nil {
		return transitionResult{}, err
	}
	for _, f := range chain {
		if e := liveLeaseRefusal(f, env.Now); e != nil {
			return refused(e), nil
		}
		if waitsForHuman(f) && !humanChannel(k.Channel) {
			e := refusal(ErrTypeHumanGatePending,
				"Gate '%s' of flow '%s' waits for a human (approver: human): ending the flow through %s would end it without a person; "+
					"a person ends it with `%s kill %s --reason TEXT` on a terminal (typing the confirmation) or :kill in `%s tui`",
				f.Gate.StepID, f.FlowID, channelName(k.Channel), env.cmd(), st.FlowID, env.cmd())
			e.GateFlowID, e.GateStepID = f.FlowID, f.Gate.StepID
			return refused(e), nil
		}
	}
	ending := state.Ending{By: k.By, Reason: k.Reason, Channel: string(k.Channel), At: env.Now, Stalled: stalledAt(st, env.Now)}
	out := &FlowKilled{FlowID: st.FlowID, Ending: ending}
	var res transitionResult
	for i, f := range chain {
		res = mergeResults(res, endByHand(f, env, ending))
		if i > 0 {
			res.Put = append(res.Put, f)
		}
		out.Flows = append(out.Flows, f.FlowID)
	}
	res.Outcome, res.Err = out, nil
	return res, nil
}

// activeChain is st and its active descendants (its active child, that
// child's active child, …) that have not ended, read through env.Children.
func activeChain(st *state.FlowState, env transitionEnv) ([]*state.FlowState, error) {
	chain := []*state.FlowState{st}
	seen := map[string]bool{st.FlowID: true}
	for id := st.ActiveChildFlowID; id != nil && !seen[*id] && len(seen) <= maxFlowDepth && env.Children != nil; {
		seen[*id] = true
		child, err := env.Children.Get(*id)
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		if child == nil || child.Status.Finished() {
			break
		}
		chain = append(chain, child)
		id = child.ActiveChildFlowID
	}
	return chain, nil
}

// liveLeaseRefusal answers flow_owned when a live lease drives f: what ends
// a flow by hand ends only flows nothing drives.
func liveLeaseRefusal(f *state.FlowState, now time.Time) *Error {
	o := f.Owner
	if o == nil || !o.ExpiresAt.After(now) {
		return nil
	}
	who := "lease '" + o.ID + "'"
	if o.PID != 0 {
		who += ", pid " + strconv.Itoa(o.PID)
		if o.Host != "" {
			who += " on " + o.Host
		}
	}
	e := refusal(ErrTypeFlowOwned,
		"Flow '%s' is still driven by a live process (%s, until %s): stop that process first; "+
			"a flow nothing drives any more (stalled) is what can be ended by hand",
		f.FlowID, who, o.ExpiresAt.UTC().Format(time.RFC3339))
	e.FlowID, e.Owner = f.FlowID, o.ID
	return e
}

// stalledAt reports whether nothing drives st at now: a runner's or a Go
// program's flow whose lease is gone (state.FlowSummary.Stalled's rule).
func stalledAt(st *state.FlowState, now time.Time) bool {
	if !st.Status.Active() || st.Driver != state.DriverRunner && st.Driver != state.DriverLibrary {
		return false
	}
	return st.Owner == nil || !st.Owner.ExpiresAt.After(now)
}

// endByHand ends one flow as killed: its open reviews withdrawn, its gate
// and lease dropped, the ending recorded in the state and the event.
func endByHand(f *state.FlowState, env transitionEnv, e state.Ending) transitionResult {
	var res transitionResult
	if f.Library != nil {
		for _, r := range f.Library.OpenReviews() {
			res = mergeResults(res, withdraw(f, env, r, "flow killed by "+orStr(e.By, "someone")+": "+e.Reason))
		}
	}
	f.Status = state.StatusKilled
	f.Gate = nil
	f.Owner = nil
	f.Ended = state.ClonePtr(&e)
	res.Events = append(res.Events, event(f, env, "", FlowFinished{
		Status: string(state.StatusKilled), Reviewer: e.By, Rationale: e.Reason, Channel: e.Channel,
	}))
	return res
}
