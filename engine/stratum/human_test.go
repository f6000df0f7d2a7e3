package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// humanGateSpec is a flow that waits at an approver: human gate.
const humanGateSpec = `version: "0.2"
functions:
  signoff:
    mode: gate
    intent: "Sign off?"
    approver: human
flows:
  main:
    input: {}
    steps:
      - id: draft
        intent: "draft"
      - id: review
        function: signoff
        depends_on: [draft]
        on_approve: ~
        on_revise: draft
        on_kill: ~
`

// TestResolveRefusesHumanGates: Runtime.Resolve, the channel of any Go
// program, cannot decide an approver: human gate or review — a YAML gate
// waiting in the store, a library review in the store, a review kept in
// memory. Each is refused as MCP is (gate_requires_human, matching
// review.ErrNotAllowed) and nothing is recorded: the gate still waits,
// the review is still open, no gate record in the flow.
func TestResolveRefusesHumanGates(t *testing.T) {
	sink := newChanSink()
	rt, ctx, svc, _ := storeRuntime(t, sink)
	refused := func(err error) {
		t.Helper()
		if !errors.Is(err, review.ErrNotAllowed) || engine.AsError(err) == nil || engine.AsError(err).Type != engine.ErrTypeGateRequiresHuman {
			t.Fatalf("Resolve = %v, want gate_requires_human", err)
		}
	}

	// A spec flow at a human gate (the 20-line program of the issue).
	out, err := svc.Plan(ctx, humanGateSpec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	flowID := engine.FlowIDOf(out)
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: flowID, StepID: "draft", Result: map[string]any{"text": "v1"}}); err != nil {
		t.Fatal(err)
	}
	refused(rt.Resolve(ctx, Resolution{ReviewID: review.ID(flowID, "review", 0), Reviewer: "ann", Rationale: "looks good"}))
	st, err := svc.Query().Get(ctx, flowID)
	if err != nil || st.Status != state.StatusAwaitingGate || len(st.Records) != 1 {
		t.Fatalf("after the refused Resolve: %s, %d records, %v", st.Status, len(st.Records), err)
	}

	// A library review in the store.
	ch := await(ctx, Review[string]{Question: "Ship?", Options: []string{"yes", "no"}, Approver: "human"})
	p := sink.next(t)
	refused(rt.Resolve(ctx, Resolution{ReviewID: p.ReviewID, Value: json.RawMessage(`"yes"`), Reviewer: "ann", Rationale: "fine"}))
	fid, step, _ := splitReviewID(p.ReviewID)
	r, err := engine.NewLibrary(svc).Review(ctx, fid, step)
	if err != nil || r.Status != state.ReviewOpen || r.Decision != nil {
		t.Fatalf("stored review after the refused Resolve: %+v, %v", r, err)
	}
	if st, _ := svc.Query().Get(ctx, fid); len(st.Records) != 0 {
		t.Fatalf("the refused Resolve left %d records", len(st.Records))
	}
	// The person's channel decides it.
	if _, err := review.NewService[engine.Outcome](svc).Decide(ctx, review.Decision{FlowID: fid, StepID: step, Option: 1,
		Outcome: review.Approve, Reviewer: "ann", ResolvedBy: review.Human, Channel: review.ChannelTUI}); err != nil {
		t.Fatal(err)
	}
	if a := result(t, ch); a.err != nil || a.d.Value != "yes" || a.d.Channel != "tui" {
		t.Fatalf("AwaitHuman = %+v, %v", a.d, a.err)
	}

	// A review kept in memory (no store).
	msink := newChanSink()
	mem, err := New(Options{Sinks: []ReviewSink{msink}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(WithRuntime(context.Background(), mem))
	mch := await(mctx, Review[string]{Question: "Ship?", Approver: "human"})
	mp := msink.next(t)
	refused(mem.Resolve(mctx, Resolution{ReviewID: mp.ReviewID, Value: json.RawMessage(`"yes"`), Reviewer: "ann"}))
	select {
	case a := <-mch:
		t.Fatalf("the refused Resolve decided the review: %+v, %v", a.d, a.err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if a := result(t, mch); !errors.Is(a.err, context.Canceled) {
		t.Fatalf("AwaitHuman after cancel: %v", a.err)
	}
}

// TestHumanReviewWithOnTimeoutRefused: Approver "human" with OnTimeout is
// refused as the review opens (a deadline would decide what only a person
// may: policy-human), with or without a store, before any sink is told;
// and OnTimeout must be one of Options, or fit T.
func TestHumanReviewWithOnTimeoutRefused(t *testing.T) {
	sink := newChanSink()
	_, sctx, _, _ := storeRuntime(t, sink)
	mem, err := New(Options{Sinks: []ReviewSink{sink}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	mctx := WithRuntime(context.Background(), mem)
	yes, zzz := "yes", "zzz"
	type pick struct {
		N int `json:"n" stratum:"min=1,max=3"`
	}
	nine := pick{N: 9}
	for name, ctx := range map[string]context.Context{"store": sctx, "memory": mctx} {
		for _, c := range []struct {
			await func() error
			want  string
		}{
			{func() error {
				_, err := AwaitHuman(ctx, Review[string]{Question: "Ship?", Approver: "human", Timeout: time.Minute, OnTimeout: &yes})
				return err
			}, "policy-human"},
			{func() error {
				_, err := AwaitHuman(ctx, Review[string]{Question: "Ship?", Options: []string{"yes", "no"}, Timeout: time.Minute, OnTimeout: &zzz})
				return err
			}, `value "zzz" is not one of the options`},
			{func() error {
				_, err := AwaitHuman(ctx, Review[pick]{Question: "How many?", Timeout: time.Minute, OnTimeout: &nine})
				return err
			}, "does not fit the type"},
		} {
			err := c.await()
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrStratum) {
				t.Errorf("%s: AwaitHuman = %v, want %q", name, err, c.want)
			}
		}
	}
	select {
	case p := <-sink.ch:
		t.Errorf("a sink was told about a refused review: %+v", p)
	default:
	}
}

// TestResolveRefusesSpecGates: the gate of a spec's flow in the store
// (approver any) is not decided by Runtime.Resolve — a program links no
// spec parser — and the refusal says where it is decided; nothing is
// recorded and the gate still waits.
func TestResolveRefusesSpecGates(t *testing.T) {
	rt, ctx, svc, _ := storeRuntime(t, newChanSink())
	spec := strings.Replace(humanGateSpec, "    approver: human\n", "", 1)
	out, err := svc.Plan(ctx, spec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	flowID := engine.FlowIDOf(out)
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: flowID, StepID: "draft", Result: map[string]any{"text": "v1"}}); err != nil {
		t.Fatal(err)
	}
	err = rt.Resolve(ctx, Resolution{ReviewID: review.ID(flowID, "review", 0), Reviewer: "ann"})
	if err == nil || errors.Is(err, review.ErrNotAllowed) || !strings.Contains(err.Error(), "runs a spec; decide its gate with `stratum gate`") {
		t.Fatalf("Resolve of a spec's gate = %v", err)
	}
	st, err := svc.Query().Get(ctx, flowID)
	if err != nil || st.Status != state.StatusAwaitingGate || len(st.Records) != 1 {
		t.Fatalf("after the refused Resolve: %s, %d records, %v", st.Status, len(st.Records), err)
	}
}
