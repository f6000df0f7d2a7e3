// Command 03_parallel is seed Example 03: three LLM calls run
// concurrently with stratum.All (results in input order; the first error
// cancels the others), inside one flow whose budget they share.
//
//	go run ./engine/stratum/examples/03_parallel          # from the recording
//	go run ./engine/stratum/examples/03_parallel --live   # a real provider
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

// Doc is the document analysed.
type Doc struct {
	Text string `json:"text"`
}

// Summary, Topics and Tone are the three analyses.
type Summary struct {
	Summary string `json:"summary" stratum:"maxlen=200"`
}

// Topics lists a document's topics.
type Topics struct {
	Topics []string `json:"topics" stratum:"minlen=1,maxlen=5"`
}

// Tone is a document's tone.
type Tone struct {
	Tone string `json:"tone" stratum:"enum=formal|casual|technical"`
}

var (
	summarize = stratum.MustInfer("summarize", stratum.Spec[Doc, Summary]{Intent: "Summarize the document in one sentence"})
	topics    = stratum.MustInfer("extract_topics", stratum.Spec[Doc, Topics]{Intent: "List the document's main topics"})
	tone      = stratum.MustInfer("detect_tone", stratum.Spec[Doc, Tone]{Intent: "Detect the document's tone"})
)

// Analysis gathers the three.
type Analysis struct {
	Summary string
	Topics  []string
	Tone    string
}

var analyze = stratum.NewFlow("analyze", stratum.Budget{Time: 30 * time.Second, USD: 0.01},
	func(ctx context.Context, d Doc) (Analysis, error) {
		var a Analysis
		_, err := stratum.All(ctx,
			func(ctx context.Context) (any, error) {
				s, err := summarize.Call(ctx, d)
				a.Summary = s.Summary
				return nil, err
			},
			func(ctx context.Context) (any, error) {
				t, err := topics.Call(ctx, d)
				a.Topics = t.Topics
				return nil, err
			},
			func(ctx context.Context) (any, error) {
				t, err := tone.Call(ctx, d)
				a.Tone = t.Tone
				return nil, err
			})
		return a, err
	})

const doc = "Go 1.26 adds generic type aliases to the type checker, speeds up the garbage collector on many-core machines, and deprecates two old crypto packages."

func run(ctx context.Context, w io.Writer) error {
	a, err := analyze.Run(ctx, Doc{Text: doc})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "summary: %s\ntopics:  %v\ntone:    %s\n", a.Summary, a.Topics, a.Tone)
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
