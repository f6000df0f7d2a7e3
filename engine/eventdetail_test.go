package engine

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stratum-go/stratum/review"
)

// detailFlow drives a flow through a failed attempt, a success, a traced
// call, a gate with a deadline and its decision, so that its events carry
// every kind of data the front ends show.
const detailFlow = `version: "0.2"
contracts:
  Out:
    n: {type: integer}
functions:
  review:
    mode: gate
    timeout: 60
flows:
  main:
    input: {}
    steps:
      - id: s1
        intent: "count"
        output_contract: Out
        ensure: ["result.n > 0"]
        retries: 3
      - id: gate
        function: review
        depends_on: [s1]
        on_approve: ~
        on_revise: s1
        on_kill: ~
`

// TestEventDetailInProcessAndStored checks that an event read from the
// in-process broker (the Go values a transition wrote) and the same event
// read back from the log (JSON numbers) give the same EventDetail, and that
// the detail holds what the transitions wrote.
func TestEventDetailInProcessAndStored(t *testing.T) {
	f, _ := plan(t, detailFlow, "main", nil)
	f.stepDone("s1", map[string]any{"n": 0})
	cost := 0.25
	f.do(func(st *FlowState, env Env) (transitionResult, error) {
		return recordCall(st, env, CallRecord{StepID: "s1", Attempt: 2, DurationMS: 1500, Tokens: 42, CostUSD: &cost,
			Trace: &TraceRecord{Function: "s1", Model: "openai/gpt-4o-mini", Output: map[string]any{"n": 3}},
			Data:  map[string]any{"executor": "infer"}})
	})
	f.stepDone("s1", map[string]any{"n": 3})
	f.resolve("gate", review.Revise)

	byType := map[EventType]EventDetail{}
	for _, ev := range f.events {
		got := ev.Detail()
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var stored Event
		if err := json.Unmarshal(b, &stored); err != nil {
			t.Fatal(err)
		}
		if want := stored.Detail(); !reflect.DeepEqual(normalizeDetail(got), normalizeDetail(want)) {
			t.Errorf("%s: in process %+v\nstored %+v", ev.Type, got, want)
		}
		if _, seen := byType[ev.Type]; !seen {
			byType[ev.Type] = got
		}
	}

	failed := byType[EventStepFailed]
	if failed.Attempt != 1 || failed.Status != "ensure_failed" || len(failed.Violations) != 1 || failed.Exhausted {
		t.Errorf("step_failed detail: %+v", failed)
	}
	if done := byType[EventStepDone]; done.Attempts != 2 {
		t.Errorf("step_done detail: %+v", done)
	}
	call := byType[EventTrace]
	if call.Attempt != 2 || call.DurationMS != 1500 || call.Tokens != 42 || call.CostUSD == nil || *call.CostUSD != 0.25 ||
		call.Executor != "infer" || call.Call == nil || call.Call.Model != "openai/gpt-4o-mini" || call.Call.Function != "s1" {
		t.Errorf("trace detail: %+v (call %+v)", call, call.Call)
	}
	opened := byType[EventGateOpened]
	if opened.Round != 0 || opened.Approver != "any" || opened.Deadline == nil || !opened.Deadline.Equal(t0.Add(60e9)) {
		t.Errorf("gate_opened detail: %+v", opened)
	}
	res := byType[EventGateResolved]
	if res.Outcome != "revise" || res.Reviewer != "ann" || res.Channel != "tui" || res.Rationale != "because" || res.ResolvedBy != "human" {
		t.Errorf("gate_resolved detail: %+v", res)
	}
	if created := byType[EventFlowCreated]; created.FlowName != "main" {
		t.Errorf("flow_created detail: %+v", created)
	}
}

// normalizeDetail makes the one representation difference comparable: a
// decoded call output holds float64 where the in-process one held int.
func normalizeDetail(d EventDetail) EventDetail {
	if d.Call != nil {
		c := *d.Call
		b, _ := json.Marshal(c.Output)
		var v any
		_ = json.Unmarshal(b, &v)
		c.Output = v
		d.Call = &c
	}
	return d
}

func TestEventDetailEmptyAndForeign(t *testing.T) {
	if d := (Event{Type: EventStepDone}).Detail(); !reflect.DeepEqual(d, EventDetail{}) {
		t.Errorf("no data: %+v", d)
	}
	// Values of the wrong type read as zero, never panic.
	d := Event{Data: map[string]any{"attempt": "two", "violations": 3, "trace": "not json", "deadline": "soon", "cost_usd": true}}.Detail()
	if d.Attempt != 0 || d.Violations != nil || d.Call != nil || d.Deadline != nil || d.CostUSD != nil {
		t.Errorf("foreign data: %+v", d)
	}
}
