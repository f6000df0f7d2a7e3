package run

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

type ctxKey struct{}

type recTracer struct{ calls []string }

func (r *recTracer) FlowStarted(flowID, flowName, parent string) {
	if parent != "" {
		parent = "child-of-parent"
	}
	r.calls = append(r.calls, strings.TrimSpace("flow "+flowName+" "+parent))
}
func (r *recTracer) StepStarted(ctx context.Context, flowID, stepID string, attempt int) context.Context {
	r.calls = append(r.calls, fmt.Sprintf("step %s #%d", stepID, attempt))
	return context.WithValue(ctx, ctxKey{}, stepID)
}
func (r *recTracer) AttemptFailed(flowID, stepID string, attempt int, violations []string) {
	r.calls = append(r.calls, fmt.Sprintf("retry %s #%d %s", stepID, attempt, strings.Join(violations, ";")))
}
func (r *recTracer) StepEnded(flowID, stepID, status string, violations []string) {
	r.calls = append(r.calls, "end "+stepID+" "+status)
}
func (r *recTracer) FlowEnded(flowID, status, message string) {
	r.calls = append(r.calls, "flow-end "+status)
}

func TestTracerSeesFlowsStepsRetriesAndGates(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
functions:
  ok:
    mode: gate
flows:
  child:
    input: {}
    steps:
      - {id: c1, intent: "c1", run: "echo 1"}
  main:
    input: {}
    steps:
      - id: a
        intent: "a"
        retries: 2
        run: "echo $STRATUM_ATTEMPT"
        ensure: ["result == 2"]
      - {id: sub, flow: child}
      - {id: g, function: ok, on_approve: null, on_revise: a, on_kill: null}
`)
	tr := &recTracer{}
	var sawCtx bool
	cmd := &CommandExecutor{}
	o := e.start(sp, "main", nil, func(o *Options) {
		o.Tracer = tr
		o.Gates.Approve = []string{"all"}
		o.Command = execFunc(func(ctx context.Context, req stepReq) (stepOut, error) {
			sawCtx = sawCtx || ctx.Value(ctxKey{}) == req.Step.ID
			return cmd.Execute(ctx, req)
		})
	})
	wantStatus(t, o, EndComplete, 0)
	got := strings.Join(tr.calls, "\n")
	want := strings.Join([]string{
		"flow main",
		"step a #1",
		"retry a #1 ensure 'result == 2' failed",
		"step a #2",
		"end a passed",
		"step sub #1",
		"flow child child-of-parent",
		"step c1 #1",
		"end c1 passed",
		"flow-end complete",
		"end sub passed",
		"step g #1",
		"end g approve",
		"flow-end complete",
	}, "\n")
	if got != want {
		t.Fatalf("tracer calls:\n%s\nwant:\n%s", got, want)
	}
	if !sawCtx {
		t.Fatal("the executor did not run under the step's context")
	}
}
