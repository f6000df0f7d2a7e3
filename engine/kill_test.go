package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

func errType(err error) engine.ErrorType {
	if e := engine.AsError(err); e != nil {
		return e.Type
	}
	return ""
}

// TestStalledLibraryReviewDecision: a decision on a review of a Go
// program's flow whose program died (its lease expired: the flow shows
// stalled) is refused with flow_stalled and records nothing — before, it
// answered review_approved and the decision went nowhere. While the lease
// is live the same decision is recorded.
func TestStalledLibraryReviewDecision(t *testing.T) {
	ctx := context.Background()
	svc, _, clk := newService()
	id := startLibraryFlow(t, svc, clk.Now())
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Ship?", Schema: map[string]any{"type": "boolean"}}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute) // the program is gone: its lease expired
	before, err := svc.Query().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	d := review.Decision{StepID: "review-1", Outcome: review.Approve, ResolvedBy: review.Human, Channel: review.ChannelCLI,
		Reviewer: "ann", Value: []byte("true")}
	_, err = svc.GateResolve(ctx, id, d)
	if errType(err) != engine.ErrTypeFlowStalled {
		t.Fatalf("decision on a stalled flow: %v, want flow_stalled", err)
	}
	after, _ := svc.Query().Get(ctx, id)
	if after.Version != before.Version || after.Library.Review("review-1").Status != state.ReviewOpen {
		t.Fatalf("a refused decision changed the flow: version %d → %d, review %s", before.Version, after.Version, after.Library.Review("review-1").Status)
	}
	// The program renews its lease: decided as usual.
	l := state.Lease{ID: "lib-1", ExpiresAt: clk.Now().Add(30 * time.Second)}
	if err := engine.NewLibrary(svc).RenewLease(ctx, id, &l); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.GateResolve(ctx, id, d); err != nil {
		t.Fatalf("decision while the program lives: %v", err)
	}
}

// TestKill: a flow nothing drives any more is ended by hand, recorded with
// who, why and the channel; a live lease, a finished flow, a missing
// reason and (through a channel that is not a human's) a pending human
// gate refuse it.
func TestKill(t *testing.T) {
	ctx := context.Background()
	cli := engine.KillRequest{By: "ann", Reason: "the program was kill -9ed", Channel: review.ChannelCLI}

	t.Run("stalled library flow", func(t *testing.T) {
		svc, _, clk := newService()
		id := startLibraryFlow(t, svc, clk.Now())
		if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Ship?", Schema: map[string]any{"type": "boolean"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Kill(ctx, id, cli); errType(err) != engine.ErrTypeFlowOwned {
			t.Fatalf("kill under a live lease: %v, want flow_owned", err)
		}
		clk.Add(time.Minute)
		if _, err := svc.Kill(ctx, id, engine.KillRequest{By: "ann", Channel: review.ChannelCLI}); errType(err) != engine.ErrTypeRationaleRequired {
			t.Fatalf("kill without a reason: %v", err)
		}
		out, err := svc.Kill(ctx, id, cli)
		if err != nil {
			t.Fatal(err)
		}
		k, ok := out.(*engine.FlowKilled)
		if !ok || len(k.Flows) != 1 || !k.Ending.Stalled || k.Ending.By != "ann" {
			t.Fatalf("answer %#v", out)
		}
		st, _ := svc.Query().Get(ctx, id)
		if st.Status != state.StatusKilled || st.Gate != nil || st.Owner != nil || st.Ended == nil ||
			st.Ended.By != "ann" || st.Ended.Reason != cli.Reason || st.Ended.Channel != "cli" || !st.Ended.At.Equal(clk.Now()) {
			t.Fatalf("state after kill: status %s gate %v owner %v ended %+v", st.Status, st.Gate, st.Owner, st.Ended)
		}
		if r := st.Library.Review("review-1"); r.Status != state.ReviewWithdrawn {
			t.Fatalf("open review left %s", r.Status)
		}
		evs, _ := svc.Query().FlowEvents(ctx, id)
		last := evs[len(evs)-1]
		if d, _ := last.Data.(engine.FlowFinished); last.Type != engine.EventFlowFinished || d.Status != "killed" || d.Reviewer != "ann" ||
			d.Rationale != cli.Reason || d.Channel != "cli" {
			t.Fatalf("last event %+v", last)
		}
		if _, err := svc.Kill(ctx, id, cli); errType(err) != engine.ErrTypeFlowComplete {
			t.Fatalf("kill of a killed flow: %v", err)
		}
		if sums, _ := svc.Query().List(ctx, engine.ListFilter{}); sums[0].Stalled(clk.Now()) || sums[0].Status != state.StatusKilled {
			t.Fatalf("summary after kill %+v", sums[0])
		}
	})

	t.Run("a human gate below: a human's channel only", func(t *testing.T) {
		svc, _, _ := newService()
		parent, gated := humanGateBelow(t, svc, "outer")
		gc := engine.KillRequest{By: "stratum gc", Reason: "stalled for more than 1h", Channel: review.ChannelPolicy}
		if _, err := svc.Kill(ctx, parent, gc); errType(err) != engine.ErrTypeHumanGatePending {
			t.Fatalf("policy kill above a human gate: %v", err)
		}
		out, err := svc.Kill(ctx, parent, engine.KillRequest{By: "ann", Reason: "abandoned", Channel: review.ChannelTUI})
		if err != nil {
			t.Fatal(err)
		}
		if k := out.(*engine.FlowKilled); len(k.Flows) != 2 || k.Flows[0] != parent || k.Flows[1] != gated {
			t.Fatalf("killed %v, want the parent and its child", k.Flows)
		}
		for _, id := range []string{parent, gated} {
			st, _ := svc.Query().Get(ctx, id)
			if st.Status != state.StatusKilled || st.Ended == nil || st.Ended.Channel != "tui" {
				t.Fatalf("%s: %s %+v", id, st.Status, st.Ended)
			}
		}
		if _, err := svc.GateResolve(ctx, gated, review.Decision{StepID: "signoff", Outcome: review.Approve, ResolvedBy: review.Human,
			Channel: review.ChannelTUI}); !errors.Is(err, review.ErrAlreadyDecided) {
			t.Fatalf("deciding the gate of a killed flow: %v", err)
		}
	})
}
