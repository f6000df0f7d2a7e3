package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/store/shared"
)

var record = flag.Bool("record", false, "re-record recording.replay against a scripted local server")

var script = []demo.Answer{{
	Match: "Resolve the customer's ticket",
	Calls: [][]demo.ToolCall{
		{{Name: "lookup_order", Args: `{"order_id":"A-1001"}`}},
		{{Name: "issue_refund", Args: `{"order_id":"A-1001","amount_usd":129,"reason":"defective: crackling left ear"}`}},
	},
	Answers: []string{`{"action":"refunded","message":"Sorry about the crackling, Ada. I refunded the $129.00 for your headphones (refund R-A-1001); it reaches your card in 3–5 days."}`},
}}

const want = `tool lookup_order: A-1001, noise-cancelling headphones, $129.00, delivered 3 days ago
review: Refund this order? issue_refund {"amount_usd":129,"order_id":"A-1001","reason":"defective: crackling left ear"}
tool issue_refund: $129.00 on A-1001 (defective: crackling left ear)
reply (refunded): Sorry about the crackling, Ada. I refunded the $129.00 for your headphones (refund R-A-1001); it reaches your card in 3–5 days.
`

// TestOffline runs the example from its recording: the model looks the
// order up, asks to refund it, the auto-reviewer approves, the tool runs
// and the answer is checked; the Call's trace has both tool calls.
func TestOffline(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	if *record {
		auto := &autoReviewer{w: io.Discard}
		rt, done, err := demo.RecorderWith("recording.replay", script, stratum.Options{Sinks: []stratum.ReviewSink{auto}})
		if err != nil {
			t.Fatal(err)
		}
		auto.rt = rt
		err = run(stratum.WithRuntime(context.Background(), rt), io.Discard, review.AnyApprover)
		done()
		if err != nil {
			t.Fatal(err)
		}
		t.Skip("recorded; run the test again to check the recording")
	}
	var out bytes.Buffer
	auto := &autoReviewer{w: &out}
	rt, done, err := demo.RuntimeWith(recording, false, stratum.Options{Sinks: []stratum.ReviewSink{auto}})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	auto.rt = rt
	if err := run(stratum.WithRuntime(context.Background(), rt), &out, review.AnyApprover); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	tr := rt.Trace()
	if len(tr) != 1 || tr[0].Attempts != 1 || len(tr[0].ToolCalls) != 2 || tr[0].ToolCalls[0].Name != "lookup_order" ||
		tr[0].ToolCalls[1].Name != "issue_refund" || tr[0].ToolCalls[1].ReviewID == "" || tr[0].ToolCalls[1].Error != "" {
		t.Fatalf("trace: %+v", tr)
	}
}

// TestStoredRefundDecidedByAPerson is --decide 0 --store: the refund is a
// review only a person may decide, waiting in the shared store; decided as
// the TUI decides it (channel tui, a human), the tool runs, and the
// flow's audit shows the call with its tool calls.
func TestStoredRefundDecidedByAPerson(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	st, err := shared.OpenDefault(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pending := make(chan stratum.PendingReview, 1)
	sink := sinkFunc(func(_ context.Context, p stratum.PendingReview) error { pending <- p; return nil })
	rt, done, err := demo.RuntimeWith(recording, false, stratum.Options{Store: st, Sinks: []stratum.ReviewSink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	var out bytes.Buffer
	ended := make(chan error, 1)
	go func() { ended <- run(stratum.WithRuntime(context.Background(), rt), &out, review.HumanApprover) }()
	var p stratum.PendingReview
	select {
	case p = <-pending:
	case err := <-ended:
		t.Fatalf("the run ended before the review: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no review")
	}
	parts := strings.Split(p.ReviewID, "/")
	svc := &engine.Service{Store: st}
	ctx := context.Background()
	if _, err := review.NewService[engine.Outcome](svc).Decide(ctx, review.Decision{FlowID: parts[0], StepID: parts[1], Option: 1,
		Outcome: review.Approve, Reviewer: "ann", ResolvedBy: review.Human, Channel: review.ChannelTUI, Rationale: "defective"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end")
	}
	if !strings.Contains(out.String(), "reply (refunded)") {
		t.Fatalf("output:\n%s", out.String())
	}
	audit, err := svc.Audit(ctx, parts[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(audit.Calls) != 1 {
		t.Fatalf("audit calls: %d", len(audit.Calls))
	}
	var call state.TraceRecord
	if err := json.Unmarshal(audit.Calls[0], &call); err != nil {
		t.Fatal(err)
	}
	if len(call.ToolCalls) != 2 || call.ToolCalls[1].Name != "issue_refund" || call.ToolCalls[1].ReviewID != p.ReviewID ||
		!strings.Contains(string(call.ToolCalls[1].Result), "R-A-1001") {
		t.Fatalf("the stored call: %s", audit.Calls[0])
	}
}

type sinkFunc func(context.Context, stratum.PendingReview) error

func (f sinkFunc) Emit(ctx context.Context, p stratum.PendingReview) error { return f(ctx, p) }
