package stratum_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine/stratum"
)

// exampleRuntime answers an Example's calls from its recording under
// testdata/examples (recordExamples switches it to recording, see
// example_record_test.go).
var exampleRuntime = func(name string) *stratum.Runtime {
	rt, err := stratum.New(stratum.Options{
		Replay: "testdata/examples/" + name + ".replay",
		Model:  "openai/gpt-4o-mini",
		Getenv: func(string) string { return "" },
	})
	if err != nil {
		log.Fatal(err)
	}
	return rt
}

type Sentiment struct {
	Label      string  `json:"label" stratum:"enum=positive|negative|neutral"`
	Confidence float64 `json:"confidence" stratum:"min=0,max=1"`
	Reasoning  string  `json:"reasoning"`
}

type Feedback struct {
	Text string `json:"text"`
}

var classify = stratum.MustInfer("classify_sentiment", stratum.Spec[Feedback, Sentiment]{
	Intent:  "Classify the emotional tone of customer feedback",
	Context: []string{"Treat sarcasm as negative. When genuinely ambiguous, use neutral."},
	Ensure: []stratum.Check[Sentiment]{
		stratum.Ensure("confidence must be above 0.7", func(s Sentiment) bool { return s.Confidence > 0.7 }),
	},
	Budget: stratum.Budget{Time: 30 * time.Second, USD: 0.01},
})

// A typed LLM function: the first answer's confidence is too low, so the
// second request carries that violation, and the second answer passes.
func Example() {
	rt := exampleRuntime("classify")
	defer rt.Close(context.Background())
	ctx := stratum.WithRuntime(context.Background(), rt)

	s, err := classify.Call(ctx, Feedback{Text: "Oh great, another outage. Just what I needed."})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Label, s.Confidence)
	tr := rt.Trace()[0]
	fmt.Println("attempts:", tr.Attempts, "violations:", tr.Violations)
	// Output:
	// negative 0.92
	// attempts: 2 violations: [[confidence must be above 0.7]]
}

type Ticket struct {
	Text     string `json:"text"`
	Category string `json:"category"`
}

type Resolution struct {
	Response string `json:"response"`
	Escalate bool   `json:"escalate"`
}

// A flow: its calls share one budget and one flow id; Compute functions
// are traced like LLM calls.
func ExampleNewFlow() {
	rt := exampleRuntime("flow")
	defer rt.Close(context.Background())
	ctx := stratum.WithRuntime(context.Background(), rt)

	needsEscalation := stratum.Compute("needs_escalation", func(_ context.Context, s Sentiment) (bool, error) {
		return s.Label == "negative" && s.Confidence > 0.9, nil
	})
	draft := stratum.MustInfer("draft_response", stratum.Spec[Ticket, Resolution]{
		Intent: "Draft a helpful response to a support ticket",
		Ensure: []stratum.Check[Resolution]{stratum.Ensure("the response is not empty", func(r Resolution) bool { return r.Response != "" })},
	})
	process := stratum.NewFlow("process_ticket", stratum.Budget{Time: time.Minute, USD: 0.05},
		func(ctx context.Context, t Ticket) (Resolution, error) {
			s, err := classify.Call(ctx, Feedback{Text: t.Text})
			if err != nil {
				return Resolution{}, err
			}
			if esc, _ := needsEscalation(ctx, s); esc {
				return Resolution{Response: "Escalated to senior support.", Escalate: true}, nil
			}
			return draft.Call(ctx, t)
		})
	r, err := process.Run(ctx, Ticket{Text: "How do I export my data?", Category: "billing"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Response)
	for _, c := range rt.Trace() {
		fmt.Println(c.Function, c.Attempts, c.FlowID != "")
	}
	// Output:
	// Go to Settings, then Export, and pick CSV.
	// classify_sentiment 1 true
	// needs_escalation 0 true
	// draft_response 1 true
}

// All runs calls concurrently and keeps their order.
func ExampleAll() {
	rt := exampleRuntime("all")
	defer rt.Close(context.Background())
	ctx := stratum.WithRuntime(context.Background(), rt)

	texts := []string{"I love it", "It broke on day one", "It is a chair"}
	var branches []stratum.Branch[Sentiment]
	for _, t := range texts {
		branches = append(branches, func(ctx context.Context) (Sentiment, error) {
			return classify.Call(ctx, Feedback{Text: t})
		})
	}
	results, err := stratum.All(ctx, branches...)
	if err != nil {
		log.Fatal(err)
	}
	for i, s := range results {
		fmt.Printf("%s: %s\n", texts[i], s.Label)
	}
	// Output:
	// I love it: positive
	// It broke on day one: negative
	// It is a chair: neutral
}

// Race returns the first success; the losers are cancelled and have
// returned by the time Race does.
func ExampleRace() {
	fast := func(ctx context.Context) (string, error) { return "cached answer", nil }
	slow := func(ctx context.Context) (string, error) {
		select {
		case <-time.After(time.Minute):
			return "slow answer", nil
		case <-ctx.Done():
			fmt.Println("slow branch cancelled")
			return "", ctx.Err()
		}
	}
	v, err := stratum.Race(context.Background(), slow, fast)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v)
	// Output:
	// slow branch cancelled
	// cached answer
}

