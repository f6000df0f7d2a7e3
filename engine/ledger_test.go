package engine_test

import (
	"context"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// Ledger answers the flow's ledger from this Service's own commit, and
// from the store once another Service (another process) recorded a call.
func TestLedger(t *testing.T) {
	ctx := context.Background()
	mem := enginetest.New()
	s := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: mem}
	other := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: mem}
	planned, err := s.Plan(ctx, deadlineSpec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := engine.FlowIDOf(planned)
	if led, err := s.Query().Ledger(ctx, id); err != nil || led.SpentMS != 0 {
		t.Fatalf("fresh flow: %+v %v", led, err)
	}
	if _, err := s.RecordCall(ctx, id, engine.CallRecord{StepID: "work", Attempt: 1, DurationMS: 40, Tokens: 7}, engine.ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	if led, err := s.Query().Ledger(ctx, id); err != nil || led.SpentMS != 40 || led.SpentTokens != 7 {
		t.Fatalf("after this Service's call: %+v %v", led, err)
	}
	if _, err := other.RecordCall(ctx, id, engine.CallRecord{StepID: "work", Attempt: 2, DurationMS: 2, Agent: true}, engine.ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	if led, err := s.Query().Ledger(ctx, id); err != nil || led.SpentMS != 42 || led.AgentDispatch != 1 {
		t.Fatalf("after another Service's call: %+v %v", led, err)
	}
	if _, err := s.Query().Ledger(ctx, "no-such-flow"); err == nil {
		t.Fatal("no error for a flow that does not exist")
	}
}
