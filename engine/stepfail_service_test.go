package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
)

const specRecorded = `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - {id: a, intent: "a", retries: 2}
      - {id: b, intent: "b"}
`

// The Recorded variants commit the call's spend with the report, in one
// write, and refuse a report from anyone but a live lease's holder.
func TestStepReportsRecordedWithTheirCall(t *testing.T) {
	ctx := context.Background()
	st := enginetest.New()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	lease := state.Lease{ID: "L"}
	resp, err := wireOf(svc.Plan(ctx, specRecorded, "main", nil, engine.PlanOptions{Driver: state.DriverRunner}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp["flow_id"].(string)
	if err := svc.Leases().Claim(ctx, id, state.Lease{ID: lease.ID, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	own := engine.ReportOptions{Actor: "L"}
	cost := 0.5
	r, err := svc.StepAttemptFailed(ctx, engine.AttemptFailure{FlowID: id, StepID: "a", Violations: []string{"exit 1"}, Call: &engine.CallRecord{StepID: "a", Attempt: 1, DurationMS: 10, Tokens: 3, CostUSD: &cost}, ReportOptions: own})
	if d, ok := r.(*engine.StepDispatch); err != nil || !ok || d.Failure != engine.CheckEnsure {
		t.Fatalf("%v %v", r, err)
	}
	// An agent (no lease) is refused, and nothing is recorded.
	_, err = svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}, Call: &engine.CallRecord{StepID: "a", DurationMS: 99}})
	if e := engine.AsError(err); e == nil || e.Type != engine.ErrTypeFlowOwned {
		t.Fatalf("%v", err)
	}
	r, err = svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{"ok": true}, Call: &engine.CallRecord{StepID: "a", Attempt: 2, DurationMS: 5}, ReportOptions: own})
	if d, ok := r.(*engine.StepDispatch); err != nil || !ok || d.StepID != "b" {
		t.Fatalf("%v %v", r, err)
	}
	fs, _ := svc.Query().Get(ctx, id)
	if b := fs.BudgetState; b == nil || b.SpentMS != 15 || b.SpentTokens != 3 || b.SpentUSD != 0.5 || fs.Attempts["a"] != 2 {
		t.Fatalf("ledger %+v attempts %v", fs.BudgetState, fs.Attempts)
	}
	evs, _ := svc.Query().FlowEvents(ctx, id)
	traces := 0
	for _, e := range evs {
		if e.Type == engine.EventTrace {
			traces++
		}
	}
	if traces != 2 {
		t.Fatalf("trace events %d", traces)
	}
	// Without a call record the report alone is applied.
	r, err = svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "b", Result: map[string]any{}, ReportOptions: own})
	if c, ok := r.(*engine.Completion); err != nil || !ok || c.Status != state.StatusComplete {
		t.Fatalf("%v %v", r, err)
	}
}
