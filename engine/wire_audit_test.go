package engine

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// TestAuditWireJSONBytes: the audit's typed encoder (WireJSON, MarshalJSON)
// writes the very bytes json.Marshal writes of its wire map, for audits of
// every shape: empty and nil collections, each record type (an unknown one
// too), a gate, iterations, child audits, and strings encoding/json escapes
// (HTML characters, control characters, U+2028, invalid UTF-8).
func TestAuditWireJSONBytes(t *testing.T) {
	odd := []string{"", "plain", `q"uote\back`, "<b>&amp;</b>", "tab\tnl\ncr\r\x01\x1f", "line\u2028para\u2029", "bad\xffutf8\xc3", "ünïcødé ✓ 😀"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return odd[rng.IntN(len(odd))] }
	ptr := func() *string {
		if rng.IntN(3) == 0 {
			return nil
		}
		s := pick()
		return &s
	}
	at := time.Date(2026, 11, 27, 1, 2, 3, 456789000, time.UTC)
	record := func() state.Record {
		types := []string{state.RecordStep, state.RecordGate, state.RecordSkip, state.RecordPolicy, "custom" + pick()}
		r := state.Record{Type: types[rng.IntN(len(types))], StepID: pick(), Round: rng.IntN(3), RoundStartStepID: ptr(),
			FunctionName: pick(), Attempts: rng.IntN(4), DurationMS: rng.Int64N(1e6), Agent: ptr(), StepMode: pick(),
			ChildFlowID: ptr(), CacheHit: rng.IntN(2) == 0, CacheKey: pick(), Outcome: pick(), Rationale: pick(),
			ResolvedBy: pick(), Channel: pick(), Reviewer: pick(), SkipReason: pick(), EffectivePolicy: pick(),
			ResolvedOutcome: pick(), Reverted: rng.IntN(4) == 0}
		if rng.IntN(2) == 0 {
			r.At = at.Add(time.Duration(rng.IntN(1e9)))
		}
		return r
	}
	records := func() []state.Record {
		if rng.IntN(5) == 0 {
			return nil
		}
		recs := make([]state.Record, rng.IntN(5))
		for i := range recs {
			recs[i] = record()
		}
		return recs
	}
	score := 0.5
	iterations := func() map[string][]state.IterationEntry {
		switch rng.IntN(3) {
		case 0:
			return nil
		case 1:
			return map[string][]state.IterationEntry{}
		}
		return map[string][]state.IterationEntry{pick(): {{Iteration: 1, Round: 0, Outcome: pick(), Timestamp: at, Score: &score}}}
	}
	for i := 0; i < 500; i++ {
		a := &AuditReport{FlowID: pick(), FlowName: pick(), Status: pick(), StepsCompleted: rng.IntN(9), TotalSteps: rng.IntN(9),
			Trace: records(), Round: rng.IntN(4), Iterations: iterations(), TotalDurationMS: rng.Int64N(1e7),
			CreatedAt: at, UpdatedAt: at.Add(time.Hour).In(time.FixedZone("x", 3600)), FlowStatus: state.FlowStatus(pick())}
		for n := rng.IntN(3); n > 0; n-- {
			a.Rounds = append(a.Rounds, AuditRound{Round: n, Steps: records()})
		}
		switch rng.IntN(3) {
		case 0:
			a.ArchivedIterations = []map[string][]state.IterationEntry{}
		case 1:
			a.ArchivedIterations = []map[string][]state.IterationEntry{iterations(), iterations()}
		}
		switch rng.IntN(3) {
		case 0:
			a.ChildAudits = map[string][]json.RawMessage{}
		case 1:
			a.ChildAudits = map[string][]json.RawMessage{pick(): {json.RawMessage(`{"a": "<x>",  "b":[1, 2]}`)}}
		}
		switch rng.IntN(3) {
		case 0:
			a.Calls = []json.RawMessage{}
		case 1:
			a.Calls = []json.RawMessage{json.RawMessage(`{"function": "f",  "inputs":{"t":"<x>"}}`), json.RawMessage(`{"step_id":"f#2"}`)}
		}
		if rng.IntN(2) == 0 {
			dl := at.Add(time.Minute)
			a.Gate = &state.PendingGate{StepID: pick(), Round: 1, DispatchedAt: at, Deadline: &dl, OnTimeout: pick()}
		}
		want, err := json.Marshal(a.wire())
		if err != nil {
			t.Fatal(err)
		}
		got, err := WireJSON(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("audit %d:\n got %s\nwant %s", i, got, want)
		}
		if m, err := json.Marshal(a); err != nil || !bytes.Equal(m, want) {
			t.Fatalf("audit %d: json.Marshal gives %s (%v)\nwant %s", i, m, err, want)
		}
	}
	// Errors and other outcomes: json.Marshal of Wire.
	for _, c := range []struct {
		out Outcome
		err error
	}{{nil, flowNotFound("nope")}, {&Stopped{FlowID: "f"}, nil}} {
		want, _ := json.Marshal(Wire(c.out, c.err))
		if got, err := WireJSON(c.out, c.err); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("WireJSON(%v, %v) = %s, %v; want %s", c.out, c.err, got, err, want)
		}
	}
}
