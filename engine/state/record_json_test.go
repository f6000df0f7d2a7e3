package state

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"
)

func TestRecordJSONKeysPerType(t *testing.T) {
	start := "a"
	agent := "claude"
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		rec  Record
		keys []string
	}{
		{Record{Type: RecordStep, StepID: "s", Round: 1, RoundStartStepID: &start, Attempts: 2, Agent: &agent, StepMode: "inline", At: at},
			[]string{"agent", "at", "attempts", "child_flow_id", "duration_ms", "function_name", "round", "round_start_step_id", "step_id", "step_mode", "type"}},
		{Record{Type: RecordGate, StepID: "g", Outcome: "approve", ResolvedBy: "human", Channel: "cli"},
			[]string{"channel", "duration_ms", "outcome", "rationale", "resolved_by", "round", "round_start_step_id", "step_id", "type"}},
		{Record{Type: RecordSkip, StepID: "s", SkipReason: "x"},
			[]string{"round", "round_start_step_id", "skip_reason", "step_id", "type"}},
		{Record{Type: RecordPolicy, StepID: "g", EffectivePolicy: "flag", ResolvedOutcome: "approve", Rationale: "r"},
			[]string{"effective_policy", "rationale", "resolved_outcome", "round", "round_start_step_id", "step_id", "type"}},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.rec)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !reflect.DeepEqual(keys, c.keys) {
			t.Errorf("%s record keys = %v, want %v", c.rec.Type, keys, c.keys)
		}
		var back Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, c.rec) {
			t.Errorf("%s record round trip:\n got %+v\nwant %+v", c.rec.Type, back, c.rec)
		}
	}
}

// recordJSONReference is the map-based rendering MarshalJSON replaced: the
// reference its bytes must equal.
func recordJSONReference(r Record) []byte {
	m := map[string]any{"type": r.Type, "step_id": r.StepID, "round": r.Round, "round_start_step_id": r.RoundStartStepID}
	switch r.Type {
	case RecordStep:
		m["function_name"], m["attempts"], m["duration_ms"] = r.FunctionName, r.Attempts, r.DurationMS
		m["agent"], m["step_mode"], m["child_flow_id"] = r.Agent, r.StepMode, r.ChildFlowID
		if r.CacheHit || r.CacheKey != "" {
			m["cache_hit"], m["cache_key"] = r.CacheHit, r.CacheKey
		}
	case RecordGate:
		m["outcome"], m["rationale"], m["resolved_by"], m["duration_ms"] = r.Outcome, r.Rationale, r.ResolvedBy, r.DurationMS
	case RecordSkip:
		m["skip_reason"] = r.SkipReason
	case RecordPolicy:
		m["effective_policy"], m["resolved_outcome"], m["rationale"] = r.EffectivePolicy, r.ResolvedOutcome, r.Rationale
	}
	if r.Channel != "" {
		m["channel"] = r.Channel
	}
	if r.Reviewer != "" {
		m["reviewer"] = r.Reviewer
	}
	if !r.At.IsZero() {
		m["at"] = r.At.Format(time.RFC3339Nano)
	}
	if r.Reverted {
		m["reverted"] = true
	}
	b, _ := json.Marshal(m)
	return b
}

// FuzzRecordJSON: the direct encoding of a record is byte for byte the map
// encoding encoding/json gives, whatever the strings hold (quotes, control
// characters, HTML, U+2028, invalid UTF-8) and whatever the record's type.
func FuzzRecordJSON(f *testing.F) {
	f.Add("step", "s1", "<b>&\"\\\n\t\x00\x7f\u2028\u2029\xff", "a", 3, int64(-1), true, false)
	f.Add("gate", "g", "looks good", "", 0, int64(1234), false, true)
	f.Add("skip", "x", "", "é", 1, int64(0), false, false)
	f.Add("policy", "p", "policy: flag — auto-approved", "\b\f\r", 2, int64(9), true, true)
	f.Fuzz(func(t *testing.T, typ, id, text, other string, n int, ms int64, flag, set bool) {
		for _, ty := range []string{typ, RecordStep, RecordGate, RecordSkip, RecordPolicy} {
			if ty != RecordStep && ty != RecordGate && ty != RecordSkip && ty != RecordPolicy {
				continue // unknown types keep the plain struct encoding
			}
			r := Record{Type: ty, StepID: id, Round: n, FunctionName: text, Attempts: n, DurationMS: ms, StepMode: other,
				CacheHit: flag, Outcome: text, Rationale: other, ResolvedBy: text, SkipReason: text,
				EffectivePolicy: other, ResolvedOutcome: text, Reverted: flag}
			if set {
				r.RoundStartStepID, r.Agent, r.ChildFlowID = &other, &text, &id
				r.CacheKey, r.Channel, r.Reviewer = text, other, text
				r.At = time.Unix(ms%4102444800, int64(n%1000000000)).UTC()
			}
			// MarshalJSON itself: encoding/json would re-escape what it
			// returns, other encoders (the store's) take it as it is.
			got, err := r.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if want := recordJSONReference(r); string(got) != string(want) {
				t.Fatalf("record %+v:\n got %s\nwant %s", r, got, want)
			}
		}
	})
}
