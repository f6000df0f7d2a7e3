package engine_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

func TestSummarize(t *testing.T) {
	sp, ds := specs.Parse("", []byte(svcSpec), exprlang.Compile)
	if sp == nil || ds.HasErrors() {
		t.Fatal(ds)
	}
	flow := sp.Flows["main"]
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	parent := "p"
	st := &state.FlowState{FlowID: "f", FlowName: "main", Status: state.StatusRunning,
		StepProgress: state.StepProgress{CurrentIdx: 1}, RoundProgress: state.RoundProgress{Round: 2}, Driver: "agent", ParentFlowID: &parent, Version: 3, CreatedAt: at, UpdatedAt: at.Add(time.Minute),
		DispatchedAt: map[string]time.Time{"a": at, "b": at.Add(time.Second)}}

	// Running: the most recently dispatched step, 1-based step number.
	sum := engine.Summarize(st, nil)
	want := state.FlowSummary{FlowID: "f", FlowName: "main", Status: state.StatusRunning, CurrentStep: "b", StepNumber: 2,
		Round: 2, Driver: "agent", ParentFlowID: "p", CreatedAt: at, UpdatedAt: at.Add(time.Minute), Version: 3}
	if !reflect.DeepEqual(sum, want) {
		t.Fatalf("running, no spec:\n got %+v\nwant %+v", sum, want)
	}
	// The spec adds the total; with nothing dispatched the cursor names the step.
	st.DispatchedAt = nil
	sum = engine.Summarize(st, flow)
	if sum.TotalSteps != 3 || sum.CurrentStep != "b" || sum.StepNumber != 2 {
		t.Fatalf("running, with spec: %+v", sum)
	}
	if sum = engine.Summarize(st, nil); sum.TotalSteps != 0 || sum.CurrentStep != "" {
		t.Fatalf("running, nothing dispatched, no spec: %+v", sum)
	}
	// An active iteration names its step; a gate wins over everything.
	st.ActiveIteration = &state.ActiveIteration{StepID: "a"}
	if sum = engine.Summarize(st, flow); sum.CurrentStep != "a" {
		t.Fatalf("iterating: %+v", sum)
	}
	deadline := at.Add(time.Hour)
	st.Status, st.CurrentIdx = state.StatusAwaitingGate, 2
	st.Gate = &state.PendingGate{StepID: "review", Round: 2, Deadline: &deadline}
	sum = engine.Summarize(st, flow)
	if sum.CurrentStep != "review" || sum.StepNumber != 3 || sum.Gate == nil || !sum.Gate.Deadline.Equal(deadline) {
		t.Fatalf("at the gate: %+v", sum)
	}
	if sum.Gate == st.Gate || sum.Gate.Deadline == st.Gate.Deadline {
		t.Fatal("the summary shares the state's gate")
	}
	// Finished: no current step; the step number is the cursor.
	st.Status, st.Gate, st.ActiveIteration, st.CurrentIdx = state.StatusComplete, nil, nil, 3
	st.DispatchedAt = map[string]time.Time{"review": at}
	if sum = engine.Summarize(st, flow); sum.CurrentStep != "" || sum.StepNumber != 3 || sum.TotalSteps != 3 {
		t.Fatalf("complete: %+v", sum)
	}
}

// TestServiceStoresItsSummaries: every state the service writes is listed
// with exactly Summarize of the stored state and its flow.
func TestServiceStoresItsSummaries(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	sp, _ := specs.Parse("", []byte(svcSpec), exprlang.Compile)
	check := func(when string) {
		t.Helper()
		sums, err := s.Query().List(ctx, engine.ListFilter{})
		if err != nil || len(sums) == 0 {
			t.Fatalf("%s: List %v %v", when, sums, err)
		}
		for _, sum := range sums {
			st, err := s.Query().Get(ctx, sum.FlowID)
			if err != nil {
				t.Fatal(err)
			}
			if want := engine.Summarize(st, sp.Flows[st.FlowName]); !reflect.DeepEqual(sum, want) {
				t.Fatalf("%s: listed\n %+v\nwant\n %+v", when, sum, want)
			}
		}
	}
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	check("planned")
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "b", Result: map[string]any{}}))
	check("at the gate")
	sums, _ := s.Query().List(ctx, engine.ListFilter{})
	if g := sums[0]; g.CurrentStep != "review" || g.StepNumber != 3 || g.TotalSteps != 3 || g.Gate == nil {
		t.Fatalf("at the gate: %+v", g)
	}
	lease := state.Lease{ID: "run-1", ExpiresAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := s.Leases().Claim(ctx, "f1", lease); err != nil {
		t.Fatal(err)
	}
	check("claimed")
	if sums, _ := s.Query().List(ctx, engine.ListFilter{}); sums[0].Owner == nil || sums[0].Owner.ID != "run-1" || sums[0].Driver != state.DriverRunner {
		t.Fatalf("claimed flow lists owner %+v, driver %q", sums[0].Owner, sums[0].Driver)
	}
	if err := s.Leases().Release(ctx, "f1", "run-1"); err != nil {
		t.Fatal(err)
	}
	check("released")
	if sums, _ := s.Query().List(ctx, engine.ListFilter{}); sums[0].Owner != nil {
		t.Fatalf("released flow still lists owner %+v", sums[0].Owner)
	}
}
