package run

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// readCounter is a Store that counts the reads of flow states (Tx.Get)
// from its armWatch-th Watch on (the runner's wait at a gate subscribes
// first, then reads the flow once before it waits).
type readCounter struct {
	engine.Store
	armWatch int64
	watches  atomic.Int64
	armed    atomic.Bool
	reads    atomic.Int64
}

func (s *readCounter) Watch(ctx context.Context, after uint64) (<-chan []engine.Event, error) {
	if s.watches.Add(1) == s.armWatch {
		s.armed.Store(true)
	}
	return s.Store.Watch(ctx, after)
}

func (s *readCounter) View(ctx context.Context, fn func(engine.Tx) error) error {
	return s.Store.View(ctx, func(tx engine.Tx) error { return fn(countedTx{tx, s}) })
}

func (s *readCounter) Update(ctx context.Context, fn func(engine.Tx) error) error {
	return s.Store.Update(ctx, func(tx engine.Tx) error { return fn(countedTx{tx, s}) })
}

type countedTx struct {
	engine.Tx
	s *readCounter
}

func (t countedTx) Get(id string) (*state.FlowState, error) {
	if t.s.armed.Load() {
		t.s.reads.Add(1)
	}
	return t.Tx.Get(id)
}

// TestGateWaitActsOnTheEvent: a runner waiting at a gate (--on-gate wait)
// learns another process's decision from its gate_resolved event — who,
// how, why — and reads the flow only for its next dispatch (Resume), not
// to rebuild the decision; a revise refused by max_rounds leaves it
// waiting without a read.
func TestGateWaitActsOnTheEvent(t *testing.T) {
	e := newEnv(t)
	counter := &readCounter{Store: e.store, armWatch: 2} // the wait in round 1
	e.svc = &engine.Service{ParseSpec: exprlang.ParseSpec, Store: counter}
	// The deciding process: its own Service on the same store (no
	// in-process broker shared with the runner's).
	other := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: e.store}
	ctx := context.Background()

	var mu sync.Mutex
	var waitReads, afterDecision int64 = -1, -1
	// pending is the gate once the runner waits at it in round.
	pending := func(round int) *review.PendingReview {
		for i := 0; i < 2000; i++ {
			time.Sleep(5 * time.Millisecond)
			if counter.watches.Load() < int64(round+1) {
				continue
			}
			if ps, _ := other.Query().PendingReviews(ctx); len(ps) == 1 && ps[0].Round == round {
				return &ps[0]
			}
		}
		t.Errorf("the runner never waited at the gate in round %d", round)
		return nil
	}
	decide := func(p *review.PendingReview, o review.Outcome, why, who string) error {
		_, err := other.GateResolve(ctx, p.FlowID, review.Decision{StepID: "review", Outcome: o,
			Rationale: why, Reviewer: who, ResolvedBy: review.Human, Channel: review.ChannelCLI})
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := pending(0)
		if p == nil {
			return
		}
		if err := decide(p, review.Revise, "needs work", "bob"); err != nil {
			t.Errorf("revise: %v", err)
			return
		}
		if p = pending(1); p == nil {
			return
		}
		// A revise max_rounds refuses: recorded, the gate waits on.
		if err := decide(p, review.Revise, "again", "bob"); engine.AsError(err) == nil || engine.AsError(err).Type != engine.ErrTypeMaxRoundsExceeded {
			t.Errorf("revise at max_rounds: %v", err)
			return
		}
		time.Sleep(100 * time.Millisecond) // time to (wrongly) read the flow
		mu.Lock()
		waitReads = counter.reads.Load()
		mu.Unlock()
		counter.reads.Store(0)
		if err := decide(p, review.Approve, "fine now", "ann"); err != nil {
			t.Errorf("approve: %v", err)
		}
	}()
	// max_rounds 1: the second revise is refused; on_approve ends the flow,
	// so the reads after the approval are the gate's and the release's.
	src := strings.Replace(gateSpec(""), "max_rounds: 3", "max_rounds: 1", 1)
	sp := e.spec(strings.Replace(src, "on_approve: done", "on_approve: ~", 1))
	o := e.start(sp, "main", nil, func(o *Options) { o.Gates.OnGate = review.OnGateWait })
	<-done
	afterDecision = counter.reads.Load()
	wantStatus(t, o, EndComplete, 0)
	for _, want := range []string{"revised by bob (cli): needs work", "approved by ann (cli): fine now"} {
		if !strings.Contains(e.log.String(), want) {
			t.Fatalf("the run does not tell who decided, how and why (%q):\n%s", want, e.log)
		}
	}
	if e.count("work.count") != 2 {
		t.Fatalf("work ran %d times, want 2 (the revise sent the flow back)", e.count("work.count"))
	}
	mu.Lock()
	defer mu.Unlock()
	// The one read before the wait; none for the refused revise.
	if waitReads != 1 {
		t.Fatalf("the runner read the flow %d times in its wait with a revise refused by max_rounds, want 1 (before the wait)", waitReads)
	}
	// After the approval: Resume (the flow's next answer: its completion),
	// then the lease's release at the end of the run; no read to rebuild
	// the decision.
	if afterDecision != 2 {
		t.Fatalf("the runner read the flow %d times after the decision, want 2 (resume, release)", afterDecision)
	}
}
