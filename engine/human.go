package engine

import (
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// No way around a human: an approver: human gate is decided by a human
// (stratum tui, stratum gate, the console of stratum run), never by what an
// agent reports. While such a gate is pending — in the flow or in any of its
// descendants — nothing that would end, skip or orphan it is accepted:
// step_done, skip_step or a failed attempt of the parent's flow: step whose
// child waits at it (error_type human_gate_pending), a revert that leaves
// the waiting child behind (any channel) or moves the flow off its own
// pending human gate (any channel but a human's). A revert that would undo a
// human's decision needs a human's channel as well (gate_requires_human); the
// decision stays in the trace, marked reverted (see Revert).

// humanChannel reports whether a call that came through c carries a human's
// authority: the TUI, the CLI (`stratum gate` asks for a typed confirmation
// at a terminal) and the console prompt of `stratum run`. MCP, policies,
// timeouts and an unknown channel do not.
func humanChannel(c review.Channel) bool {
	return c == review.ChannelTUI || c == review.ChannelCLI || c == review.ChannelConsole
}

// waitsForHuman reports whether st waits at an approver: human gate.
func waitsForHuman(st *state.FlowState) bool {
	return st.Status == state.StatusAwaitingGate && st.Gate != nil && st.Gate.Approver == string(review.HumanApprover)
}

// humanGateBelow finds a pending approver: human gate among st's active
// descendants (its active child, that child's active child, …), read through
// env.Children. It returns the flow waiting at it, or nil.
func humanGateBelow(st *state.FlowState, env transitionEnv) *state.FlowState {
	if env.Children == nil {
		return nil
	}
	seen := map[string]bool{st.FlowID: true}
	for id := st.ActiveChildFlowID; id != nil && !seen[*id] && len(seen) <= maxFlowDepth; {
		seen[*id] = true
		child, err := env.Children.Get(*id)
		if err != nil || child == nil || isFinished(child) {
			return nil
		}
		if waitsForHuman(child) {
			return child
		}
		id = child.ActiveChildFlowID
	}
	return nil
}

// humanGatePending is the refusal of a call that would end, skip or orphan
// the human gate g waits at; what names the call ("step_done of 'sub'").
func humanGatePending(st, g *state.FlowState, what, cmd string) *Error {
	where := "this flow"
	if g.FlowID != st.FlowID {
		where = "a child flow of flow '" + st.FlowID + "'"
	}
	e := refusal(ErrTypeHumanGatePending,
		"Gate '%s' of flow '%s' (%s) is waiting for a human decision (approver: human); %s would bypass it. "+
			"A human decides it first, in `%s tui` or with `%s gate approve|revise|reject %s %s`",
		g.Gate.StepID, g.FlowID, where, what, cmd, cmd, g.FlowID, g.Gate.StepID)
	e.GateFlowID, e.GateStepID = g.FlowID, g.Gate.StepID
	return e
}
