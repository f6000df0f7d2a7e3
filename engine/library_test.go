package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/clijson"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

func startLibraryFlow(t *testing.T, svc *engine.Service, now time.Time) string {
	t.Helper()
	l := state.Lease{ID: "lib-1", ExpiresAt: now.Add(30 * time.Second)}
	id, err := engine.NewLibrary(svc).StartFlow(context.Background(), engine.LibraryFlowOptions{Name: "triage", Inputs: map[string]any{"ticket": 7}, Owner: &l})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func raws(vs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(vs))
	for i, v := range vs {
		out[i] = json.RawMessage(v)
	}
	return out
}

// A Go program's flow: its calls are trace entries, its reviews gates
// (one row each), decided with a value that must fit.
func TestLibraryFlowReviews(t *testing.T) {
	ctx := context.Background()
	svc, _, clk := newService()
	id := startLibraryFlow(t, svc, clk.Now())
	cost := 0.002
	if err := engine.NewLibrary(svc).RecordCall(ctx, id, engine.LibraryCall{Function: "classify", Attempts: 2, DurationMS: 40, Tokens: 120, CostUSD: &cost,
		Trace: &state.TraceRecord{Function: "classify", Model: "openai/gpt-4o-mini", Attempts: 2}}); err != nil {
		t.Fatal(err)
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"ship": map[string]any{"type": "boolean"}},
		"required": []any{"ship"}, "additionalProperties": false}
	r1, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Which plan?", Options: raws(`"a"`, `"b"`, `"c"`), Schema: map[string]any{"type": "string"}})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Ship it?", Schema: schema, Approver: "human"})
	if err != nil {
		t.Fatal(err)
	}
	if r1.ID != "review-1" || r2.ID != "review-2" {
		t.Fatalf("review ids %s %s", r1.ID, r2.ID)
	}
	// Refused as they open, nothing recorded: a human review that a
	// deadline would decide (policy-human), a value on timeout that is not
	// an option or not of the type, an unknown approver.
	for _, c := range []struct {
		req  engine.ReviewRequest
		want string
	}{
		{engine.ReviewRequest{Question: "Ship?", Schema: schema, Approver: "human", Timeout: time.Minute, OnTimeout: json.RawMessage(`{"ship": true}`)}, "policy-human"},
		{engine.ReviewRequest{Question: "Plan?", Options: raws(`"a"`, `"b"`), Timeout: time.Minute, OnTimeout: json.RawMessage(`"zzz"`)}, `value "zzz" is not one of the options`},
		{engine.ReviewRequest{Question: "Ship?", Schema: schema, Timeout: time.Minute, OnTimeout: json.RawMessage(`{"ship": "yes"}`)}, "does not fit the type"},
		{engine.ReviewRequest{Question: "Ship?", Approver: "robot"}, "approver must be 'any' or 'human'"},
	} {
		if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenReview(%+v) = %v, want %q", c.req, err, c.want)
		}
	}

	gates, err := svc.Query().PendingGateSteps(ctx)
	if err != nil || len(gates) != 2 || gates[0].Summary.Gate.StepID != "review-1" || gates[1].Review.Question != "Ship it?" {
		t.Fatalf("PendingGateSteps = %+v, %v", gates, err)
	}
	entries := clijson.Gates(gates)
	if entries[0].Question != "Which plan?" || len(entries[0].Options) != 3 || entries[1].Approver != "human" {
		t.Errorf("clijson.Gates = %+v", entries)
	}
	prs, err := svc.Query().PendingReviews(ctx)
	if err != nil || len(prs) != 2 || !prs[0].Library || len(prs[0].Options) != 3 || prs[1].Schema == nil {
		t.Fatalf("PendingReviews = %+v, %v", prs, err)
	}
	sums, _ := svc.Query().List(ctx, engine.ListFilter{})
	if sums[0].Driver != state.DriverLibrary || sums[0].Status != state.StatusAwaitingGate || sums[0].Stalled(clk.Now()) {
		t.Errorf("summary %+v", sums[0])
	}
	if !sums[0].Stalled(clk.Now().Add(time.Minute)) {
		t.Error("a library flow whose lease expired is not stalled")
	}

	decide := func(step string, o review.Outcome, ch review.Channel, option int, value string) error {
		d := review.Decision{StepID: step, Outcome: o, Option: option, Reviewer: "ann", ResolvedBy: review.Human, Channel: ch, Rationale: "why"}
		if value != "" {
			d.Value = json.RawMessage(value)
		}
		_, err := svc.GateResolve(ctx, id, d)
		return err
	}
	for _, c := range []struct {
		step   string
		o      review.Outcome
		ch     review.Channel
		option int
		value  string
		want   string
	}{
		{"review-1", review.Approve, review.ChannelCLI, 4, "", "option 4 is out of range: review 'review-1' has options 1–3"},
		{"review-1", review.Approve, review.ChannelCLI, 0, `"d"`, `value "d" is not one of the options`},
		{"review-1", review.Approve, review.ChannelCLI, 0, "", "needs a value: pick an option (1–3)"},
		{"review-1", review.Revise, review.ChannelCLI, 0, "", "cannot be revised"},
		{"review-2", review.Approve, review.ChannelCLI, 0, `{"ship": "yes"}`, "does not fit the type of review 'review-2'"},
		{"review-2", review.Approve, review.ChannelMCP, 0, `{"ship": true}`, "requires a human decision"},
		{"review-2", review.Approve, review.ChannelProgram, 0, `{"ship": true}`, "cannot be resolved by a program"},
		{"review-2", review.Kill, review.ChannelProgram, 0, "", "cannot be resolved by a program"},
		{"review-2", review.Approve, "", 0, `{"ship": true}`, "cannot be resolved through an unnamed channel"},
		{"review-9", review.Approve, review.ChannelCLI, 1, "", "no review 'review-9'"},
	} {
		err := decide(c.step, c.o, c.ch, c.option, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s %d %s: %v, want %q", c.step, c.o, c.option, c.value, err, c.want)
		}
	}
	if prs, _ := svc.Query().PendingReviews(ctx); len(prs) != 2 {
		t.Fatalf("refused decisions closed a review: %d open", len(prs))
	}
	if err := decide("review-1", review.Approve, review.ChannelMCP, 0, `"b"`); err != nil {
		t.Fatal(err)
	}
	if err := decide("review-1", review.Approve, review.ChannelCLI, 1, ""); !errors.Is(err, review.ErrAlreadyDecided) {
		t.Errorf("second decision: %v, want ErrAlreadyDecided", err)
	}
	got, _ := engine.NewLibrary(svc).Review(ctx, id, "review-1")
	if got.Status != state.ReviewApproved || string(got.Decision.Value) != `"b"` || got.Decision.Option != 2 || got.Decision.Channel != "mcp" {
		t.Errorf("review-1 = %+v %+v", got, got.Decision)
	}
	if err := decide("review-2", review.Kill, review.ChannelTUI, 0, ""); err != nil {
		t.Fatal(err)
	}
	st, _ := svc.Query().Get(ctx, id)
	if st.Status != state.StatusRunning || st.Gate != nil || st.Library.Reviews[1].Status != state.ReviewRejected {
		t.Errorf("after both decisions: %s %+v", st.Status, st.Gate)
	}
	a, err := svc.Audit(ctx, id)
	if err != nil || len(a.Trace) != 3 || a.Trace[0].FunctionName != "classify" || a.Trace[0].Attempts != 2 || a.Trace[2].Outcome != "kill" {
		t.Errorf("audit = %+v, %v", a, err)
	}
	if _, err := svc.Resume(ctx, id); engine.AsError(err) == nil || engine.AsError(err).Type != engine.ErrTypeLibraryFlow {
		t.Errorf("resume of a library flow: %v", err)
	}
	if err := engine.NewLibrary(svc).FinishFlow(ctx, id, map[string]any{"ok": true}, nil); err != nil {
		t.Fatal(err)
	}
	st, _ = svc.Query().Get(ctx, id)
	if st.Status != state.StatusComplete || st.Owner != nil {
		t.Errorf("finished: %s owner %v", st.Status, st.Owner)
	}
}

