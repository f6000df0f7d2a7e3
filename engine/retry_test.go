package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// losingStore makes the next lose writes of flows lose their race, as if
// a busy writer had committed the flow just before each of them.
type losingStore struct {
	engine.Store
	lose *atomic.Int64
}

func (s losingStore) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	return s.Store.Update(ctx, func(tx engine.Tx) error { return fn(losingTx{tx, s.lose}) })
}

type losingTx struct {
	engine.Tx
	lose *atomic.Int64
}

func (t losingTx) Put(st *state.FlowState, sum state.FlowSummary, expect int64) error {
	if t.lose.Add(-1) >= 0 {
		return &engine.VersionError{FlowID: st.FlowID, Expected: expect, Stored: expect + 1}
	}
	return t.Tx.Put(st, sum, expect)
}

// TestDecisionRetriesPatiently: a decision that loses the race for its
// flow more often than a transition retries at once (5 attempts) is not
// starved: it retries with pauses and is recorded; a step report that
// loses as often gives up with ErrConflict, as before.
func TestDecisionRetriesPatiently(t *testing.T) {
	ctx := context.Background()
	svc, mem, clk := newService()
	lose := new(atomic.Int64)
	svc.Store = losingStore{mem, lose}
	id := must(t)(svc.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))["flow_id"].(string)

	lose.Store(12)
	_, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{"ok": true, "v": 1}})
	if !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a report that lost 12 races: %v, want ErrConflict after 5 attempts", err)
	}
	lose.Store(0)
	must(t)(svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))

	lib := startLibraryFlow(t, svc, clk.Now())
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, lib, engine.ReviewRequest{Question: "Ship?", Schema: map[string]any{"type": "boolean"}}); err != nil {
		t.Fatal(err)
	}
	lose.Store(12)
	start := time.Now()
	if _, err := svc.GateResolve(ctx, lib, review.Decision{StepID: "review-1", Outcome: review.Approve, ResolvedBy: review.Human,
		Channel: review.ChannelCLI, Reviewer: "ann", Value: []byte("true")}); err != nil {
		t.Fatalf("a decision that lost 12 races: %v", err)
	}
	if lose.Load() >= 0 {
		t.Fatalf("the decision did not lose the races it was meant to (%d left)", lose.Load())
	}
	st, _ := svc.Query().Get(ctx, lib)
	if st.Library.Review("review-1").Status != state.ReviewApproved {
		t.Fatalf("review %s", st.Library.Review("review-1").Status)
	}
	t.Logf("13 attempts in %v", time.Since(start).Round(time.Millisecond))
	// A context that ends stops the patience at once, nothing written.
	lib2 := startLibraryFlow(t, svc, clk.Now())
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, lib2, engine.ReviewRequest{Question: "Ship?", Schema: map[string]any{"type": "boolean"}}); err != nil {
		t.Fatal(err)
	}
	lose.Store(1 << 30)
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = svc.GateResolve(cctx, lib2, review.Decision{StepID: "review-1", Outcome: review.Kill, ResolvedBy: review.Human,
		Channel: review.ChannelCLI, Rationale: "no"})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a decision whose context ended: %v", err)
	}
}
