package engine_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// TestGateNews: a waiter at gate "review" of flow f1 in round 1 reads the
// decision from its gate_resolved event, rereads the flow only when an
// event about it does not tell, and ignores the rest.
func TestGateNews(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	resolved := func(flow, step string, round int, d engine.GateResolved) engine.Event {
		d.Round = round
		return engine.Event{Type: engine.EventGateResolved, FlowID: flow, StepID: step, Time: at, Data: d}
	}
	decision := engine.GateResolved{Outcome: "approve", Channel: "tui", ResolvedBy: "human", Reviewer: "ann", Rationale: "ok"}
	for _, c := range []struct {
		name            string
		batch           []engine.Event
		decided, reread bool
	}{
		{"the gate's decision", []engine.Event{resolved("f1", "review", 1, decision)}, true, false},
		{"another flow", []engine.Event{resolved("f2", "review", 1, decision)}, false, false},
		{"a revise refused by max_rounds", []engine.Event{resolved("f1", "review", 1, engine.GateResolved{Outcome: "revise", Channel: "tui", MaxRoundsExceeded: true})}, false, false},
		{"another round's decision", []engine.Event{resolved("f1", "review", 0, decision)}, false, true},
		{"an older log's decision without its fields", []engine.Event{resolved("f1", "review", 1, engine.GateResolved{})}, false, true},
		{"a checkpoint of the flow", []engine.Event{{Type: engine.EventCheckpoint, FlowID: "f1"}}, false, true},
		{"reread, then the decision", []engine.Event{{Type: engine.EventCheckpoint, FlowID: "f1"}, resolved("f1", "review", 1, decision)}, true, false},
		{"nothing", nil, false, false},
	} {
		d, decided, reread := engine.GateNews(c.batch, "f1", "review", 1)
		if decided != c.decided || reread != c.reread {
			t.Errorf("%s: decided %v reread %v, want %v %v", c.name, decided, reread, c.decided, c.reread)
		}
		if decided && (d.Outcome != review.Approve || d.Reviewer != "ann" || d.Channel != review.Channel("tui") || *d.Round != 1 || !d.DecidedAt.Equal(at)) {
			t.Errorf("%s: decision %+v", c.name, d)
		}
	}
}

// TestReviewNews: a Go program waiting on review "review-1" of flow f1
// reads the closed review (status, value, decision) from its gate_resolved
// event, rereads the flow only when an event about it does not tell, and
// ignores the rest.
func TestReviewNews(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	closed := func(flow, step string, p engine.GateResolved) engine.Event {
		return engine.Event{Type: engine.EventGateResolved, FlowID: flow, StepID: step, Time: at, Data: p}
	}
	approved := engine.GateResolved{Outcome: "approve", Channel: "cli", ResolvedBy: "human", Reviewer: "ann", Rationale: "ok",
		ReviewStatus: "approved", Option: 2, Value: json.RawMessage(`{"plan":"canary"}`)}
	for _, c := range []struct {
		name            string
		batch           []engine.Event
		decided, reread bool
	}{
		{"the review's decision", []engine.Event{closed("f1", "review-1", approved)}, true, false},
		{"another review of the flow", []engine.Event{closed("f1", "review-2", approved)}, false, false},
		{"another flow", []engine.Event{closed("f2", "review-1", approved)}, false, false},
		{"an older build's decision without status and value", []engine.Event{closed("f1", "review-1", engine.GateResolved{Outcome: "approve", Channel: "cli"})}, false, true},
		{"the flow finished", []engine.Event{{Type: engine.EventFlowFinished, FlowID: "f1", Data: engine.FlowFinished{Status: "killed"}}}, false, true},
		{"withdrawn, then the flow finished", []engine.Event{closed("f1", "review-1", engine.GateResolved{Outcome: "withdrawn", ReviewStatus: "withdrawn", Rationale: "flow killed"}),
			{Type: engine.EventFlowFinished, FlowID: "f1", Data: engine.FlowFinished{Status: "killed"}}}, true, false},
		{"a call of the flow", []engine.Event{{Type: engine.EventTrace, FlowID: "f1", StepID: "call-1", Data: engine.Trace{Attempt: 1}}}, false, false},
		{"nothing", nil, false, false},
	} {
		status, d, reread := engine.ReviewNews(c.batch, "f1", "review-1")
		if (d != nil) != c.decided || reread != c.reread {
			t.Errorf("%s: decided %v reread %v, want %v %v", c.name, d != nil, reread, c.decided, c.reread)
		}
		if c.name == "the review's decision" && (status != state.ReviewApproved || string(d.Value) != `{"plan":"canary"}` || d.Option != 2 ||
			d.Reviewer != "ann" || d.Rationale != "ok" || d.ResolvedBy != "human" || d.Channel != "cli" || !d.DecidedAt.Equal(at)) {
			t.Errorf("%s: %s %+v", c.name, status, d)
		}
	}
}