// A review's deadline is persisted: any process's sweep applies it, with
// the OnTimeout value or without one.
func TestLibraryReviewTimeouts(t *testing.T) {
	ctx := context.Background()
	svc, _, clk := newService()
	id := startLibraryFlow(t, svc, clk.Now())
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "q1", Timeout: time.Minute, OnTimeout: json.RawMessage(`"no"`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "q2", Timeout: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	opened := clk.Now()
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "q0", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// The flow's gate (what deadline sweeps sleep on) is the first deadline.
	st, _ := svc.Query().Get(ctx, id)
	if st.Gate == nil || st.Gate.StepID != "review-3" || st.Gate.Deadline == nil || st.Gate.Deadline.After(opened.Add(15*time.Second)) {
		t.Fatalf("gate %+v", st.Gate)
	}
	if _, err := engine.NewLibrary(svc).WithdrawReview(ctx, id, "review-3", "not needed"); err != nil {
		t.Fatal(err)
	}
	st, _ = svc.Query().Get(ctx, id)
	if st.Gate == nil || st.Gate.StepID != "review-1" || st.Gate.Deadline == nil || st.Gate.Deadline.After(opened.Add(time.Minute)) {
		t.Fatalf("gate %+v", st.Gate)
	}
	clk.Add(90 * time.Second)
	if n, err := svc.SweepTimeouts(ctx); err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v", n, err)
	}
	r1, _ := engine.NewLibrary(svc).Review(ctx, id, "review-1")
	if r1.Status != state.ReviewTimedOut || string(r1.Decision.Value) != `"no"` || r1.Decision.Reviewer != "auto" || r1.Decision.Rationale != "timeout" {
		t.Errorf("review-1 %+v %+v", r1, r1.Decision)
	}
	clk.Add(time.Minute)
	if _, err := svc.CheckTimeouts(ctx, id); err != nil {
		t.Fatal(err)
	}
	r2, _ := engine.NewLibrary(svc).Review(ctx, id, "review-2")
	if r2.Status != state.ReviewTimedOut || r2.Decision.Value != nil {
		t.Errorf("review-2 %+v %+v", r2, r2.Decision)
	}
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "q3"}); err != nil {
		t.Fatal(err)
	}
	w, err := engine.NewLibrary(svc).WithdrawReview(ctx, id, "review-4", "context canceled")
	if err != nil || w.Status != state.ReviewWithdrawn {
		t.Errorf("withdraw: %+v, %v", w, err)
	}
	if prs, _ := svc.Query().PendingReviews(ctx); len(prs) != 0 {
		t.Errorf("%d reviews still open", len(prs))
	}
}
