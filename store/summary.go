package store

import (
	"github.com/stratum-go/stratum/engine"
)

// Summarize derives the list summary of a flow state from the state alone:
//
//   - CurrentStep is the pending gate's step, else the active iteration's
//     step, else (while running) the most recently dispatched step;
//   - StepNumber is CurrentIdx+1 (1-based) while the flow is running or
//     awaiting a gate, CurrentIdx once it has finished;
//   - TotalSteps is 0 (unknown): the store does not parse specs. Set
//     Options.Summarize to fill it (and a better CurrentStep) from the spec.
func Summarize(st *engine.FlowState) engine.FlowSummary {
	sum := engine.FlowSummary{
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
	active := st.Status == engine.StatusRunning || st.Status == engine.StatusAwaitingGate
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
	case st.ActiveIteration != nil:
		sum.CurrentStep = st.ActiveIteration.StepID
	case active:
		var latest string
		for step, at := range st.DispatchedAt {
			if latest == "" || at.After(st.DispatchedAt[latest]) ||
				(at.Equal(st.DispatchedAt[latest]) && step > latest) {
				latest = step
			}
		}
		sum.CurrentStep = latest
	}
	return sum
}

// summarize is Summarize refined by Options.Summarize, with the fields the
// indexes depend on kept authoritative.
func (s *Store) summarize(st *engine.FlowState) engine.FlowSummary {
	sum := Summarize(st)
	if s.opts.Summarize != nil {
		keep := sum
		s.opts.Summarize(st, &sum)
		sum.FlowID, sum.Status, sum.CreatedAt, sum.UpdatedAt, sum.Gate = keep.FlowID, keep.Status, keep.CreatedAt, keep.UpdatedAt, keep.Gate
	}
	return sum
}
