// Command 08_stream streams a typed LLM function's answer (Fn.Stream):
// each attempt's text arrives in deltas as the model writes it; an attempt
// that breaks the contract yields its violations (a Retry element) and the
// next attempt streams; the last element is Final, with the checked value.
// Breaking out of the loop cancels the request.
//
//	go run ./engine/stratum/examples/08_stream          # offline: the recording (streamed answers)
//	go run ./engine/stratum/examples/08_stream --live   # a real provider, over server-sent events
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

// Changes is what the release notes are about.
type Changes struct {
	Version string   `json:"version"`
	Changes []string `json:"changes"`
}

// Notes are the release notes.
type Notes struct {
	Title   string `json:"title" stratum:"minlen=1,maxlen=60"`
	Summary string `json:"summary" stratum:"minlen=1,maxlen=300"`
}

var notes = stratum.MustInfer("release_notes", stratum.Spec[Changes, Notes]{
	Intent: "Write short release notes for users",
	Ensure: []stratum.Check[Notes]{
		stratum.Ensure("the summary must mention every change", func(n Notes) bool {
			return strings.Contains(strings.ToLower(n.Summary), "stream") && strings.Contains(strings.ToLower(n.Summary), "image")
		}),
	},
})

var changes = Changes{Version: "1.5.0", Changes: []string{"streaming", "images as inputs"}}

// run prints each attempt's deltas as they arrive, each retry's
// violations, and the final notes.
func run(ctx context.Context, w io.Writer) error {
	attempt, deltas := 0, 0
	for p, err := range notes.Stream(ctx, changes) {
		if err != nil {
			return err
		}
		switch {
		case p.Final:
			fmt.Fprintf(w, "\nfinal (attempt %d, %d deltas): %s — %s\n", p.Attempt, deltas, p.Value.Title, p.Value.Summary)
		case p.Retry != nil:
			fmt.Fprintf(w, "\nretry: %s\n", strings.Join(p.Retry, "; "))
		default:
			if p.Attempt != attempt {
				attempt = p.Attempt
				fmt.Fprintf(w, "attempt %d: ", attempt)
			}
			fmt.Fprint(w, p.Delta)
			deltas++
		}
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
}
