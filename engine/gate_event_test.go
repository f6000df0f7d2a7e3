package engine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stratum-go/stratum/review"
)

// TestGateResolvedEventCarriesTheDecision: every gate_resolved event says
// what was decided — outcome, rationale, reviewer, resolved_by, channel,
// round, a revise's target — the same fresh from the transition and read
// back from the log (JSON); a revise max_rounds refused says so (the gate
// waits on), and an event without the decision is not taken for one.
func TestGateResolvedEventCarriesTheDecision(t *testing.T) {
	const src = `version: "0.2"
functions:
  g:
    mode: gate
flows:
  main:
    input: {}
    max_rounds: 1
    steps:
      - id: work
        intent: "W"
      - id: review
        function: g
        depends_on: [work]
        on_approve: ~
        on_revise: work
        on_kill: ~
`
	f, _ := plan(t, src, "main", nil)
	f.stepDone("work", map[string]any{})
	f.resolve("review", review.Revise, func(d *review.Decision) { d.Rationale = "more tests"; d.Channel = review.ChannelCLI })
	f.stepDone("work", map[string]any{})
	f.later(time.Second)
	f.resolve("review", review.Revise, func(d *review.Decision) { d.Rationale = "again" })
	f.resolve("review", review.Approve, func(d *review.Decision) {
		d.Rationale = ""
		d.Reviewer = "bot"
		d.ResolvedBy = review.Agent
		d.Channel = review.ChannelMCP
	})

	type want struct {
		d      review.Decision
		target string
		ok     bool
	}
	decision := func(round int, o review.Outcome, why, who string, by review.ResolvedBy, ch review.Channel, at time.Time) review.Decision {
		return review.Decision{ReviewID: review.ID(f.st.FlowID, "review", round), FlowID: f.st.FlowID, StepID: "review", Round: &round,
			Outcome: o, Rationale: why, Reviewer: who, ResolvedBy: by, Channel: ch, DecidedAt: at}
	}
	wants := []want{
		{decision(0, review.Revise, "more tests", "ann", review.Human, review.ChannelCLI, t0), "work", true},
		{ok: false}, // max_rounds_exceeded: recorded, the gate waits on in round 1
		{decision(1, review.Approve, "", "bot", review.Agent, review.ChannelMCP, t0.Add(time.Second)), "", true},
	}
	var got []Event
	for _, e := range f.events {
		if e.Type == EventGateResolved {
			got = append(got, e)
		}
	}
	if len(got) != len(wants) {
		t.Fatalf("%d gate_resolved events, want %d", len(got), len(wants))
	}
	for i, e := range got {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var logged Event
		if err := json.Unmarshal(b, &logged); err != nil {
			t.Fatal(err)
		}
		for _, ev := range []Event{e, logged} {
			d, ok := ev.GateDecision()
			target := ev.Data.(GateResolved).ReviseTarget
			if ok != wants[i].ok || target != wants[i].target || (ok && !reflect.DeepEqual(d, wants[i].d)) {
				t.Fatalf("event %d %v: GateDecision = %+v %q %v, want %+v %q %v", i, ev.Data, d, target, ok, wants[i].d, wants[i].target, wants[i].ok)
			}
		}
	}
	if x := got[1].Data.(GateResolved); !x.MaxRoundsExceeded || x.Round != 1 || x.Outcome != "revise" || x.Rationale != "again" {
		t.Fatalf("the refused revise's event: %+v", x)
	}

	// An event that does not carry the decision (an older log's) is not one.
	old := Event{Type: EventGateResolved, FlowID: "f", StepID: "review", Data: GateResolved{Round: 0}}
	if _, ok := old.GateDecision(); ok {
		t.Fatal("an event without the decision was read as one")
	}
	if _, ok := (Event{Type: EventGateOpened, Data: got[0].Data}).GateDecision(); ok {
		t.Fatal("a gate_opened event was read as a decision")
	}
}
