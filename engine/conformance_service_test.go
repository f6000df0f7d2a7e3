package engine_test

import (
	"context"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// §2.3: an unexpected failure is the original's translated internal_error,
// {status:"error", success:false, error_type:"internal_error", message:
// "An unexpected error occurred."}, never the details; an unknown flow is
// the hand-built flow_not_found (no success key).
func TestConformanceServiceErrorEnvelopes(t *testing.T) {
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: enginetest.New(), NewID: func() string { panic("boom: secret detail") }}
	r, err := wireOf(svc.Plan(context.Background(), svcSpec, "main", nil, engine.PlanOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	want := engine.Response{"status": "error", "success": false, "error_type": "internal_error", "message": "An unexpected error occurred."}
	if len(r) != len(want) {
		t.Fatalf("got %v, want %v", r, want)
	}
	for k, v := range want {
		if r[k] != v {
			t.Fatalf("got %v, want %v", r, want)
		}
	}
	r, err = wireOf(svc.Resume(context.Background(), "nope"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r) != 3 || r["status"] != "error" || r["error_type"] != "flow_not_found" || r["message"] != "No active flow with id 'nope'" {
		t.Fatalf("flow_not_found: %v", r)
	}
}
