package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// libraryCallsFixture is a Go program's flow with two Calls as
// engine/stratum stores them: one retried once, with a tool call and a
// tool call whose approval was rejected, its inputs cut to fit the store;
// one streamed that failed after its retries.
func libraryCallsFixture(t *testing.T) Source {
	t.Helper()
	svc, _ := tickingService(time.Second, fixedID("0000000c-0000-4000-8000-000000000000"))
	ctx := context.Background()
	lib := engine.NewLibrary(svc)
	lease := state.Lease{ID: "lib-1", ExpiresAt: base.Add(time.Hour)}
	id, err := lib.StartFlow(ctx, engine.LibraryFlowOptions{Name: "weather", Inputs: map[string]any{"city": "Oslo"}, Owner: &lease})
	if err != nil {
		t.Fatal(err)
	}
	cost := 0.0009
	forecast := &state.TraceRecord{Function: "forecast", Model: "openai/gpt-4o-mini", Attempts: 2,
		Inputs: map[string]any{"city": "Oslo " + strings.Repeat("é", 20) + "…(+39960 bytes)"}, InputsTruncated: true,
		Retries: []state.AttemptFailure{{Attempt: 1, Violations: []string{"the answer is not JSON: invalid character 'h' looking for beginning of value"}}},
		ToolCalls: []state.ToolCallRecord{
			{Attempt: 1, Round: 1, ID: "call_a", Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`), Result: json.RawMessage(`{"city":"Oslo","temp_c":-3}`), DurationMS: 2},
			{Attempt: 2, Round: 1, ID: "call_b", Name: "clear_cache", Args: json.RawMessage(`{"path":"/tmp/weather"}`), Error: "rejected: not now", DurationMS: 4100, ReviewID: "0000000c-0000-4000-8000-000000000000/review-1/0"},
		},
		Output: map[string]any{"summary": "cold in Oslo"}}
	if err := lib.RecordCall(ctx, id, engine.LibraryCall{Function: "forecast", Attempts: 2, DurationMS: 5300, Tokens: 420, CostUSD: &cost, Trace: forecast}); err != nil {
		t.Fatal(err)
	}
	summarize := &state.TraceRecord{Function: "summarize", Model: "openai/gpt-4o-mini", Attempts: 2, Inputs: map[string]any{"text": "cold in Oslo"}, Streamed: true,
		Retries: []state.AttemptFailure{{Attempt: 1, Violations: []string{"summary is empty"}}, {Attempt: 2, Violations: []string{"summary is empty"}}}}
	if err := lib.RecordCall(ctx, id, engine.LibraryCall{Function: "summarize", Attempts: 2, DurationMS: 900, Tokens: 200, CostUSD: &cost, Trace: summarize,
		Data: map[string]any{"error": "stratum: summarize: 2 attempts failed: summary is empty"}}); err != nil {
		t.Fatal(err)
	}
	return ServiceSource(svc)
}

// The Trace pane shows a Go program's Calls with their retries, tool
// calls, streaming and failure on the row; enter on a Call shows its
// inputs (cut, and saying so), why each attempt was retried, each tool
// call with its arguments and result or error, and the output. Golden
// frames at 80×24, colour off.
func TestGoldenLibraryCallTrace(t *testing.T) {
	src := libraryCallsFixture(t)
	m := newModel(t, src, 80, 24)
	press(m, "2")
	frame := m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "trace_library_calls_80x24", frame)
	for _, want := range []string{"· forecast#1 2 attempts (1 failed) · 2 tool calls · 5.3s 420 token", "· summarize#2 failed after 2 attempts · streamed · 900ms"} {
		if !strings.Contains(frame, want) {
			t.Errorf("the Trace pane lacks %q:\n%s", want, frame)
		}
	}

	selectRow(t, m, "forecast#1")
	press(m, "enter")
	frame = m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "trace_library_call_open_80x24", frame)
	for _, want := range []string{"inputs (cut to fit the store): {\"city\":\"Oslo éé", "attempt 1 retried: the answer is not JSON",
		`tool weather (attempt 1, round 1) 2ms {"city":"Oslo"} →`, `{"city":"Oslo","temp_c":-3}`,
		"tool clear_cache (attempt 2, round 1) 4.1s · approval review-1", "✗ rejected: not now", `"summary": "cold in Oslo"`} {
		if !strings.Contains(frame, want) {
			t.Errorf("the open Call lacks %q:\n%s", want, frame)
		}
	}
}

// libraryCallRow's row text, by what the Call did.
func TestLibraryCallRow(t *testing.T) {
	for _, c := range []struct {
		name   string
		d      engine.Trace
		text   string
		failed bool
		detail []string
	}{
		{"plain call", engine.Trace{Attempt: 1, DurationMS: 1500, Tokens: 10, Trace: &state.TraceRecord{Model: "m/x", Inputs: map[string]any{"a": 1}, Output: "x"}},
			"· f#1 1 attempt · 1.5s 10 tokens [m/x]", false, []string{`inputs: {"a":1}`, "output:"}},
		{"one retry, two tool calls, streamed", engine.Trace{Attempt: 2, Trace: &state.TraceRecord{Streamed: true,
			Retries:   []state.AttemptFailure{{Attempt: 1, Violations: []string{"a", "b"}}},
			ToolCalls: []state.ToolCallRecord{{Name: "t", Truncated: true}, {Name: "u", Error: "boom"}}}},
			"· f#1 2 attempts (1 failed) · 2 tool calls · streamed · 0s", false,
			[]string{"attempt 1 retried: a; b", "tool t (attempt 0, round 0) 0s {} → null (cut to fit the store)", "tool u (attempt 0, round 0) 0s {} ✗ boom"}},
		{"opaque and cut inputs", engine.Trace{Attempt: 1, Trace: &state.TraceRecord{Inputs: map[string]any{"doc": "…"}, OpaqueInputs: []string{"doc"}, InputsTruncated: true}},
			"· f#1 1 attempt · 0s", false, []string{`inputs (not in the prompt: doc; cut to fit the store): {"doc":"…"}`}},
		{"failed without a trace record", engine.Trace{Attempt: 3, ErrorKind: "library", Violations: []string{"no runtime"}},
			"· f#1 failed after 3 attempts · 0s", true, []string{"failed: no runtime"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, detail, failed := libraryCallRow("f#1", &c.d)
			if text != c.text || failed != c.failed {
				t.Errorf("row %q failed %v, want %q %v", text, failed, c.text, c.failed)
			}
			for _, w := range c.detail {
				if !strings.Contains(detail, w) {
					t.Errorf("detail lacks %q:\n%s", w, detail)
				}
			}
		})
	}
}

// A Go program's review adds its question to its gate row, and the tool
// of a tool call's approval; other flows' gates add nothing.
func TestLibraryReviewNote(t *testing.T) {
	lib := &state.FlowState{Library: &state.LibraryState{Reviews: []*state.LibraryReview{
		{ID: "review-1", Question: "Refund this order?", Trigger: "tool_call", Artifacts: map[string]any{"tool": "issue_refund"}},
		{ID: "review-2", Question: "Ship it?"},
	}}}
	for _, c := range []struct {
		st   *state.FlowState
		id   string
		want string
	}{
		{lib, "review-1", ": Refund this order? (tool issue_refund)"},
		{lib, "review-2", ": Ship it?"},
		{lib, "review-9", ""},
		{&state.FlowState{}, "review-1", ""},
	} {
		if got := libraryReviewNote(c.st, c.id); got != c.want {
			t.Errorf("%s: %q, want %q", c.id, got, c.want)
		}
	}
}
