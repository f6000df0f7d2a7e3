// Command 01_sentiment is seed Example 01: typed LLM functions, a flow
// with a budget and a plain Compute function, end to end. It classifies
// support tickets, escalates the angry ones and drafts answers to the
// others.
//
//	go run ./engine/stratum/examples/01_sentiment          # from the recording
//	go run ./engine/stratum/examples/01_sentiment --live   # STRATUM_MODEL, OPENAI_API_KEY, …
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

//go:embed recording.replay
var recording []byte

// Sentiment is the output contract of classify.
type Sentiment struct {
	Label      string  `json:"label" stratum:"enum=positive|negative|neutral"`
	Confidence float64 `json:"confidence" stratum:"min=0,max=1"`
	Reasoning  string  `json:"reasoning"`
}

// Ticket is a support ticket.
type Ticket struct {
	Text     string `json:"text"`
	Category string `json:"category"`
}

// Resolution is what a ticket gets.
type Resolution struct {
	Response string `json:"response"`
	Escalate bool   `json:"escalate"`
}

var classify = stratum.MustInfer("classify_sentiment", stratum.Spec[Ticket, Sentiment]{
	Intent:  "Classify the emotional tone of customer feedback",
	Context: []string{"Treat sarcasm as negative. When genuinely ambiguous, use neutral."},
	Ensure: []stratum.Check[Sentiment]{
		stratum.Ensure("confidence must be above 0.7", func(s Sentiment) bool { return s.Confidence > 0.7 }),
	},
	Budget: stratum.Budget{Time: 20 * time.Second, USD: 0.001},
})

var needsEscalation = stratum.Compute("needs_escalation", func(_ context.Context, s Sentiment) (bool, error) {
	return s.Label == "negative" && s.Confidence > 0.9, nil
})

var draft = stratum.MustInfer("draft_response", stratum.Spec[Ticket, Resolution]{
	Intent: "Draft a helpful response to a support ticket",
	Ensure: []stratum.Check[Resolution]{
		stratum.Ensure("the response must not be empty", func(r Resolution) bool { return r.Response != "" }),
	},
	Budget: stratum.Budget{Time: 20 * time.Second, USD: 0.002},
})

var processTicket = stratum.NewFlow("process_ticket", stratum.Budget{Time: time.Minute, USD: 0.01},
	func(ctx context.Context, t Ticket) (Resolution, error) {
		s, err := classify.Call(ctx, t)
		if err != nil {
			return Resolution{}, err
		}
		if escalate, _ := needsEscalation(ctx, s); escalate {
			return Resolution{Response: "Escalated to senior support.", Escalate: true}, nil
		}
		return draft.Call(ctx, t)
	})

var tickets = []Ticket{
	{Text: "Your app deleted three months of my notes. I am furious.", Category: "bug"},
	{Text: "How do I change the email address on my account?", Category: "account"},
}

func run(ctx context.Context, w io.Writer) error {
	for _, t := range tickets {
		r, err := processTicket.Run(ctx, t)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%q\n  escalate=%v: %s\n", t.Text, r.Escalate, r.Response)
	}
	return nil
}

func main() {
	live := flag.Bool("live", false, "call a real provider (STRATUM_MODEL, <PROVIDER>_API_KEY) instead of the recording")
	flag.Parse()
	rt, closeRT, err := demo.Runtime(recording, *live)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer closeRT()
	if err := run(stratum.WithRuntime(context.Background(), rt), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		closeRT()
		os.Exit(1)
	}
	for _, c := range rt.Trace() {
		cost := "unknown"
		if c.CostUSD != nil {
			cost = fmt.Sprintf("$%.6f", *c.CostUSD)
		}
		fmt.Printf("trace: %-20s attempts=%d cost=%s\n", c.Function, c.Attempts, cost)
	}
}
