package engine

import (
	"strings"
	"testing"
	"time"
)

// An ensure that touches far more data than its budget fails the attempt
// with a violation naming the expression and the budget, in bounded time
// (it ran for more than 12 minutes before the budget counted data sizes).
func TestStepDoneEnsureBudget(t *testing.T) {
	const ensure = "[result.a] * 1000000 != [result.b] * 1000000"
	src := `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: w
        intent: "work"
        ensure: ["` + ensure + `"]
`
	f, _ := plan(t, src, "main", nil)
	a := strings.Repeat("a", 4<<20)
	start := time.Now()
	r := f.stepDone("w", map[string]any{"a": a, "b": strings.Clone(a)})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("step_done took %v", d)
	}
	want := "Ensure expression '" + ensure + "' raised: expression exceeded its evaluation budget"
	vs := strs(r["violations"])
	if len(vs) != 1 || !strings.HasPrefix(vs[0], want) {
		t.Fatalf("got %s, want a violation starting %q", show(r), want)
	}
}
