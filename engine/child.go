package engine

import (
	"encoding/json"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// stateVersion is the record format version written into new flow states.
const stateVersion = 1

// newFlowState creates the state of a new flow execution.
func newFlowState(id, flowName, rawSpec string, inputs map[string]any, now time.Time) *state.FlowState {
	st := &state.FlowState{
		FlowID:        id,
		FlowName:      flowName,
		RawSpec:       rawSpec,
		Inputs:        inputs,
		SchemaVersion: stateVersion,
		Status:        state.StatusRunning,
		CreatedAt:     now,
		UpdatedAt:     now,
		FlowStart:     now,
	}
	ensureMaps(st)
	return st
}

// dispatchChild handles a flow: step becoming current (upstream-behavior
// §2.14): it creates the child flow (or reuses the active one), computes the
// child's own dispatch — with the policy loop, README, "Deliberate differences" — and returns
// execute_flow. The child (and anything it created) goes into res.Put.
func dispatchChild(st *state.FlowState, env transitionEnv, step *specs.Step, res *transitionResult) (Outcome, error) {
	var childFlow *specs.Flow
	if env.Spec != nil {
		childFlow = env.Spec.Flows[step.Flow]
	}
	if childFlow == nil {
		return nil, execErrorf("Flow '%s' not found in spec", step.Flow)
	}
	var child *state.FlowState
	var before *state.FlowState
	if st.ActiveChildFlowID != nil && env.Children != nil {
		if c, err := env.Children.Get(*st.ActiveChildFlowID); err == nil && c != nil {
			child = c
			ensureMaps(c)
			before = c.Clone()
		}
	}
	if child == nil {
		inputs, err := resolveInputs(st, step)
		if err != nil {
			return nil, err
		}
		if env.NewID == nil {
			return nil, execErrorf("cannot create child flow for step '%s': no id generator", step.ID)
		}
		child = newFlowState(env.NewID(), step.Flow, st.RawSpec, inputs, env.Now)
		child.ParentFlowID = strPtr(st.FlowID)
		child.ParentStepID = strPtr(step.ID)
		child.SpecFile = st.SpecFile
		child.Driver = st.Driver
		st.ActiveChildFlowID = strPtr(child.FlowID)
		res.Events = append(res.Events, event(child, env, "", FlowCreated{
			FlowName: child.FlowName, ParentFlowID: st.FlowID, ParentStepID: step.ID,
		}))
	}
	childEnv := env
	childEnv.Flow = childFlow
	// Resume semantics: a finished child answers its final payload and is
	// not revived.
	cr, err := resumeFlow(child, childEnv)
	if err != nil {
		return nil, err
	}
	if before == nil || !sameState(before, child) {
		res.Put = append(res.Put, child)
	}
	res.Put = append(res.Put, cr.Put...)
	res.Delete = append(res.Delete, cr.Delete...)
	res.Events = append(res.Events, cr.Events...)
	return &ChildDispatch{
		ParentFlowID:  st.FlowID,
		ParentStepID:  step.ID,
		ChildFlowID:   child.FlowID,
		ChildFlowName: child.FlowName,
		Child:         cr.Outcome,
		StepNumber:    st.CurrentIdx + 1,
		TotalSteps:    totalSteps(env),
	}, nil
}

// snapshotChildAudit appends the active child's audit to
// child_audits[stepID] (when the child can be read) and drops the pointer.
// A child that has not finished is abandoned: it ends killed (so it does not
// stay "running" in listings forever). It returns the child's id ("" when
// there was none).
func snapshotChildAudit(st *state.FlowState, env transitionEnv, stepID string, res *transitionResult) string {
	if st.ActiveChildFlowID == nil {
		return ""
	}
	id := *st.ActiveChildFlowID
	st.ActiveChildFlowID = nil
	if env.Children == nil || env.Spec == nil {
		return id
	}
	child, err := env.Children.Get(id)
	if err != nil || child == nil {
		return id
	}
	childEnv := env
	childEnv.Flow = env.Spec.Flows[child.FlowName]
	if childEnv.Flow == nil {
		return id
	}
	if b, err := json.Marshal(auditFlow(child, childEnv)); err == nil {
		st.ChildAudits[stepID] = append(st.ChildAudits[stepID], json.RawMessage(b))
	}
	if !isFinished(child) {
		child.Status = state.StatusKilled
		child.TerminalStatus = strPtr(string(state.StatusKilled))
		child.Gate = nil
		res.Put = append(res.Put, child)
		res.Events = append(res.Events, event(child, env, "", FlowFinished{
			Status: string(state.StatusKilled), Reason: "abandoned: parent step '" + stepID + "' reported",
		}))
	}
	return id
}
