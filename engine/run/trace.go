package run

import (
	"context"

	"github.com/stratum-go/stratum/specs"
)

// Tracer receives the run's structure as spans (an OTLP exporter's tracker,
// engine/internal/otlp.Tracker, satisfies it). StepStarted returns the context the
// executor runs under, so an executor's own spans (an LLM call) nest under
// the step.
type Tracer interface {
	FlowStarted(flowID, flowName, parentFlowID string)
	StepStarted(ctx context.Context, flowID, stepID string, attempt int) context.Context
	AttemptFailed(flowID, stepID string, attempt int, violations []string)
	StepEnded(flowID, stepID, status string, violations []string)
	FlowEnded(flowID, status, message string)
}

// emit sends a progress event to the reporter and its span form to the
// tracer.
func (r *Runner) emit(e Event) {
	r.opts.Progress.Event(e)
	t := r.opts.Tracer
	if t == nil {
		return
	}
	stepID := ""
	if e.Step != nil {
		stepID = e.Step.ID
	}
	switch e.Kind {
	case EventFlowStarted:
		t.FlowStarted(e.FlowID, e.FlowName, e.ParentFlowID)
	case EventStepStarted:
		if e.Step != nil && e.Step.Kind == specs.KindFlow {
			t.StepStarted(context.Background(), e.FlowID, stepID, e.Attempt)
		}
	case EventGateOpen:
		t.StepStarted(context.Background(), e.FlowID, stepID, 1)
	case EventAttemptFailed:
		t.AttemptFailed(e.FlowID, stepID, e.Attempt, e.Violations)
	case EventStepDone:
		t.StepEnded(e.FlowID, stepID, "passed", nil)
	case EventStepFailed:
		t.StepEnded(e.FlowID, stepID, "failed", e.Violations)
	case EventGateResolved:
		if e.Status != "" {
			t.StepEnded(e.FlowID, stepID, e.Status, nil)
		}
	case EventFlowFinished:
		t.FlowEnded(e.FlowID, e.Status, e.Message)
	}
}

// traceStep opens the step span of an attempt and returns the executor's
// context.
func (r *Runner) traceStep(ctx context.Context, fc *flowCtx, stepID string, attempt int) context.Context {
	if r.opts.Tracer == nil {
		return ctx
	}
	return r.opts.Tracer.StepStarted(ctx, fc.id, stepID, attempt)
}
