package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// child drives the child flow of a flow: step and reports its end to the
// parent: its completion as the step's result, a kill or failure as a
// failed attempt of the step, an exhausted budget as the parent's.
func (r *Runner) child(ctx context.Context, fc *flowCtx, d *engine.ChildDispatch) (turn, error) {
	st := fc.flow.Step(d.ParentStepID)
	cflow := fc.spec.Flows[d.ChildFlowName]
	if st == nil || cflow == nil || d.ChildFlowID == "" {
		return stop(&endState{status: EndError, out: d, message: "malformed execute_flow dispatch"})
	}
	rep := r.stepReport(fc, st)
	start := time.Now()
	cst, err := r.svc.Query().Get(ctx, d.ChildFlowID)
	if err != nil {
		return turn{}, err
	}
	if err := r.claim(ctx, cst); err != nil {
		return stop(&endState{status: EndError, message: fmt.Sprintf("child flow %s: %v", d.ChildFlowID, err)})
	}
	r.hold(d.ChildFlowID)
	defer r.unhold(context.WithoutCancel(ctx), d.ChildFlowID)
	pst, err := r.svc.Query().Get(ctx, fc.id)
	if err != nil {
		return turn{}, err
	}
	r.beginCall(fc, st.ID, pst.Attempts[st.ID]+1)
	r.emit(Event{Kind: EventStepStarted, FlowID: fc.id, Step: st, Attempt: fc.call.attempt, Round: fc.round, Spec: fc.spec, Message: "child flow " + d.ChildFlowName})
	cfc := &flowCtx{id: d.ChildFlowID, spec: fc.spec, flow: cflow, dir: fc.dir, parent: fc}
	if r.opts.Tracer != nil {
		r.opts.Tracer.FlowStarted(d.ChildFlowID, d.ChildFlowName, fc.id)
	}
	end, err := r.drive(ctx, cfc, d.Child, nil)
	if err != nil {
		return turn{}, err
	}
	if r.opts.Tracer != nil {
		r.opts.Tracer.FlowEnded(d.ChildFlowID, end.status, end.message)
	}
	rep.Attempts++
	rep.Duration += time.Since(start)
	fc.call.dur += time.Since(start)
	switch end.status {
	case EndComplete:
		// The parent step's result is the child's completion object, as an
		// agent reports it.
		next, err := answered(r.svc.StepDone(ctx, engine.StepReport{FlowID: fc.id, StepID: st.ID, Result: map[string]any(engine.Wire(end.out, nil)), ReportOptions: r.report()}))
		if err != nil {
			return turn{}, err
		}
		r.noteStepResult(fc, st, next, nil)
		return next, nil
	case EndKilled, EndFailed:
		v := fmt.Sprintf("child flow '%s' (%s) ended %s", d.ChildFlowName, d.ChildFlowID, end.status)
		if end.message != "" {
			v += ": " + end.message
		}
		if end.err != nil && len(end.err.Violations) > 0 {
			v += " (" + strings.Join(end.err.Violations, "; ") + ")"
		}
		next, err := answered(r.svc.StepAttemptFailed(ctx, engine.AttemptFailure{FlowID: fc.id, StepID: st.ID, Violations: []string{v}, ReportOptions: r.report()}))
		if err != nil {
			return turn{}, err
		}
		r.noteStepResult(fc, st, next, []string{v})
		return next, nil
	case EndBudget:
		next, err := answered(r.svc.ExhaustBudget(ctx, fc.id, "child flow "+d.ChildFlowName+": "+end.message, r.report()))
		if err != nil {
			return turn{}, err
		}
		rep.Status = "failed"
		rep.Violations = []string{end.message}
		return next, nil
	}
	return stop(end)
}
