package main

import (
	"flag"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

var record = flag.Bool("record", false, "re-record recording.replay against a scripted local server")

var script = []demo.Answer{
	{Match: "Draft a helpful", Answers: []string{`{"response":"Open Settings → Account → Email, enter the new address and confirm the link we send.","escalate":false}`}},
	{Match: "deleted three months", Answers: []string{`{"label":"negative","confidence":0.98,"reasoning":"lost data, explicit anger"}`}},
	{Match: "change the email", Answers: []string{`{"label":"neutral","confidence":0.6,"reasoning":"a question"}`, `{"label":"neutral","confidence":0.88,"reasoning":"a plain how-to question"}`}},
}

const want = `"Your app deleted three months of my notes. I am furious."
  escalate=true: Escalated to senior support.
"How do I change the email address on my account?"
  escalate=false: Open Settings → Account → Email, enter the new address and confirm the link we send.
`

// TestOffline runs the example from its recording: the second ticket's
// first answer fails the ensure and is retried.
func TestOffline(t *testing.T) {
	rt := demo.Check(t, *record, recording, script, run, want)
	tr := rt.Trace()
	if len(tr) != 5 || tr[2].Function != "classify_sentiment" || tr[2].Attempts != 2 {
		t.Fatalf("trace: %+v", tr)
	}
}
