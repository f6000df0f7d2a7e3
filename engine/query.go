package engine

import (
	"context"
	"errors"

	"github.com/stratum-go/stratum/engine/internal/libreview"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// The reads behind `stratum query flow` and `stratum query gates`: the
// original's objects name spec facts (the ordered steps, a gate's function,
// routes and timeout) that summaries do not carry, so these reads pair the
// stored state with its flow as the stored spec declares it. clijson.Flow
// and clijson.Gates render them.

// FlowWithSpec is one flow's stored state with its flow in the stored spec.
type FlowWithSpec struct {
	State *state.FlowState
	// Flow is nil when the stored spec no longer parses or lacks the flow.
	Flow *specs.Flow
}

// GateStep is a flow waiting at a gate: its summary (Gate set) and the gate
// step in the flow's stored spec.
type GateStep struct {
	Summary state.FlowSummary
	// Step is nil when the stored spec no longer parses or lacks the step.
	Step *specs.Step
	// Review is the open review of a Go program's flow (library.go): such
	// a flow has a GateStep per open review, Summary.Gate naming it.
	Review *state.LibraryReview
}

// FlowWithSpec returns a flow's state and its flow (an error wrapping
// ErrNotFound when unknown).
func (q Query) FlowWithSpec(ctx context.Context, flowID string) (*FlowWithSpec, error) {
	st, err := q.Get(ctx, flowID)
	if err != nil {
		return nil, err
	}
	return &FlowWithSpec{State: st, Flow: q.s.storedFlow(st)}, nil
}

// PendingGateSteps returns every flow waiting at a gate with its gate step,
// in PendingGates' order (a Go program's flow once per open review, oldest
// first). A flow deleted between the two reads is left out.
// The states are read in one View; their specs are parsed after it.
func (q Query) PendingGateSteps(ctx context.Context) ([]GateStep, error) {
	var out []GateStep
	var states []*state.FlowState // states[i] is out[i]'s (nil: no gate)
	err := q.s.Store.View(ctx, func(tx Tx) error {
		out, states = nil, nil
		gates, err := q.s.listing(tx.PendingGates())
		if err != nil {
			return err
		}
		for _, g := range gates {
			var st *state.FlowState
			if g.Gate != nil {
				st, err = tx.Get(g.FlowID)
				if errors.Is(err, ErrNotFound) || q.s.noteDamagedErr(err) {
					continue
				}
				if err != nil {
					return err
				}
			}
			out = append(out, GateStep{Summary: g})
			states = append(states, st)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	expanded := make([]GateStep, 0, len(out))
	for i, st := range states {
		if st.IsLibrary() {
			for _, r := range st.Library.OpenReviews() {
				g := GateStep{Summary: out[i].Summary, Review: r.Clone()}
				g.Summary.Gate = libreview.Gate(r)
				expanded = append(expanded, g)
			}
			continue
		}
		if st != nil {
			if flow := q.s.storedFlow(st); flow != nil {
				out[i].Step = flow.Step(out[i].Summary.Gate.StepID)
			}
		}
		expanded = append(expanded, out[i])
	}
	return expanded, nil
}

// storedFlow is st's flow in its stored spec (parsed through the service's
// cache), nil when the spec no longer parses or lacks the flow.
func (s *Service) storedFlow(st *state.FlowState) *specs.Flow {
	sp, _ := s.parse(st.SpecFile, st.RawSpec)
	if sp == nil {
		return nil
	}
	return sp.Flows[st.FlowName]
}
