package engine

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
