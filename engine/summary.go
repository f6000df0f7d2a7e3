package engine

import (
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// Summarize computes the list summary of a flow state — every field of
// FlowSummary — so that listings never decode states or parse specs. It is
// the one derivation: the Service hands its result to Store.Put with every
// state it writes, and stores persist it as given. flow is the state's flow
// in its parsed spec; nil (a spec that no longer parses) leaves TotalSteps 0
// and CurrentStep to what the state alone says.
//
//   - CurrentStep is the pending gate's step, else the active iteration's
//     step, else, while the flow is running or awaiting a gate, the most
//     recently dispatched step, else the step at the cursor; "" once the
//     flow has finished.
//   - StepNumber is CurrentIdx+1 (1-based) while the flow is running or
//     awaiting a gate, CurrentIdx once it has finished.
//   - TotalSteps is the number of steps of flow.
//   - FlowName, Status, Round, Driver, ParentFlowID, Gate and Owner (the
//     runner's lease) are the state's, Gate and Owner copied.
//   - Review, while the flow awaits a gate that is the gate step at its
//     cursor in flow, is that gate's question and whether it accepts
//     revise, as PendingReview has them.
//   - CreatedAt, UpdatedAt and Version are the state's as they are now
//     (the Service summarizes a state after stamping it); Tx.Put stores
//     the summary with the state's stamps.
func Summarize(st *state.FlowState, flow *specs.Flow) state.FlowSummary {
	sum := state.FlowSummary{
		FlowID:     st.FlowID,
		FlowName:   st.FlowName,
		Status:     st.Status,
		StepNumber: st.CurrentIdx,
		Round:      st.Round,
		Driver:     st.Driver,
		CreatedAt:  st.CreatedAt,
		UpdatedAt:  st.UpdatedAt,
		Version:    st.Version,
	}
	if st.ParentFlowID != nil {
		sum.ParentFlowID = *st.ParentFlowID
	}
	if st.Owner != nil {
		l := *st.Owner
		sum.Owner = &l
	}
	if flow != nil {
		sum.TotalSteps = len(flow.Order)
	}
	active := st.Status == state.StatusRunning || st.Status == state.StatusAwaitingGate
	if active {
		sum.StepNumber = st.CurrentIdx + 1
	}
	switch {
	case st.Gate != nil:
		g := *st.Gate
		if g.Deadline != nil {
			d := *g.Deadline
			g.Deadline = &d
		}
		sum.Gate = &g
		sum.CurrentStep = g.StepID
		if step := pendingGateStep(st, flow); step != nil {
			sum.Review = &state.GateReview{Question: gateQuestion(step, st.FlowName), Revise: step.OnRevise != ""}
		}
	case st.ActiveIteration != nil:
		sum.CurrentStep = st.ActiveIteration.StepID
	case active:
		sum.CurrentStep = latestDispatched(st)
		if sum.CurrentStep == "" && flow != nil && st.CurrentIdx >= 0 && st.CurrentIdx < len(flow.Order) {
			sum.CurrentStep = flow.Steps[flow.Order[st.CurrentIdx]].ID
		}
	}
	return sum
}

// latestDispatched is the most recently dispatched step (ties: the larger
// id), "" when none was.
func latestDispatched(st *state.FlowState) string {
	var latest string
	for step, at := range st.DispatchedAt {
		if latest == "" || at.After(st.DispatchedAt[latest]) ||
			(at.Equal(st.DispatchedAt[latest]) && step > latest) {
			latest = step
		}
	}
	return latest
}

// summary is Summarize with st's flow looked up in sp when sp is the spec
// st was parsed from (a transition's), else in st's stored spec, parsed
// through the service's cache.
func (s *Service) summary(st *state.FlowState, sp *specs.Spec) state.FlowSummary {
	if sp == nil || string(sp.Source) != st.RawSpec {
		sp, _ = s.parse(st.SpecFile, st.RawSpec)
	}
	var flow *specs.Flow
	if sp != nil {
		flow = sp.Flows[st.FlowName]
	}
	return Summarize(st, flow)
}
