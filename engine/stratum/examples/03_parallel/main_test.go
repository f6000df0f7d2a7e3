package main

import (
	"flag"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

var record = flag.Bool("record", false, "re-record recording.replay against a scripted local server")

var script = []demo.Answer{
	{Match: "Summarize", Answers: []string{`{"summary":"Go 1.26 brings generic type aliases, a faster GC on many cores and two crypto deprecations."}`}},
	{Match: "main topics", Answers: []string{`{"topics":["generics","garbage collection","crypto"]}`}},
	{Match: "tone", Answers: []string{`{"tone":"technical"}`}},
}

const want = `summary: Go 1.26 brings generic type aliases, a faster GC on many cores and two crypto deprecations.
topics:  [generics garbage collection crypto]
tone:    technical
`

// TestOffline: three calls of one flow, concurrently.
func TestOffline(t *testing.T) {
	rt := demo.Check(t, *record, recording, script, run, want)
	tr := rt.Trace()
	if len(tr) != 3 || tr[0].FlowID == "" || tr[0].FlowID != tr[2].FlowID {
		t.Fatalf("trace: %+v", tr)
	}
}
