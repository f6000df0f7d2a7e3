package run

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/review"
)

// TestBackgroundOffersGates: a background run offers its gate to the sink
// and waits for a decision recorded in the store; the decision made by the
// sink's reader lets the run finish.
func TestBackgroundOffersGates(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(gateSpec(""))
	q := review.NewQueue(0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offered := make(chan review.PendingReview, 1)
	go func() {
		r := <-q.Reviews()
		offered <- r
		round := r.Round
		_, _ = e.svc.GateResolve(ctx, r.FlowID, review.Decision{StepID: r.StepID, Round: &round, Outcome: review.Approve,
			Rationale: "fine", ResolvedBy: review.Human, Channel: review.ChannelTUI})
	}()
	o, err := Background{Service: e.svc, Config: config.Config{}}.RunFlow(ctx, sp, "main", nil, q)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, o, EndComplete, 0)
	r := <-offered
	if r.FlowID != o.FlowID || r.StepID != "review" {
		t.Fatalf("offered %+v for flow %s", r, o.FlowID)
	}
	if g := gateRecords(e.state(o.FlowID)); len(g) != 1 || g[0].Channel != "tui" || g[0].Outcome != "approve" {
		t.Fatalf("gate records %+v", g)
	}
}

type failingSink struct{ calls chan review.PendingReview }

func (s failingSink) Emit(_ context.Context, r review.PendingReview) error {
	s.calls <- r
	return errors.New("console gone")
}

// TestBackgroundSinkFailure: a sink that refuses the offer does not stop
// the run; the gate still waits in the store for a decision from anywhere.
func TestBackgroundSinkFailure(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(gateSpec(""))
	s := failingSink{calls: make(chan review.PendingReview, 4)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		for i := 0; i < 3000 && ctx.Err() == nil; i++ {
			time.Sleep(10 * time.Millisecond)
			ps, _ := e.svc.Query().PendingReviews(ctx)
			if len(ps) == 1 {
				_, _ = e.svc.GateResolve(ctx, ps[0].FlowID, review.Decision{StepID: "review", Outcome: review.Kill,
					Rationale: "no", ResolvedBy: review.Human, Channel: review.ChannelCLI})
				return
			}
		}
	}()
	o, err := Background{Service: e.svc}.RunFlow(ctx, sp, "main", nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.calls) != 1 {
		t.Fatalf("the sink was offered %d gates, want 1", len(s.calls))
	}
	if g := gateRecords(e.state(o.FlowID)); len(g) != 1 || g[0].Outcome != "kill" || g[0].Channel != "cli" {
		t.Fatalf("gate records %+v (run ended %s: %s)", g, o.Status, o.Message)
	}
}
