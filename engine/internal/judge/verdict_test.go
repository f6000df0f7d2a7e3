package judge

import (
	"encoding/json"
	"testing"
)

// Verdict keeps each predicate's verdict, confidence, the last tier's
// reason and every citation, in order.
func TestVerdict(t *testing.T) {
	r := &Result{Met: false, Stakes: "default", Consumed: Consumed{Turns: 3}, Predicates: []PredicateResult{
		{ID: "a", Type: "deterministic", Statement: "s", Verdict: Met, Confidence: 100, TierHistory: []TierRecord{{Tier: TierT1, Verdict: Met, Reason: "true"}}},
		{ID: "b", Type: "judged", Verdict: NotMet, Confidence: 80,
			TierHistory: []TierRecord{{Tier: TierT1, Verdict: NotApply}, {Tier: TierT2, Verdict: NotMet, Reason: "the log says FAIL"}},
			Evidence:    []Evidence{{Source: "artifacts/log:2", Quote: "FAIL", Tier: TierT2}}},
	}}
	got, _ := json.Marshal(r.Verdict())
	want := `{"turn":3,"met":false,"stakes":"default","predicates":[{"id":"a","type":"deterministic","statement":"s","verdict":"met","confidence":100,"reason":"true"},` +
		`{"id":"b","type":"judged","verdict":"not_met","confidence":80,"reason":"the log says FAIL","evidence":[{"source":"artifacts/log:2","quote":"FAIL","tier":"T2"}]}]}`
	if string(got) != want {
		t.Fatalf("verdict\n got %s\nwant %s", got, want)
	}
}
