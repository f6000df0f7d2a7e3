package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// viewCounter counts the store's read transactions.
type viewCounter struct {
	*enginetest.Store
	views atomic.Int64
}

func (v *viewCounter) View(ctx context.Context, fn func(tx engine.Tx) error) error {
	v.views.Add(1)
	return v.Store.View(ctx, fn)
}

const ownSpec = `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: a
        intent: "a"
      - id: b
        intent: "b"
        depends_on: [a]
      - id: c
        intent: "c"
        depends_on: [b]
`

func ownPlan(t *testing.T, svc *engine.Service) string {
	t.Helper()
	out, err := svc.Plan(context.Background(), ownSpec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out.(*engine.StepDispatch).FlowID
}

func wantStep(t *testing.T, out engine.Outcome, err error, step string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := out.(*engine.StepDispatch); !ok || d.StepID != step {
		t.Fatalf("answer %#v, want the dispatch of %s", out, step)
	}
}

// A transition of a flow this Service committed last starts from the state
// it wrote: no read transaction.
func TestOwnCommitNotReadAgain(t *testing.T) {
	st := &viewCounter{Store: enginetest.New()}
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	id := ownPlan(t, svc)
	st.views.Store(0)
	out, err := svc.StepDone(context.Background(), engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}})
	wantStep(t, out, err, "b")
	out, err = svc.StepDone(context.Background(), engine.StepReport{FlowID: id, StepID: "b", Result: map[string]any{}})
	wantStep(t, out, err, "c")
	if n := st.views.Load(); n != 0 {
		t.Fatalf("%d read transactions, want none", n)
	}
	// A read (audit) still reads the store.
	if _, err := svc.Audit(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if n := st.views.Load(); n != 1 {
		t.Fatalf("audit: %d read transactions, want 1", n)
	}
}

// Another writer (another process's Service on the same store) moved the
// flow on since this Service committed it: a write computed on the old
// state is refused by the conditional put and computed again from the
// store; an answer that writes nothing, computed on the old state, is
// computed again from the store before it is given.
func TestOwnCommitOtherWriter(t *testing.T) {
	mem := enginetest.New()
	a, b := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: mem}, &engine.Service{ParseSpec: exprlang.ParseSpec, Store: mem}
	ctx := context.Background()

	t.Run("refusal on the old state", func(t *testing.T) {
		id := ownPlan(t, a)
		out, err := b.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}})
		wantStep(t, out, err, "b")
		// a still holds the flow at step a, where b is not current.
		out, err = a.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "b", Result: map[string]any{}})
		wantStep(t, out, err, "c")
	})
	t.Run("write on the old state", func(t *testing.T) {
		id := ownPlan(t, a)
		out, err := b.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}})
		wantStep(t, out, err, "b")
		// On a's old state, reporting a again would succeed; it is stored
		// done, so the answer is the store's: a is not the current step.
		_, err = a.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}})
		want, werr := (&engine.Service{ParseSpec: exprlang.ParseSpec, Store: mem}).StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}})
		if engine.AsError(werr) == nil {
			t.Fatalf("a fresh service accepted step a again: %#v, %v", want, werr)
		}
		if e := engine.AsError(err); e == nil || e.Type != engine.AsError(werr).Type {
			t.Fatalf("answer %v, want %v", err, werr)
		}
		st := getFlow(t, mem, id)
		if st.Version != 2 {
			t.Fatalf("version %d, want 2 (plan and b's step only)", st.Version)
		}
	})
	t.Run("deleted by another writer", func(t *testing.T) {
		id := ownPlan(t, a)
		if err := mem.Update(ctx, func(tx engine.Tx) error { return tx.Delete(id) }); err != nil {
			t.Fatal(err)
		}
		_, err := a.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}})
		if e := engine.AsError(err); e == nil || e.Type != engine.ErrTypeFlowNotFound {
			t.Fatalf("answer %v, want flow_not_found", err)
		}
		if errors.Is(err, engine.ErrConflict) {
			t.Fatal(err)
		}
	})
}

// getCounter counts the states read whole (Tx.Get) in read transactions.
type getCounter struct {
	*enginetest.Store
	gets atomic.Int64
}

func (g *getCounter) View(ctx context.Context, fn func(tx engine.Tx) error) error {
	return g.Store.View(ctx, func(tx engine.Tx) error { return fn(getCountingTx{tx, &g.gets}) })
}

type getCountingTx struct {
	engine.Tx
	gets *atomic.Int64
}

func (t getCountingTx) Get(id string) (*state.FlowState, error) {
	t.gets.Add(1)
	return t.Tx.Get(id)
}

// The audit of a flow this Service committed last is built from its copy,
// checked by the flow's summary (no state decoded); once another writer
// moved the flow on, it is built from the store.
func TestOwnCommitAudit(t *testing.T) {
	st := &getCounter{Store: enginetest.New()}
	a, b := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}, &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	ctx := context.Background()
	id := ownPlan(t, a)
	out, err := a.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}})
	wantStep(t, out, err, "b")
	stepsCompleted := func(svc *engine.Service) any {
		t.Helper()
		rep, err := svc.Audit(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return engine.Wire(rep, nil)["steps_completed"]
	}
	st.gets.Store(0)
	if n := stepsCompleted(a); n != 1 {
		t.Fatalf("audit: steps_completed %v, want 1", n)
	}
	if n := st.gets.Load(); n != 0 {
		t.Fatalf("audit of an own commit read %d states, want none", n)
	}
	out, err = b.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "b", Result: map[string]any{}})
	wantStep(t, out, err, "c")
	if n := stepsCompleted(a); n != 2 {
		t.Fatalf("audit after another writer: steps_completed %v, want 2", n)
	}
	if n := st.gets.Load(); n == 0 {
		t.Fatal("audit after another writer read no state")
	}
}
