// Command 05_debate is seed Example 05: two agents argue for two rounds
// (each round concurrent; in round 2 each sees the other's argument), and
// a synthesizer resolves the transcript. A synthesis of "disagreement" is
// where a program would ask a human (example 06).
//
//	go run ./engine/stratum/examples/05_debate          # from the recording
//	go run ./engine/stratum/examples/05_debate --live   # a real provider
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

//go:embed recording.replay
var recording []byte

// Argument is one agent's turn.
type Argument struct {
	Position string `json:"position" stratum:"enum=adopt|reject"`
	Claim    string `json:"claim" stratum:"maxlen=300"`
}

// Prompt is what an agent is called with.
type Prompt struct {
	Topic      string     `json:"topic"`
	OthersSaid []Argument `json:"others_said"`
}

// Verdict is the synthesis.
type Verdict struct {
	Resolution string `json:"resolution_type" stratum:"enum=consensus|disagreement|partial"`
	Summary    string `json:"summary"`
}

// Synthesis is the synthesizer's input.
type Synthesis struct {
	Topic     string       `json:"topic"`
	Rounds    [][]Argument `json:"rounds"`
	Converged bool         `json:"converged"`
}

func agent(name, stance string) func(context.Context, stratum.Turn[string, Argument]) (Argument, error) {
	fn := stratum.MustInfer(name, stratum.Spec[Prompt, Argument]{
		Intent:  "Argue the topic from your stance; in later rounds answer the other side's points",
		Context: []string{"Your stance: " + stance},
	})
	return func(ctx context.Context, t stratum.Turn[string, Argument]) (Argument, error) {
		return fn.Call(ctx, Prompt{Topic: t.Topic, OthersSaid: t.Others})
	}
}

var synthesize = stratum.MustInfer("synthesize", stratum.Spec[Synthesis, Verdict]{
	Intent: "Synthesize the debate into a verdict",
})

var debate = stratum.Debate[string, Argument, Verdict]{
	Agents:  []func(context.Context, stratum.Turn[string, Argument]) (Argument, error){agent("optimist", "adopt it"), agent("skeptic", "reject it")},
	Rounds:  2,
	AgreeOn: "position",
	Synthesize: func(ctx context.Context, tr stratum.Transcript[string, Argument]) (Verdict, error) {
		return synthesize.Call(ctx, Synthesis{Topic: tr.Topic, Rounds: tr.Rounds, Converged: tr.Converged})
	},
}

func run(ctx context.Context, w io.Writer) error {
	v, err := debate.Run(ctx, "Should our five-person team move to a monorepo?")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s\n", v.Resolution, v.Summary)
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
}
