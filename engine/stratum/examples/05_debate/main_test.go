package main

import (
	"flag"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

var record = flag.Bool("record", false, "re-record recording.replay against a scripted local server")

var script = []demo.Answer{
	{Match: "Synthesize", Answers: []string{`{"resolution_type":"disagreement","summary":"Atomic cross-project changes versus tooling cost: no agreement; a human should decide."}`}},
	{Match: "adopt it", Answers: []string{`{"position":"adopt","claim":"One repo makes cross-project changes atomic."}`, `{"position":"adopt","claim":"Tooling cost is one-off; atomic changes pay every week."}`}},
	{Match: "reject it", Answers: []string{`{"position":"reject","claim":"Monorepo tooling costs more than five people save."}`, `{"position":"reject","claim":"Atomic changes are rare for us; CI time is not."}`}},
}

const want = "disagreement: Atomic cross-project changes versus tooling cost: no agreement; a human should decide.\n"

// TestOffline: two rounds of two agents, then the synthesis.
func TestOffline(t *testing.T) {
	rt := demo.Check(t, *record, recording, script, run, want)
	if tr := rt.Trace(); len(tr) != 5 || tr[4].Function != "synthesize" {
		t.Fatalf("trace: %+v", tr)
	}
}
