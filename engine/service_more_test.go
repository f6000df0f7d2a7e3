package engine_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

const svcIterSpec = `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - id: tune
        intent: "tune"
        max_iterations: 3
        score_expr: "result.score"
      - id: find
        intent: "find"
        max_iterations: 2
      - id: last
        intent: "last"
`

// The scored best result replaces the submitted one at step_done; a
// non-accumulating iterated step gets no accumulated keys (README, "Deliberate differences").
func TestServiceIterationHooks(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	must(t)(s.Plan(ctx, svcIterSpec, "main", nil, engine.PlanOptions{}))
	r := must(t)(s.IterationStart(ctx, "f1", "tune", engine.ReportOptions{}))
	if r["status"] != "iteration_started" {
		t.Fatalf("%v", r)
	}
	for _, sc := range []float64{0.5, 0.9, 0.7} {
		r = must(t)(s.IterationReport(ctx, "f1", "tune", map[string]any{"score": sc}, engine.ReportOptions{}))
	}
	if r["status"] != "iteration_exit" {
		t.Fatalf("%v", r)
	}
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "tune", Result: map[string]any{"score": 0.1}}))
	if r["step_id"] != "find" {
		t.Fatalf("%v", r)
	}
	st, _ := s.Query().Get(ctx, "f1")
	if got := st.StepOutputs["tune"].(map[string]any)["score"]; got != 0.9 {
		t.Fatalf("best result not substituted: %v", st.StepOutputs["tune"])
	}
	if st.IterationOutcome["tune"] != "" {
		t.Errorf("outcome not consumed: %v", st.IterationOutcome)
	}
	must(t)(s.IterationStart(ctx, "f1", "find", engine.ReportOptions{}))
	must(t)(s.IterationReport(ctx, "f1", "find", map[string]any{"n": 1}, engine.ReportOptions{}))
	must(t)(s.IterationReport(ctx, "f1", "find", map[string]any{"n": 2}, engine.ReportOptions{}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "find", Result: map[string]any{"n": 2}}))
	st, _ = s.Query().Get(ctx, "f1")
	out := st.StepOutputs["find"].(map[string]any)
	if _, leak := out["accumulated"]; leak {
		t.Errorf("accumulated leaked into a non-accumulating step: %v", out)
	}
}

func TestServiceCheckpointsAndLists(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	r := must(t)(s.Commit(ctx, "f1", " start ", engine.ReportOptions{}))
	if r["status"] != "committed" || r["label"] != "start" {
		t.Fatalf("%v", r)
	}
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	r = must(t)(s.Revert(ctx, "f1", "start", engine.ReportOptions{}))
	if r["step_id"] != "a" || r["reverted_to"] != "start" {
		t.Fatalf("%v", r)
	}
	r = must(t)(s.Revert(ctx, "f1", "nope", engine.ReportOptions{}))
	if r["error_type"] != "checkpoint_not_found" {
		t.Fatalf("%v", r)
	}
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	list, err := s.Query().List(ctx, engine.ListFilter{Status: state.StatusRunning})
	if err != nil || len(list) != 2 {
		t.Fatalf("list %+v %v", list, err)
	}
	r = must(t)(s.SkipStep(ctx, "f2", "a", "skip it", engine.ReportOptions{}))
	if r["step_id"] != "b" {
		t.Fatalf("%v", r)
	}
}

func TestServiceRelease(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newService()
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	l := state.Lease{ID: "r1", ExpiresAt: clk.Now().Add(60e9)}
	if err := s.Leases().Claim(ctx, "f1", l); err != nil {
		t.Fatal(err)
	}
	if err := s.Leases().Release(ctx, "f1", "r1"); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Query().Get(ctx, "f1")
	if st.Owner != nil || st.Driver != state.DriverRunner {
		t.Fatalf("owner %+v driver %q", st.Owner, st.Driver)
	}
	r := must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	if r["step_id"] != "b" {
		t.Fatalf("%v", r)
	}
}

func TestNewUUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		id := engine.NewUUID()
		if !re.MatchString(id) || seen[id] {
			t.Fatalf("bad or repeated uuid %q", id)
		}
		seen[id] = true
	}
}

