package main

import (
	"flag"
	"testing"

	"github.com/stratum-go/stratum/engine/stratum/examples/internal/demo"
)

var record = flag.Bool("record", false, "re-record recording.replay against a scripted local server")

var script = []demo.Answer{
	{Match: "Refund for invoice", Answers: []string{`{"queue":"billing"}`}},
	{Match: "Login loop", Answers: []string{`{"queue":"support"}`}},
	{Match: "Pricing for 40", Answers: []string{`{"queue":"sales"}`}},
}

const want = `infer:
  Refund for invoice 1142    → billing
  Login loop                 → support
  Pricing for 40 seats       → sales
compute:
  Refund for invoice 1142    → billing
  Login loop                 → support
  Pricing for 40 seats       → sales
`

// TestOffline: both versions route alike, and both are traced under the
// same name (the compute one with no model and no attempts).
func TestOffline(t *testing.T) {
	rt := demo.Check(t, *record, recording, script, run, want)
	tr := rt.Trace()
	if len(tr) != 6 || tr[0].Function != "route_email" || tr[0].Attempts != 1 || tr[5].Function != "route_email" || tr[5].Model != "" {
		t.Fatalf("trace: %+v", tr)
	}
}
