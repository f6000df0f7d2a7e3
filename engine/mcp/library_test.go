package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// TestLibraryReviewOverMCP: stratum_gate_resolve decides a Go program's
// review with value (a JSON value, not a string holding JSON); a value
// that does not fit is refused and the review stays open; a review with
// approver human is never decided over MCP.
func TestLibraryReviewOverMCP(t *testing.T) {
	s := start(t)
	st := s.openStore()
	svc := &engine.Service{Store: st}
	ctx := context.Background()
	lease := state.Lease{ID: "lib-mcp", ExpiresAt: time.Now().Add(time.Hour)}
	id, err := engine.NewLibrary(svc).StartFlow(ctx, engine.LibraryFlowOptions{Name: "program", Owner: &lease})
	if err != nil {
		t.Fatal(err)
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"ship": map[string]any{"type": "boolean"}},
		"required": []any{"ship"}, "additionalProperties": false}
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Ship?", Schema: schema}); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Really?", Options: []json.RawMessage{json.RawMessage(`"yes"`)}, Approver: "human"}); err != nil {
		t.Fatal(err)
	}
	resolve := func(step string, value any) map[string]any {
		got, _ := s.call("stratum_gate_resolve", map[string]any{"flow_id": id, "step_id": step, "outcome": "approve",
			"rationale": "", "resolved_by": "agent", "value": value})
		return got
	}
	if got := resolve("review-1", `{"ship": true}`); got["error_type"] != "invalid_review_value" {
		t.Errorf("a string holding JSON: %v", got)
	}
	if got := resolve("review-2", "yes"); got["error_type"] != "gate_requires_human" {
		t.Errorf("a human review over MCP: %v", got)
	}
	if got := resolve("review-1", map[string]any{"ship": true}); got["status"] != "review_approved" || got["step_id"] != "review-1" {
		t.Fatalf("approve with a value: %v", got)
	}
	r, err := engine.NewLibrary(svc).Review(ctx, id, "review-1")
	if err != nil || r.Decision == nil || r.Decision.Channel != "mcp" || string(r.Decision.Value) != `{"ship":true}` {
		t.Errorf("stored review %+v, %v", r, err)
	}
	if r, _ := engine.NewLibrary(svc).Review(ctx, id, "review-2"); r.Status != state.ReviewOpen {
		t.Errorf("the human review is %s", r.Status)
	}
}
