package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

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
	s := &engine.Service{Store: mem}
	other := &engine.Service{Store: mem}
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
	out, err := other.StepDone(ctx, engine.FlowIDOf(planned), "work", map[string]any{"ok": true}, engine.ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, ok := out.(*engine.GateDispatch)
	if !ok {
		t.Fatalf("plan answered %T, want a gate wait", out)
	}
	opened := time.Now()
	for {
		st, err := s.Get(ctx, g.FlowID)
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
