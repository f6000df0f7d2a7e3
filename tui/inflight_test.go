package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// TestInflightMarker: a running flow whose step is under way shows it in
// the Flows pane (▶ running 12s, and the step under the list) — at start
// from the state's dispatch time, then from the store's events as they
// arrive: the step's report ends the mark, the next dispatch starts one, a
// gate opening ends it. An idle flow and a stalled one are not marked.
// Golden at 80×24.
func TestInflightMarker(t *testing.T) {
	var mu sync.Mutex
	now := base.Add(10*time.Minute - 12*time.Second)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	setClock := func(t time.Time) { mu.Lock(); defer mu.Unlock(); now = t }
	st := enginetest.New()
	st.Now = clock
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st, Now: clock, NewID: func() string { return "0000000c-0000-4000-8000-000000000000" }}
	ctx := context.Background()
	out, err := svc.Plan(ctx, gateSpec, "deploy", map[string]any{"name": "world"}, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := engine.FlowIDOf(out)
	src := ServiceSource(svc)
	m := newModel(t, src, 80, 24)
	frame := m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "flows_inflight_80x24", frame)
	if !strings.Contains(frame, "▶ running 12s") || !strings.Contains(frame, "step build under way for 12s") {
		t.Fatalf("a step under way is not marked:\n%s", frame)
	}

	// The store's events move the mark: build reports (the gate opens).
	seen := 0
	deliver := func() {
		t.Helper()
		evs, err := src.FlowEvents(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		_, cmd := m.Update(eventsMsg(evs[seen:]))
		seen = len(evs)
		drive(m, cmd)
	}
	deliver() // the events so far (plan): the mark stays
	if !strings.Contains(m.View(), "▶ running 12s") {
		t.Fatalf("the plan's events dropped the mark:\n%s", m.View())
	}
	setClock(base.Add(10*time.Minute - 5*time.Second))
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "build", Result: map[string]any{"ok": false}}); err != nil {
		t.Fatal(err)
	}
	deliver() // a failed attempt, then its retry dispatched: in flight 5s
	if v := m.View(); !strings.Contains(v, "▶ running 5s") {
		t.Fatalf("the retry's dispatch did not start a mark:\n%s", v)
	}
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "build", Result: map[string]any{"ok": true}}); err != nil {
		t.Fatal(err)
	}
	deliver()
	if v := m.View(); strings.Contains(v, "under way") || strings.Contains(v, "▶ running") || !strings.Contains(v, "⏸ awaiting_gate") {
		t.Fatalf("a flow at its gate is marked in flight:\n%s", v)
	}
}

// A console started before a flow: the mark comes from the events alone.
func TestInflightMarkerFromEvents(t *testing.T) {
	clock := func() time.Time { return base.Add(10*time.Minute - 3*time.Second) }
	st := enginetest.New()
	st.Now = clock
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st, Now: clock}
	src := ServiceSource(svc)
	m := newModel(t, src, 80, 24)
	out, err := svc.Plan(context.Background(), gateSpec, "deploy", map[string]any{"name": "world"}, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := src.FlowEvents(context.Background(), engine.FlowIDOf(out))
	if err != nil {
		t.Fatal(err)
	}
	_, cmd := m.Update(eventsMsg(evs))
	drive(m, cmd)
	if v := m.View(); !strings.Contains(v, "▶ running 3s") {
		t.Fatalf("the dispatch event did not mark the flow:\n%s", v)
	}
}
