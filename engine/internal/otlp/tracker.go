package otlp

import (
	"context"
	"strings"
	"sync"
)

// Tracker maps a run's progress (flows and steps by id) onto spans, so a
// runner can report events without holding spans itself. All methods are
// no-ops on a nil *Tracker.
//
// Calls, in order, for one flow:
//
//	t.FlowStarted(flowID, flowName, parentFlowID)   // root span, or child of the parent's open step
//	ctx = t.StepStarted(ctx, flowID, stepID, attempt) // opens the step span once; pass ctx to Execute
//	t.AttemptFailed(flowID, stepID, attempt, violations) // "retry" span event
//	t.StepEnded(flowID, stepID, status, violations)  // "failed", "killed", … = ERROR, else OK
//	t.FlowEnded(flowID, status, message)             // "failed", "killed", "budget_exhausted", … = ERROR
type Tracker struct {
	exp   *Exporter
	mu    sync.Mutex
	flows map[string]*Span
	steps map[string]*Span // flowID + "\x00" + stepID
	last  map[string]*Span // flowID → its most recently started open step
}

// Tracker returns a Tracker exporting through e (nil when e is nil).
func (e *Exporter) Tracker() *Tracker {
	if e == nil {
		return nil
	}
	return &Tracker{exp: e, flows: map[string]*Span{}, steps: map[string]*Span{}, last: map[string]*Span{}}
}

// FlowStarted opens the flow span. A child flow (parentFlowID != "") nests
// under the parent flow's open step span (the flow: step), else under the
// parent flow span. Starting an already open flow (a resume) is a no-op.
func (t *Tracker) FlowStarted(flowID, flowName, parentFlowID string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.flows[flowID]; ok {
		return
	}
	var parent *Span
	if parentFlowID != "" {
		parent = t.last[parentFlowID]
		if parent == nil {
			parent = t.flows[parentFlowID]
		}
	}
	sp := t.exp.StartSpan("flow "+flowName, parent, KindInternal)
	sp.Set(AttrFlowID, flowID)
	sp.Set(AttrFlowName, flowName)
	t.flows[flowID] = sp
}

// StepStarted opens the step span (once per step; later attempts add an
// "attempt" event) and returns ctx carrying it, so the infer executor's call
// span becomes its child.
func (t *Tracker) StepStarted(ctx context.Context, flowID, stepID string, attempt int) context.Context {
	if t == nil {
		return ctx
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	key := flowID + "\x00" + stepID
	sp := t.steps[key]
	if sp == nil {
		sp = t.exp.StartSpan("step "+stepID, t.flows[flowID], KindInternal)
		sp.Set(AttrFlowID, flowID)
		sp.Set(AttrStepID, stepID)
		t.steps[key] = sp
	} else {
		sp.Event("attempt", map[string]any{AttrAttempt: attempt})
	}
	sp.Set(AttrAttempts, attempt)
	t.last[flowID] = sp
	return ContextWithSpan(ctx, sp)
}

// AttemptFailed records a failed attempt as a "retry" event with its
// violations.
func (t *Tracker) AttemptFailed(flowID, stepID string, attempt int, violations []string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	sp := t.steps[flowID+"\x00"+stepID]
	t.mu.Unlock()
	sp.Event("retry", map[string]any{
		AttrAttempt:    attempt,
		AttrViolations: violations,
		"message":      strings.Join(violations, "; "),
	})
}

// StepEnded closes the step span with its final status.
func (t *Tracker) StepEnded(flowID, stepID, status string, violations []string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	key := flowID + "\x00" + stepID
	sp := t.steps[key]
	delete(t.steps, key)
	if t.last[flowID] == sp {
		delete(t.last, flowID)
	}
	t.mu.Unlock()
	if sp == nil {
		return
	}
	sp.Set(AttrStatus, status)
	if len(violations) > 0 {
		sp.Set(AttrViolations, violations)
	}
	sp.EndStatus(!failedStatus(status), strings.Join(violations, "; "))
}

// FlowEnded closes the flow span (and any step span left open).
func (t *Tracker) FlowEnded(flowID, status, message string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	sp := t.flows[flowID]
	delete(t.flows, flowID)
	var open []*Span
	for k, s := range t.steps {
		if strings.HasPrefix(k, flowID+"\x00") {
			open = append(open, s)
			delete(t.steps, k)
		}
	}
	delete(t.last, flowID)
	t.mu.Unlock()
	for _, s := range open {
		s.Set(AttrStatus, status)
		s.EndStatus(!failedStatus(status), message)
	}
	if sp == nil {
		return
	}
	sp.Set(AttrStatus, status)
	sp.EndStatus(!failedStatus(status), message)
}

// failedStatus says which step/flow statuses end a span with ERROR; every
// other status (passed, skipped, complete, approve, revise, awaiting_gate,
// interrupted…) is OK.
func failedStatus(status string) bool {
	switch status {
	case "failed", "killed", "kill", "error", "budget_exhausted", "invalid", "timeout":
		return true
	}
	return false
}
