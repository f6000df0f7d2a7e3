package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
)

func TestMemStore(t *testing.T) {
	ctx := context.Background()
	s := New()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: s} // its reads of the event log

	put := func(st *state.FlowState) {
		t.Helper()
		if err := s.Update(ctx, func(tx engine.Tx) error {
			expect := st.Stamp(now)
			return tx.Put(st, engine.Summarize(st, nil), expect)
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(&state.FlowState{FlowID: "a", Status: state.StatusRunning, Inputs: map[string]any{"k": "v"}})
	now = now.Add(time.Second)
	put(&state.FlowState{FlowID: "b", Status: state.StatusAwaitingGate, Gate: &state.PendingGate{StepID: "g"}})

	// Get returns private copies.
	var got *state.FlowState
	_ = s.View(ctx, func(tx engine.Tx) error {
		var err error
		got, err = tx.Get("a")
		return err
	})
	got.Inputs["k"] = "changed"
	_ = s.View(ctx, func(tx engine.Tx) error {
		again, _ := tx.Get("a")
		if again.Inputs["k"] != "v" || again.Version != 1 || again.CreatedAt.IsZero() {
			t.Errorf("copy/version/created: %+v", again)
		}
		if _, err := tx.Get("zz"); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("missing flow: %v", err)
		}
		expect := again.Stamp(now)
		if err := tx.Put(again, engine.Summarize(again, nil), expect); err == nil {
			t.Error("Put inside View succeeded")
		}
		list, _ := tx.List(engine.ListFilter{})
		if len(list) != 2 || list[0].FlowID != "b" {
			t.Errorf("list newest first: %+v", list)
		}
		pg, _ := tx.PendingGates()
		if len(pg) != 1 || pg[0].FlowID != "b" {
			t.Errorf("pending gates %+v", pg)
		}
		return nil
	})

	// A failing transaction writes nothing (flows, events, cache).
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx engine.Tx) error {
		c := &state.FlowState{FlowID: "c"}
		expect := c.Stamp(now)
		_ = tx.Put(c, engine.Summarize(c, nil), expect)
		_ = tx.Append(engine.Event{FlowID: "c", Type: engine.EventFlowCreated})
		_ = tx.CachePut("k", []byte("v"))
		return boom
	})
	if evs, _ := svc.Query().Events(ctx, 0, 0); !errors.Is(err, boom) || s.Len() != 2 || len(evs) != 0 {
		t.Fatalf("rollback: err %v len %d events %d", err, s.Len(), len(evs))
	}

	// Events get increasing sequence numbers; Delete drops a flow's events.
	_ = s.Update(ctx, func(tx engine.Tx) error {
		return tx.Append(engine.Event{FlowID: "a", Type: engine.EventStepDone}, engine.Event{FlowID: "b", Type: engine.EventGateOpened})
	})
	_ = s.Update(ctx, func(tx engine.Tx) error {
		_ = tx.CachePut("key", []byte("val"))
		return tx.Append(engine.Event{FlowID: "a", Type: engine.EventFlowFinished})
	})
	evs, _ := svc.Query().Events(ctx, 0, 0)
	if len(evs) != 3 || evs[0].Seq != 1 || evs[2].Seq != 3 {
		t.Fatalf("events %+v", evs)
	}
	if tail, _ := svc.Query().Events(ctx, 1, 1); len(tail) != 1 || tail[0].Seq != 2 {
		t.Fatalf("events after 1, limit 1: %+v", tail)
	}
	_ = s.Update(ctx, func(tx engine.Tx) error { return tx.Delete("a") })
	ea, _ := svc.Query().FlowEvents(ctx, "a")
	eb, _ := svc.Query().FlowEvents(ctx, "b")
	if last, _ := svc.Query().LastSeq(ctx); s.Len() != 1 || len(ea) != 0 || len(eb) != 1 || last != 3 {
		t.Fatalf("delete: len %d events a=%v b=%v last=%d", s.Len(), ea, eb, last)
	}
	_ = s.View(ctx, func(tx engine.Tx) error {
		v, ok, _ := tx.CacheGet("key")
		if !ok || string(v) != "val" {
			t.Errorf("cache %q %v", v, ok)
		}
		return nil
	})
}
