package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// TestTraceLines: runner calls show attempt, duration, tokens and cost, and
// expand to their output; failed attempts show their violations.
func TestTraceLines(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 100, 30)
	m.detail = &state.FlowState{FlowID: "f", FlowName: "x", Status: "running",
		StepProgress: state.StepProgress{
			StepOutputs: map[string]any{"build": map[string]any{"ok": true}},
			Records:     []state.Record{{Type: state.RecordStep, StepID: "build", DurationMS: 1500}}},
		BudgetState: &state.BudgetState{SpentUSD: 0.0123, SpentTokens: 900}}
	m.detailEvents = []engine.Event{
		{Seq: 1, Time: base, Type: engine.EventTrace, StepID: "build", Data: engine.Trace{
			Attempt: 1, DurationMS: 1200, Tokens: 900, CostUSD: ptrTo(0.0123),
			Trace: &state.TraceRecord{Function: "builder", Model: "m-1", Output: map[string]any{"ok": false}}}},
		{Seq: 2, Time: base, Type: engine.EventStepFailed, StepID: "build", Data: engine.StepFailed{
			Attempt: 1, Status: "ensure_failed", Violations: []string{"ensure 'result.ok' failed"}}},
		{Seq: 3, Time: base.Add(time.Second), Type: engine.EventTrace, StepID: "build", Data: engine.Trace{
			Attempt: 2, DurationMS: 3, CostUSD: ptrTo(0.0)}},
		{Seq: 4, Time: base.Add(time.Second), Type: engine.EventStepDone, StepID: "build", Data: engine.StepDone{Attempts: 2}},
	}
	trace, i := paneOf[*tracePane](t, m)
	m.focus = i
	lines := trace.lines(&m.common)
	want := []string{
		"05:00:00 · build builder [m-1] attempt 1 1.2s 900 tokens $0.0123",
		"05:00:00 ✗ build attempt 1 ensure failed 1.2s: ensure 'result.ok' failed",
		"05:00:01 · build call attempt 2 3ms", // a free call shows no $0.0000
		"05:00:01 ✓ build done (attempt 2) 3ms",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines: %+v", len(lines), lines)
	}
	for i, w := range want {
		if lines[i].text != w {
			t.Errorf("line %d: %q, want %q", i, lines[i].text, w)
		}
	}
	press(m, "enter")
	frame := m.View()
	if !strings.Contains(frame, `"ok": false`) || !strings.Contains(frame, "cost $0.0123 · 900 tokens") {
		t.Fatalf("expanded call output or cost missing:\n%s", frame)
	}
}

func ptrTo[T any](v T) *T { return &v }
