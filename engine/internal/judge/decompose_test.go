package judge

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestDecompose(t *testing.T) {
	tests := []struct {
		answer  string
		err     error
		applied bool
		reason  string
		n       int
	}{
		{answer: "```json\n{\"predicates\": [{\"id\": \"p1\", \"type\": \"verified\", \"statement\": \"the tests pass\"}, {\"id\": \"p2\", \"type\": \"judged\", \"statement\": \"clear\"}]}\n```", applied: true, n: 2},
		{answer: "Sure! {\"predicates\": [{\"id\": \"p1\", \"type\": \"deterministic\", \"statement\": \"x\"}]} hope it helps", applied: true, n: 1},
		{answer: `{"predicates": []}`, reason: "decompose_error:ValidationError"},
		{answer: `{"predicates": [{"id": "p1", "type": "obvious", "statement": "x"}]}`, reason: "decompose_error:ValidationError"},
		{answer: `{"predicates": [{"id": "p1", "type": "verified"}]}`, reason: "decompose_error:ValidationError"},
		{answer: `{"predicates": [` + strings.Repeat(`{"id": "p", "type": "verified", "statement": "s"},`, 6) + `{"id": "p", "type": "verified", "statement": "s"}]}`, reason: "decompose_error:ValidationError"},
		{answer: "no json here", reason: "decompose_error:JSONDecodeError"},
		{err: errors.New("401"), reason: "decompose_error:CompletionError"},
	}
	for i, tt := range tests {
		var prompt string
		d := Decompose(context.Background(), func(_ context.Context, p string) (string, error) { prompt = p; return tt.answer, tt.err }, "Add a --json flag", "edited main.go", "m")
		if d.Applied != tt.applied || d.Reason != tt.reason || len(d.Predicates) != tt.n || d.Model != "m" || d.Predicates == nil {
			t.Errorf("%d: %+v", i, d)
		}
		if tt.applied && d.Predicates[0].AppliedGate != 7 {
			t.Errorf("%d: applied_gate %d", i, d.Predicates[0].AppliedGate)
		}
		if !strings.Contains(prompt, "USER REQUEST:\nAdd a --json flag") || !strings.Contains(prompt, "WORK PERFORMED (tool summary):\nedited main.go") {
			t.Errorf("%d: prompt %q", i, prompt)
		}
	}
}
