package engine_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
)

// gateOnlySpec's gate function has an intent: its question.
const gateOnlySpec = `version: "0.2"
functions:
  ship:
    mode: gate
    intent: "Ship it?"
flows:
  main:
    input: {}
    steps:
      - id: build
        intent: "build"
      - id: release
        function: ship
        depends_on: [build]
        on_approve: ~
        on_revise: build
        on_kill: ~
`

// TestGateReviews: the list built from summaries is PendingReviews' without
// the artifacts — question, outcomes, deadline, approver, order — for gates
// with and without an intent; a summary without Review (written
// before it existed) falls back to the state, and is skipped when the
// stored spec no longer parses, as PendingReviews skips it.
func TestGateReviews(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	ctx := context.Background()
	s, st, clk := newService()
	var ids []string
	for _, spec := range []string{svcSpec, gateOnlySpec, svcSpec} {
		clk.Add(1e9)
		out, err := s.Plan(ctx, spec, "main", nil, engine.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id := engine.FlowIDOf(out)
		ids = append(ids, id)
		first := map[string]string{svcSpec: "a", gateOnlySpec: "build"}[spec]
		must(t)(s.StepDone(ctx, engine.StepReport{FlowID: id, StepID: first, Result: map[string]any{"ok": true, "v": 1}}))
		if spec == svcSpec {
			must(t)(s.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "b", Result: map[string]any{"b": 2}}))
		}
	}
	// One more runs: not a gate.
	clk.Add(1e9)
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))

	full, err := s.Query().PendingReviews(ctx)
	if err != nil || len(full) != 3 {
		t.Fatalf("PendingReviews: %d, %v", len(full), err)
	}
	want := make([]review.PendingReview, len(full))
	for i, r := range full {
		r.Artifacts = review.Artifacts{}
		want[i] = r
	}
	got, err := s.Query().GateReviews(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GateReviews:\n%+v\nwant\n%+v", got, want)
	}
	for _, r := range got {
		q := map[string]string{"release": "Ship it?", "review": "Approve step 'review' of flow 'main'?"}[r.StepID]
		if r.Question != q || len(r.Outcomes) != 3 {
			t.Fatalf("question and outcomes of %s: %+v", r.StepID, r)
		}
	}

	// The first flow's summary as a schema-3 store returns it (no Review):
	// read from its state, the same review. The third's, and its spec no
	// longer parses: skipped.
	rewrite := func(id string, broken bool) {
		t.Helper()
		if err := st.Update(ctx, func(tx engine.Tx) error {
			cur, err := tx.Get(id)
			if err != nil {
				return err
			}
			sum := engine.Summarize(cur, nil)
			if sum.Review != nil {
				t.Fatalf("Summarize without the flow set Review: %+v", sum.Review)
			}
			if broken {
				cur.RawSpec = "flows: [not a mapping"
			}
			expect := cur.Stamp(clk.Now())
			return tx.Put(cur, sum, expect)
		}); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(ids[0], false)
	if got, err := s.Query().GateReviews(ctx); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("GateReviews with a summary lacking Review:\n%+v (%v)\nwant\n%+v", got, err, want)
	}
	rewrite(ids[2], true)
	var rest []review.PendingReview
	for _, r := range want {
		if r.FlowID != ids[2] {
			rest = append(rest, r)
		}
	}
	if got, err := s.Query().GateReviews(ctx); err != nil || len(rest) != 2 || !reflect.DeepEqual(got, rest) {
		t.Fatalf("GateReviews with a broken spec and no Review:\n%+v (%v)\nwant\n%+v", got, err, rest)
	}
}
