package tui

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
)

// libraryFixture is a store holding a Go program's flow (engine/stratum):
// a call, then two reviews open at once — one with options, one that takes
// any value of its type.
func libraryFixture(t *testing.T) (*engine.Service, string) {
	t.Helper()
	var mu sync.Mutex
	tick := 0
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick++
		return base.Add(time.Duration(tick) * time.Second)
	}
	st := enginetest.New()
	st.Now = clock
	svc := &engine.Service{Store: st, Now: clock, NewID: func() string { return "0000000a-0000-4000-8000-000000000000" }}
	ctx := context.Background()
	lease := state.Lease{ID: "lib-1", ExpiresAt: base.Add(time.Hour)}
	id, err := svc.StartLibraryFlow(ctx, engine.LibraryFlowOptions{Name: "release", Inputs: map[string]any{"version": "1.4"}, Owner: &lease})
	if err != nil {
		t.Fatal(err)
	}
	cost := 0.0021
	if err := svc.RecordLibraryCall(ctx, id, engine.LibraryCall{Function: "plan", Attempts: 2, DurationMS: 1200, Tokens: 840, CostUSD: &cost,
		Trace: &state.TraceRecord{Function: "plan", Model: "openai/gpt-4o-mini", Attempts: 2}}); err != nil {
		t.Fatal(err)
	}
	opts := []json.RawMessage{json.RawMessage(`{"name":"canary","risk":"low"}`), json.RawMessage(`{"name":"big-bang","risk":"high"}`)}
	if _, err := svc.OpenReview(ctx, id, engine.ReviewRequest{Question: "Which rollout plan?", Trigger: "debate_disagreement",
		Artifacts: map[string]any{"agents": 3}, Options: opts, Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"ship": map[string]any{"type": "boolean"}},
		"required": []any{"ship"}, "additionalProperties": false}
	if _, err := svc.OpenReview(ctx, id, engine.ReviewRequest{Question: "Ship it?", Schema: schema, Approver: "human"}); err != nil {
		t.Fatal(err)
	}
	return svc, id
}

// The Gates pane lists each review of a Go program (one row each) with its
// question, trigger, artifacts and numbered options; the reviewer picks an
// option by its number, adds a rationale and confirms: three keys plus the
// text. Golden frames at 80×24, colour off.
func TestLibraryReviewInGatesPane(t *testing.T) {
	svc, id := libraryFixture(t)
	m := newModel(t, ServiceSource(svc), 80, 24)
	press(m, "3")
	frame := m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "library_gates_80x24", frame)
	if !strings.Contains(frame, "Gates(2)") {
		t.Errorf("two open reviews, one row each: %s", frame)
	}

	// The Trace pane (the selected gate's flow): the Call with its
	// attempts, duration, tokens and cost, then the reviews opening.
	press(m, "2")
	trace := m.View()
	for _, want := range []string{"· plan#1 plan [openai/gpt-4o-mini] 2 attempts 1.2s 840 tokens", "⏸ gate review-1 opened", "⏸ gate review-2 opened"} {
		if !strings.Contains(trace, want) {
			t.Errorf("the Trace pane lacks %q:\n%s", want, trace)
		}
	}
	press(m, "3")

	press(m, "a")
	press(m, "5") // no option 5
	if !strings.Contains(m.View(), "option 5 is out of range") {
		t.Errorf("an option out of range was not refused:\n%s", m.View())
	}
	press(m, "2")
	typeText(m, "risk is fine")
	press(m, "enter")
	frame = m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "library_confirm_80x24", frame)
	press(m, "a")
	r, err := svc.LibraryReviewOf(context.Background(), id, "review-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != state.ReviewApproved || r.Decision.Option != 2 || r.Decision.Channel != "tui" || r.Decision.Reviewer != "alice" || r.Decision.Rationale != "risk is fine" {
		t.Fatalf("review-1 after the TUI's decision: %s %+v", r.Status, r.Decision)
	}

	// The other review takes a typed value, checked against its type.
	m = newModel(t, ServiceSource(svc), 80, 24)
	press(m, "3", "a")
	typeText(m, `{"ship": "yes"}`)
	press(m, "enter")
	if v := m.View(); !strings.Contains(v, "does not fit the type") {
		t.Errorf("a value of the wrong type was not refused:\n%s", v)
	}
	for range len(`{"ship": "yes"}`) {
		press(m, "backspace")
	}
	typeText(m, `{"ship": true}`)
	press(m, "enter")
	press(m, "enter", "a")
	r, _ = svc.LibraryReviewOf(context.Background(), id, "review-2")
	var v struct{ Ship bool }
	if r.Status != state.ReviewApproved || json.Unmarshal(r.Decision.Value, &v) != nil || !v.Ship {
		t.Fatalf("review-2: %s %+v", r.Status, r.Decision)
	}
	st, _ := svc.Get(context.Background(), id)
	if st.Status != state.StatusRunning || st.Gate != nil {
		t.Errorf("flow after both reviews: %s gate %v", st.Status, st.Gate)
	}
}
