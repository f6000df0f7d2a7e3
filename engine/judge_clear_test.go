package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// judgeClearSpec: a judge step (check) before another (verify) that routes
// on_fail back to prep, and a gate whose revise goes back to check.
const judgeClearSpec = `version: "0.3"
functions:
  review: {mode: gate}
flows:
  main:
    input: {}
    steps:
      - {id: prep, intent: "prepare"}
      - id: check
        depends_on: [prep]
        ensure: ["result.met == True"]
        judge:
          predicates:
            - {id: p1, type: deterministic, statement: "file_exists('artifacts/a.txt')"}
      - id: verify
        depends_on: [check]
        ensure: ["result.met == True"]
        on_fail: prep
        judge:
          predicates:
            - {id: p2, type: deterministic, statement: "file_exists('artifacts/b.txt')"}
      - {id: gate, function: review, depends_on: [verify], on_approve: null, on_revise: check, on_kill: null}
`

// judge_history and judge_outcome of the steps a revise or an on_fail
// route clears are cleared with their outputs, as the original's
// _clear_from does; the step whose failure routes on_fail keeps its own.
func TestJudgeHistoryClearedWithTheSteps(t *testing.T) {
	svc, _, _ := newService()
	ctx := context.Background()
	out, err := svc.Plan(ctx, judgeClearSpec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := out.(*engine.StepDispatch).FlowID
	done := func(step string, result any) engine.Outcome {
		t.Helper()
		o, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: step, Result: result})
		if err != nil {
			t.Fatalf("step_done %s: %v", step, err)
		}
		return o
	}
	judged := func(step string, met bool) {
		t.Helper()
		v := "met"
		if !met {
			v = "not_met"
		}
		turn := engine.JudgeTurn{FlowID: id, StepID: step,
			History: []state.JudgeEntry{{Turn: 1, PredicateID: "p", Tier: "t1", Verdict: v, Reason: "r"}},
			Outcome: json.RawMessage(`{"met":` + map[bool]string{true: "true", false: "false"}[met] + `,"predicate_results":[]}`)}
		if _, err := svc.RecordJudge(ctx, turn); err != nil {
			t.Fatal(err)
		}
		done(step, map[string]any{"met": met})
	}
	judgeOf := func() (hist, outcome []string) {
		t.Helper()
		a, err := svc.Audit(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.Judge != nil {
			for k := range a.Judge.History {
				hist = append(hist, k)
			}
			for k := range a.Judge.Outcome {
				outcome = append(outcome, k)
			}
		}
		return hist, outcome
	}
	want := func(what string, steps ...string) {
		t.Helper()
		hist, outcome := judgeOf()
		if !sameSet(hist, steps) || !sameSet(outcome, steps) {
			t.Fatalf("%s: judge_history of %v, judge_outcome of %v; want %v", what, hist, outcome, steps)
		}
	}

	done("prep", map[string]any{})
	judged("check", true)
	judged("verify", false) // one attempt: on_fail routes to prep, clearing check (verify keeps its own)
	want("after on_fail", "verify")
	done("prep", map[string]any{})
	judged("check", true)
	judged("verify", true)
	want("before the gate", "check", "verify")
	if _, err := svc.GateResolve(ctx, id, review.Decision{StepID: "gate", Outcome: review.Revise, Rationale: "again",
		ResolvedBy: review.Human, Channel: review.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	want("after revise to check")
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[string]bool{}
	for _, x := range a {
		in[x] = true
	}
	for _, x := range b {
		if !in[x] {
			return false
		}
	}
	return true
}

// A judge turn recorded with its verdict is a judge_verdict event carrying
// it (the TUI's Trace pane reads it); the stored event reads back the same.
func TestRecordJudgeEmitsVerdict(t *testing.T) {
	svc, st, _ := newService()
	ctx := context.Background()
	out, err := svc.Plan(ctx, judgeClearSpec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := out.(*engine.StepDispatch).FlowID
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "prep", Result: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	v := &state.JudgeVerdict{Turn: 1, Predicates: []state.PredicateVerdict{{ID: "p1", Verdict: "not_met", Confidence: 70, Reason: "missing",
		Evidence: []state.JudgeEvidence{{Source: "artifacts/a.txt:3", Quote: "nothing here", Tier: "T2"}}}}}
	if _, err := svc.RecordJudge(ctx, engine.JudgeTurn{FlowID: id, StepID: "check", Outcome: json.RawMessage(`{}`), Verdict: v}); err != nil {
		t.Fatal(err)
	}
	var evs []engine.Event
	if err := st.View(ctx, func(tx engine.Tx) (err error) { evs, err = tx.FlowEvents(id); return err }); err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	b, _ := json.Marshal(last)
	var back engine.Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(v)
	for _, ev := range []engine.Event{last, back} {
		p, _ := ev.Data.(engine.JudgeVerdict)
		got, _ := json.Marshal(p.Judge)
		if ev.Type != engine.EventJudgeVerdict || ev.StepID != "check" || string(got) != string(want) {
			t.Fatalf("last event %s, want a judge_verdict of check carrying %s", b, want)
		}
	}
}

// A checkpoint saves judge_history and judge_outcome and a revert restores
// them, as the original's commit/revert.
func TestCheckpointKeepsJudgeProgress(t *testing.T) {
	svc, _, _ := newService()
	ctx := context.Background()
	out, err := svc.Plan(ctx, judgeClearSpec, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := out.(*engine.StepDispatch).FlowID
	opt := engine.ReportOptions{Channel: review.ChannelMCP}
	judged := func(step string) {
		t.Helper()
		if _, err := svc.RecordJudge(ctx, engine.JudgeTurn{FlowID: id, StepID: step, Outcome: json.RawMessage(`{"met":true}`),
			History: []state.JudgeEntry{{Turn: 1, PredicateID: "p", Tier: "T1", Verdict: "met"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: step, Result: map[string]any{"met": true}}); err != nil {
			t.Fatal(err)
		}
	}
	steps := func() []string {
		t.Helper()
		a, err := svc.Audit(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		if a.Judge != nil {
			for k := range a.Judge.History {
				if _, ok := a.Judge.Outcome[k]; ok {
					out = append(out, k)
				}
			}
		}
		return out
	}
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "prep", Result: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	judged("check")
	if _, err := svc.Commit(ctx, id, "after-check", opt); err != nil {
		t.Fatal(err)
	}
	judged("verify")
	if got := steps(); !sameSet(got, []string{"check", "verify"}) {
		t.Fatalf("before the revert: %v", got)
	}
	if _, err := svc.Revert(ctx, id, "after-check", opt); err != nil {
		t.Fatal(err)
	}
	if got := steps(); !sameSet(got, []string{"check"}) {
		t.Fatalf("after the revert: judge progress of %v, want [check]", got)
	}
}