func TestServicePendingReviews(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newService()
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	prs, err := s.Query().PendingReviews(ctx)
	if err != nil || len(prs) != 0 {
		t.Fatalf("%+v %v", prs, err)
	}
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "b", Result: map[string]any{"b": 2}}))
	prs, err = s.Query().PendingReviews(ctx)
	if err != nil || len(prs) != 1 {
		t.Fatalf("%+v %v", prs, err)
	}
	pr := prs[0]
	if pr.ReviewID != "f1/review/0" || pr.StepID != "review" || pr.Deadline == nil || !pr.Deadline.Equal(clk.Now().Add(30e9)) ||
		len(pr.Outcomes) != 3 || pr.OnTimeout != "kill" || pr.Approver != "any" || pr.Question == "" {
		t.Fatalf("review %+v", pr)
	}
	outs := pr.Artifacts.StepOutputs
	if len(outs) != 2 {
		t.Errorf("artifacts %+v", pr.Artifacts)
	}
}

// Concurrent decisions on one gate: exactly one wins, the others are refused
// (first-writer-wins, DESIGN §6).
func TestServiceConcurrentDecisions(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "b", Result: map[string]any{}}))
	const n = 8
	results := make(chan engine.Response, n)
	for i := 0; i < n; i++ {
		go func() {
			out, err := s.GateResolve(ctx, "f1", review.Decision{ReviewID: "f1/review/0", Outcome: review.Approve, ResolvedBy: review.Human, Channel: review.ChannelTUI})
			if err != nil && !errors.Is(err, review.ErrAlreadyDecided) {
				t.Errorf("a losing decision must be review.ErrAlreadyDecided, got %v", err)
			}
			r, err := wireOf(out, err)
			if err != nil {
				t.Error(err)
			}
			results <- r
		}()
	}
	wins := 0
	for i := 0; i < n; i++ {
		r := <-results
		switch {
		case r["status"] == "complete":
			wins++
		case r["error_type"] != "flow_already_complete":
			t.Errorf("unexpected answer %v", r)
		}
	}
	if wins != 1 {
		t.Fatalf("%d decisions won", wins)
	}
	st, _ := s.Query().Get(ctx, "f1")
	gates := 0
	for _, r := range st.Records {
		if r.Type == state.RecordGate {
			gates++
		}
	}
	if gates != 1 {
		t.Fatalf("%d gate records", gates)
	}
}

func TestServiceMiscPaths(t *testing.T) {
	ctx := context.Background()
	s, store, _ := newService()
	r := must(t)(s.Audit(ctx, "nope"))
	if r["error_type"] != "flow_not_found" {
		t.Fatalf("%v", r)
	}
	src := `version: "0.3"
flows:
  main:
    input: {n: {type: integer}, tasks: {type: array}}
    steps:
      - id: it
        intent: "iterate"
        max_iterations: 3
      - id: run
        type: parallel_dispatch
        agent: claude
        source: "$.input.tasks"
        intent_template: "do {id}"
        depends_on: [it]
`
	r = must(t)(s.Plan(ctx, src, "main", map[string]any{"n": "x"}, engine.PlanOptions{}))
	if r["error_type"] != "invalid_input" || store.Len() != 0 {
		t.Fatalf("invalid input: %v (stored %d)", r, store.Len())
	}
	must(t)(s.Plan(ctx, src, "main", map[string]any{"n": 1, "tasks": []any{map[string]any{"id": "t1"}}}, engine.PlanOptions{}))
	must(t)(s.IterationStart(ctx, "f1", "it", engine.ReportOptions{}))
	r = must(t)(s.IterationAbort(ctx, "f1", "it", "enough", engine.ReportOptions{}))
	if r["status"] != "iteration_aborted" {
		t.Fatalf("%v", r)
	}
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "it", Result: map[string]any{}}))
	if r["status"] != "parallel_dispatch" {
		t.Fatalf("%v", r)
	}
	r = must(t)(s.ParallelDone(ctx, engine.ParallelReport{FlowID: "f1", StepID: "run", TaskResults: []any{map[string]any{"task_id": "t1", "status": "complete"}}, MergeStatus: "clean"}))
	if r["status"] != "complete" {
		t.Fatalf("%v", r)
	}
}

func TestServiceImplausibleIDs(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	for _, id := range []string{"", "a\x00b", strings.Repeat("x", 600)} {
		r := must(t)(s.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{}}))
		if r["error_type"] != "flow_not_found" {
			t.Fatalf("%q: %v", id, r)
		}
		r = must(t)(s.Audit(ctx, id))
		if r["error_type"] != "flow_not_found" {
			t.Fatalf("%q: %v", id, r)
		}
	}
}
