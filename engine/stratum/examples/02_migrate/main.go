// Command 02_migrate is seed Example 02: migrating a function from an LLM
// (NewInfer) to plain code (Compute) without changing its callers. Both
// have the type func(context.Context, In) (Out, error) and both are
// traced; the caller below runs once with each.
//
//	go run ./engine/stratum/examples/02_migrate          # from the recording
//	go run ./engine/stratum/examples/02_migrate --live   # a real provider
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

//go:embed recording.replay
var recording []byte

// Email is the input.
type Email struct {
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// Route is where an email goes.
type Route struct {
	Queue string `json:"queue" stratum:"enum=billing|support|sales"`
}

// Router is what callers depend on: an LLM function or plain code.
type Router func(context.Context, Email) (Route, error)

// Version 1: an LLM decides.
var routeByLLM Router = stratum.MustInfer("route_email", stratum.Spec[Email, Route]{
	Intent: "Route the email to the queue that should handle it",
}).Call

// Version 2: the rules the LLM's answers showed, as code; same name, same
// type, same trace.
var routeByRules Router = stratum.Compute("route_email", func(_ context.Context, e Email) (Route, error) {
	text := strings.ToLower(e.Subject + " " + e.Body)
	switch {
	case strings.Contains(text, "invoice") || strings.Contains(text, "refund"):
		return Route{Queue: "billing"}, nil
	case strings.Contains(text, "pricing") || strings.Contains(text, "demo"):
		return Route{Queue: "sales"}, nil
	}
	return Route{Queue: "support"}, nil
})

var emails = []Email{
	{Subject: "Refund for invoice 1142", Body: "I was charged twice."},
	{Subject: "Login loop", Body: "The app keeps sending me back to the login page."},
	{Subject: "Pricing for 40 seats", Body: "Can we get a demo?"},
}

// triage is the caller: it does not know which version it runs.
func triage(ctx context.Context, w io.Writer, route Router) error {
	for _, e := range emails {
		r, err := route(ctx, e)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %-26s → %s\n", e.Subject, r.Queue)
	}
	return nil
}

func run(ctx context.Context, w io.Writer) error {
	fmt.Fprintln(w, "infer:")
	if err := triage(ctx, w, routeByLLM); err != nil {
		return err
	}
	fmt.Fprintln(w, "compute:")
	return triage(ctx, w, routeByRules)
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
		fmt.Printf("trace: %s model=%q attempts=%d\n", c.Function, c.Model, c.Attempts)
	}
}
