package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
)

// TestLibraryReviewOverMCP: stratum_gate_resolve decides a Go program's
// review with value (a JSON value, not a string holding JSON); a value
// that does not fit is refused and the review stays open; a review with
// approver human is never decided over MCP.
func TestLibraryReviewOverMCP(t *testing.T) {
	s := start(t)
	st := s.openStore()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
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

// TestLibraryCallsInAuditOverMCP: a Go program's stored Calls are in the
// audit an agent reads (stratum_audit) and in `stratum audit`, under
// calls: inputs, each failed attempt's violations, tool calls.
func TestLibraryCallsInAuditOverMCP(t *testing.T) {
	s := start(t)
	st := s.openStore()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	ctx := context.Background()
	lease := state.Lease{ID: "lib-mcp", ExpiresAt: time.Now().Add(time.Hour)}
	lib := engine.NewLibrary(svc)
	id, err := lib.StartFlow(ctx, engine.LibraryFlowOptions{Name: "program", Owner: &lease})
	if err != nil {
		t.Fatal(err)
	}
	tr := &state.TraceRecord{Function: "forecast", Model: "openai/gpt-4o-mini", Attempts: 2, Inputs: map[string]any{"city": "Oslo"},
		Retries:   []state.AttemptFailure{{Attempt: 1, Violations: []string{"summary is empty"}}},
		ToolCalls: []state.ToolCallRecord{{Attempt: 1, Round: 1, ID: "call_a", Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`), Result: json.RawMessage(`{"temp_c":-3}`)}}}
	if err := lib.RecordCall(ctx, id, engine.LibraryCall{Function: "forecast", Attempts: 2, Trace: tr}); err != nil {
		t.Fatal(err)
	}
	check := func(how string, audit map[string]any) {
		t.Helper()
		calls, _ := audit["calls"].([]any)
		if len(calls) != 1 {
			t.Fatalf("%s: calls %v", how, audit["calls"])
		}
		got, _ := json.Marshal(calls[0])
		for _, want := range []string{`"step_id":"forecast#1"`, `"inputs":{"city":"Oslo"}`, `"retries":[{"attempt":1,"violations":["summary is empty"]}]`,
			`"tool_calls":[{"args":{"city":"Oslo"},"attempt":1,"duration_ms":0,"id":"call_a","name":"weather","result":{"temp_c":-3},"round":1}]`} {
			if !strings.Contains(string(got), want) {
				t.Errorf("%s: the call lacks %s: %s", how, want, got)
			}
		}
	}
	out, isErr := s.call("stratum_audit", map[string]any{"flow_id": id})
	if isErr {
		t.Fatalf("stratum_audit: %v", out)
	}
	check("stratum_audit", out)
	text, err := s.cli("audit", id)
	if err != nil {
		t.Fatalf("stratum audit: %v: %s", err, text)
	}
	var cli map[string]any
	if err := json.Unmarshal([]byte(text), &cli); err != nil {
		t.Fatalf("stratum audit: %v: %s", err, text)
	}
	check("stratum audit", cli)
}
