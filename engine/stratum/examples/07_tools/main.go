// Command 07_tools is a typed LLM function with tools: a support agent
// answers a refund request. The model looks the order up (lookup_order, a
// plain tool) and refunds it (issue_refund, a tool each of whose calls is
// a review first: stratum.RequireApproval). The answer is a typed Reply,
// checked like any Call's.
//
// Who approves the refund:
//
//	go run ./engine/stratum/examples/07_tools               # offline: the recording, and an
//	                                                        # auto-reviewer that approves through
//	                                                        # Runtime.Resolve
//	go run ./engine/stratum/examples/07_tools --decide 0 --store
//	    # a person: the refund waits in the shared store (the one `stratum` commands open);
//	    # approve it in `stratum tui` (Gates pane: the tool, its arguments and the
//	    # conversation so far; a, then 1) or with `stratum gate approve FLOW review-1 --option 1`.
//	    # The call, with its tool calls, is then in the Trace pane of the flow.
//	go run ./engine/stratum/examples/07_tools --live        # a real provider
//
// The recording holds the approved conversation; rejecting the refund
// (x in the TUI, `stratum gate reject`) sends the model the reviewer's
// rationale as the tool's error, a conversation only --live can answer.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/store/shared"
)

//go:embed recording.replay
var recording []byte

// Ticket is the customer's request.
type Ticket struct {
	Customer string `json:"customer"`
	OrderID  string `json:"order_id"`
	Message  string `json:"message"`
}

// Reply is the agent's answer.
type Reply struct {
	Action  string `json:"action" stratum:"enum=refunded|declined|escalated"`
	Message string `json:"message" stratum:"minlen=1,maxlen=400"`
}

// OrderRef names an order (lookup_order's arguments).
type OrderRef struct {
	OrderID string `json:"order_id" stratum:"minlen=1"`
}

// Order is what lookup_order answers.
type Order struct {
	OrderID          string  `json:"order_id"`
	Item             string  `json:"item"`
	AmountUSD        float64 `json:"amount_usd"`
	DeliveredDaysAgo int     `json:"delivered_days_ago"`
}

// Refund is issue_refund's arguments.
type Refund struct {
	OrderID   string  `json:"order_id" stratum:"minlen=1"`
	AmountUSD float64 `json:"amount_usd" stratum:"min=0.01"`
	Reason    string  `json:"reason"`
}

// Receipt is what issue_refund answers.
type Receipt struct {
	RefundID  string  `json:"refund_id"`
	AmountUSD float64 `json:"amount_usd"`
}

var orders = map[string]Order{
	"A-1001": {OrderID: "A-1001", Item: "noise-cancelling headphones", AmountUSD: 129.00, DeliveredDaysAgo: 3},
}

// agent is the support agent: its tools report what they do on w;
// approver says who may approve a refund ("human": only a person).
func agent(w io.Writer, approver review.Approver) *stratum.Fn[Ticket, Reply] {
	lookup := stratum.NewTool("lookup_order", "Look an order up by its id",
		func(ctx context.Context, r OrderRef) (Order, error) {
			o, ok := orders[r.OrderID]
			if !ok {
				return Order{}, fmt.Errorf("no order %s", r.OrderID)
			}
			fmt.Fprintf(w, "tool lookup_order: %s, %s, $%.2f, delivered %d days ago\n", o.OrderID, o.Item, o.AmountUSD, o.DeliveredDaysAgo)
			return o, nil
		})
	refund := stratum.NewTool("issue_refund", "Refund an order, in full or in part",
		func(ctx context.Context, r Refund) (Receipt, error) {
			fmt.Fprintf(w, "tool issue_refund: $%.2f on %s (%s)\n", r.AmountUSD, r.OrderID, r.Reason)
			return Receipt{RefundID: "R-" + r.OrderID, AmountUSD: r.AmountUSD}, nil
		},
		stratum.RequireApproval("Refund this order?", approver))
	return stratum.MustInfer("resolve_ticket", stratum.Spec[Ticket, Reply]{
		Intent:  "Resolve the customer's ticket. Look the order up first; refund it when the customer asks within 30 days of delivery",
		Context: []string{"Refunds over $500 are escalated, never refunded by you."},
		Tools:   []stratum.Tool{lookup, refund},
		Budget:  stratum.Budget{USD: 0.01},
	})
}

var ticket = Ticket{Customer: "Ada", OrderID: "A-1001", Message: "The headphones crackle in the left ear. Can I get my money back?"}

func run(ctx context.Context, w io.Writer, approver review.Approver) error {
	fn := agent(w, approver)
	flow := stratum.NewFlow("support_ticket", stratum.Budget{}, func(ctx context.Context, t Ticket) (Reply, error) {
		return fn.Call(ctx, t)
	})
	r, err := flow.Run(ctx, ticket)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "reply (%s): %s\n", r.Action, r.Message)
	return nil
}

// autoReviewer approves every refund it is told about through
// Runtime.Resolve (a program's own web form or chat bot would do the
// same); Resolve refuses a review with Approver "human".
type autoReviewer struct {
	rt *stratum.Runtime
	w  io.Writer
}

// Emit implements stratum.ReviewSink: it shows the tool call and approves
// it (the review's one option, "run issue_refund").
func (a *autoReviewer) Emit(ctx context.Context, p stratum.PendingReview) error {
	args, _ := json.Marshal(p.Artifacts["arguments"])
	fmt.Fprintf(a.w, "review: %s %s %s\n", p.Question, p.Artifacts["tool"], args)
	go a.rt.Resolve(context.WithoutCancel(ctx), stratum.Resolution{ReviewID: p.ReviewID, Value: p.Options[0], Reviewer: "auto-reviewer", Rationale: "within policy"})
	return nil
}

func main() {
	live := flag.Bool("live", false, "call a real provider (STRATUM_MODEL, <PROVIDER>_API_KEY) instead of the recording")
	decide := flag.Int("decide", 1, "1: an auto-reviewer approves the refund (Runtime.Resolve); 0: a person decides (the console, or the store with --store)")
	useStore := flag.Bool("store", false, "persist the flow, its call and the refund's review in the shared store (stratum tui, stratum gate)")
	flag.Parse()
	var opts stratum.Options
	auto := &autoReviewer{w: os.Stdout}
	approver := review.HumanApprover
	if *decide != 0 {
		opts.Sinks = []stratum.ReviewSink{auto}
		approver = review.AnyApprover
	}
	if *useStore {
		st, err := shared.OpenDefault(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer st.Close()
		opts.Store = st
		fmt.Fprintln(os.Stderr, "the refund waits in the shared store: approve it in `stratum tui` or with `stratum gate`")
	}
	rt, closeRT, err := demo.RuntimeWith(recording, *live, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer closeRT()
	auto.rt = rt
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(stratum.WithRuntime(ctx, rt), os.Stdout, approver); err != nil {
		fmt.Fprintln(os.Stderr, err)
		closeRT()
		os.Exit(1)
	}
}
