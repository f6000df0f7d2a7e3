package main

import (
	"context"
	"flag"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum"
	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

var record = flag.Bool("record", false, "re-record recording.replay against a scripted local server")

var script = []demo.Answer{{Match: "Write short release notes", Answers: []string{
	`{"title":"Stratum 1.5.0","summary":"Answers now stream as the model writes them."}`,
	`{"title":"Stratum 1.5.0","summary":"Answers now stream as the model writes them, and images can be inputs."}`,
}}}

const want = `attempt 1: {"title":"Stratum 1.5.0","summary":"Answers now stream as the model writes them."}
retry: the summary must mention every change
attempt 2: {"title":"Stratum 1.5.0","summary":"Answers now stream as the model writes them, and images can be inputs."}
final (attempt 2, 25 deltas): Stratum 1.5.0 — Answers now stream as the model writes them, and images can be inputs.
`

// TestOffline streams the example from its recording: the first attempt
// breaks the ensure and is retried mid-stream; both attempts stream in
// deltas; the trace is a Call's (2 attempts).
func TestOffline(t *testing.T) {
	rt := demo.Check(t, *record, recording, script, run, want)
	tr := rt.Trace()
	if len(tr) != 1 || tr[0].Attempts != 2 || !tr[0].Streamed || len(tr[0].Violations) != 1 {
		t.Fatalf("trace: %+v", tr)
	}
}

// TestBreakStopsTheStream: breaking out of the loop after the first delta
// ends the Call (its context is cancelled) and nothing more is read.
func TestBreakStopsTheStream(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	rt, done, err := demo.Runtime(recording, false)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	n := 0
	for p, err := range notes.Stream(stratum.WithRuntime(context.Background(), rt), changes) {
		if err != nil {
			t.Fatal(err)
		}
		if p.Delta != "" {
			n++
			break
		}
	}
	if n != 1 {
		t.Fatalf("%d deltas before the break", n)
	}
}