type Answer struct {
	Answer     string  `json:"answer"`
	Confidence float64 `json:"confidence"`
}

// A quorum: three concurrent calls, two must agree on "answer"; the most
// confident agreeing answer wins.
func ExampleSpec_quorum() {
	rt := exampleRuntime("quorum")
	defer rt.Close(context.Background())
	ctx := stratum.WithRuntime(context.Background(), rt)

	capital := stratum.MustInfer("capital", stratum.Spec[string, Answer]{
		Intent: "Name the capital of the country", Quorum: 3, AgreeOn: "answer", Threshold: 2,
	})
	a, err := capital.Call(ctx, "Australia")
	var ce *stratum.ConsensusError
	if errors.As(err, &ce) {
		fmt.Println("no consensus:", ce.Outputs)
		return
	}
	fmt.Println(a.Answer, a.Confidence)
	// Output:
	// Canberra 0.95
}

type Draft struct {
	Title string `json:"title"`
}

// Refine: Until decides, Feedback's text goes into the next iteration's
// prompt.
func ExampleRefine() {
	rt := exampleRuntime("refine")
	defer rt.Close(context.Background())
	ctx := stratum.WithRuntime(context.Background(), rt)

	title := stratum.MustInfer("title", stratum.Spec[string, Draft]{
		Intent: "Write a title for the article",
		Refine: &stratum.Refine[Draft]{
			Until:    func(d Draft) bool { return len(d.Title) <= 30 },
			Feedback: func(d Draft) string { return fmt.Sprintf("the title has %d characters; at most 30", len(d.Title)) },
		},
	})
	d, err := title.Call(ctx, "An article about structured LLM calls in Go")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Title)
	// Output:
	// Typed LLM calls in Go
}

type Argument struct {
	Position string `json:"position" stratum:"enum=for|against|undecided"`
	Claim    string `json:"claim"`
}

type DebateIn struct {
	Topic  string     `json:"topic"`
	Others []Argument `json:"others_said"`
}

// A debate: two agents argue for two rounds, each seeing the other's
// previous argument; the synthesizer gets the transcript.
func ExampleDebate() {
	rt := exampleRuntime("debate")
	defer rt.Close(context.Background())
	ctx := stratum.WithRuntime(context.Background(), rt)

	agent := func(stance string) func(context.Context, stratum.Turn[string, Argument]) (Argument, error) {
		fn := stratum.MustInfer("argue_"+stance, stratum.Spec[DebateIn, Argument]{
			Intent: "Argue " + stance + " the topic; answer the other side's points",
		})
		return func(ctx context.Context, t stratum.Turn[string, Argument]) (Argument, error) {
			return fn.Call(ctx, DebateIn{Topic: t.Topic, Others: t.Others})
		}
	}
	d := stratum.Debate[string, Argument, string]{
		Agents:  []func(context.Context, stratum.Turn[string, Argument]) (Argument, error){agent("for"), agent("against")},
		Rounds:  2,
		AgreeOn: "position",
		Synthesize: func(_ context.Context, tr stratum.Transcript[string, Argument]) (string, error) {
			var claims []string
			for _, a := range tr.Rounds[len(tr.Rounds)-1] {
				claims = append(claims, a.Position+": "+a.Claim)
			}
			return fmt.Sprintf("converged=%v; %s", tr.Converged, strings.Join(claims, " | ")), nil
		},
	}
	out, err := d.Run(ctx, "Should a small team adopt microservices?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output:
	// converged=false; for: independent deploys still pay off | against: one deployable is cheaper to run
}
