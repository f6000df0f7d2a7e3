package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
)

const deadlineSpec = `version: "0.2"
functions:
  review:
    mode: gate
    timeout: 1
flows:
  main:
    input: {}
    steps:
      - id: work
        intent: "do it"
      - id: gate
        function: review
        depends_on: [work]
        on_approve: ~
        on_revise: work
        on_kill: ~
`

// TestEnforceDeadlines: a gate opened after the enforcer started (by
// another Service on the same store, as another process would) is killed
// at its deadline, although the enforcer's retry interval is an hour — it
// learnt of the deadline from the event, it does not poll.
func TestEnforceDeadlines(t *testing.T) {
	mem := enginetest.New()
	s := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: mem}
	other := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: mem}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	applied := 0
	done := make(chan error, 1)
	go func() {
		done <- s.EnforceDeadlines(ctx, time.Hour, func(n int, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("sweep: %v", err)
			}
			applied += n
		})
	}()
	time.Sleep(20 * time.Millisecond) // the enforcer has swept once and sleeps
	planned, err := other.Plan(ctx, deadlineSpec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := other.StepDone(ctx, engine.StepReport{FlowID: engine.FlowIDOf(planned), StepID: "work", Result: map[string]any{"ok": true}})
	if err != nil {
		t.Fatal(err)
	}
	g, ok := out.(*engine.GateDispatch)
	if !ok {
		t.Fatalf("plan answered %T, want a gate wait", out)
	}
	opened := time.Now()
	for {
		st, err := s.Query().Get(ctx, g.FlowID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == state.StatusKilled {
			break
		}
		if time.Since(opened) > 10*time.Second {
			t.Fatalf("gate still %s 10 s after opening with a 1 s timeout", st.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if waited := time.Since(opened); waited < 900*time.Millisecond {
		t.Errorf("killed after %v, before its 1 s deadline", waited)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("EnforceDeadlines returned %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if applied != 1 {
		t.Errorf("reported %d applied deadlines, want 1", applied)
	}
}

// TestEnforceDeadlinesGateStillDue: a gate whose deadline passed but cannot
// be applied (its flow's spec no longer parses) is tried again after the
// retry interval, not at once: the enforcer must not spin on it.
func TestEnforceDeadlinesGateStillDue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem := enginetest.New()
	if err := enginetest.Populate(ctx, mem, enginetest.PopulateOptions{Flows: 4, GateEvery: 1, BrokenSpec: true}); err != nil {
		t.Fatal(err)
	}
	store := &viewCounter{Store: mem}
	later := func() time.Time { return time.Now().Add(30 * 24 * time.Hour) } // every deadline has passed
	s := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: store, Now: later}
	due, _, err := func() (d []state.FlowSummary, n *time.Time, err error) {
		err = mem.View(ctx, func(tx engine.Tx) error { d, n, err = tx.GatesDue(later()); return err })
		return
	}()
	if err != nil || len(due) == 0 {
		t.Fatalf("no gate due to start with (%v)", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.EnforceDeadlines(ctx, time.Hour, func(int, error) {}) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := store.views.Load(); n > 20 {
		t.Fatalf("%d read transactions in 300 ms with a gate that stays due: the enforcer spins", n)
	}
}
