package tui

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

const judgeTraceSpec = `version: "0.3"
flows:
  ship:
    input: {}
    steps:
      - id: verify
        ensure: ["result.met == True"]
        judge:
          predicates:
            - {id: out, type: deterministic, statement: "file_exists('artifacts/out.txt')"}
            - {id: tests, type: verified, statement: "the tests pass"}
      - id: review
        depends_on: [verify]
        ensure: ["result.met == True"]
        judge:
          predicates:
            - {id: msg, type: judged, statement: "the error message says what to do"}
            - {id: docs, type: judged, statement: "the README documents the flag"}
`

// judgeTraceFixture is a flow whose first judge step was met (its
// verifier citing the staged files) and whose second was not (one
// predicate not met with evidence, one ambiguous without any).
func judgeTraceFixture(t *testing.T) Source {
	t.Helper()
	svc, _ := tickingService(time.Second, fixedID("0000000d-0000-4000-8000-000000000000"))
	ctx := context.Background()
	out, err := svc.Plan(ctx, judgeTraceSpec, "ship", nil, engine.PlanOptions{SpecFile: "ship.stratum.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	id := out.(*engine.StepDispatch).FlowID
	turn := func(step string, v *state.JudgeVerdict) {
		t.Helper()
		if _, err := svc.RecordJudge(ctx, engine.JudgeTurn{FlowID: id, StepID: step, Outcome: json.RawMessage(`{}`), Verdict: v}); err != nil {
			t.Fatal(err)
		}
		var e *engine.Error // a verdict not met exhausts the step's one attempt: the flow fails
		if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: step, Result: map[string]any{"met": v.Met}}); err != nil && !(errors.As(err, &e) && e.Committed()) {
			t.Fatal(err)
		}
	}
	turn("verify", &state.JudgeVerdict{Turn: 1, Met: true, Stakes: "default", Predicates: []state.PredicateVerdict{
		{ID: "out", Type: "deterministic", Statement: "file_exists('artifacts/out.txt')", Verdict: "met", Confidence: 10, Reason: "deterministic check"},
		{ID: "tests", Type: "verified", Statement: "the tests pass", Verdict: "met", Confidence: 9, Reason: "the test log ends with ok",
			Evidence: []state.JudgeEvidence{{Source: "artifacts/test.log:41", Quote: "ok  github.com/acme/cli 0.8s", Tier: "T2"}}},
	}})
	turn("review", &state.JudgeVerdict{Turn: 1, Stakes: "default", Predicates: []state.PredicateVerdict{
		{ID: "msg", Type: "judged", Statement: "the error message says what to do", Verdict: "not_met", Confidence: 8,
			Reason:   "the message names the flag but not its values",
			Evidence: []state.JudgeEvidence{{Source: "modified/cmd/root.go:88", Quote: `return errors.New("bad --mode")`, Tier: "T2"}}},
		{ID: "docs", Type: "judged", Statement: "the README documents the flag", Verdict: "ambiguous", Confidence: 4, Reason: "no README was staged"},
	}})
	return ServiceSource(svc)
}

// The Trace pane shows each judge turn's verdict — met or not, which
// predicates were not — and, opened, each predicate's verdict, confidence,
// reason and the evidence it cites. Golden frames at 80×24, colour off.
func TestGoldenJudgeVerdictTrace(t *testing.T) {
	m := newModel(t, judgeTraceFixture(t), 80, 24)
	press(m, "2")
	frame := m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "trace_judge_80x24", frame)
	for _, want := range []string{"⚖ verify judged met (turn 1): 2/2 predicates met", "⚖ review judged not met (turn 1): msg not met, docs"} {
		if !strings.Contains(frame, want) {
			t.Errorf("the Trace pane lacks %q:\n%s", want, frame)
		}
	}
	for _, c := range []struct{ row, golden string }{
		{"verify judged", "trace_judge_met_open_80x24"},
		{"review judged", "trace_judge_not_met_open_80x24"},
	} {
		selectRow(t, m, c.row)
		press(m, "enter")
		frame = m.View()
		checkFrame(t, frame, 80, 24)
		golden(t, c.golden, frame)
		press(m, "enter")
	}
}

// judgeRow's row and detail, by verdict.
func TestJudgeRow(t *testing.T) {
	for _, c := range []struct {
		name   string
		v      *state.JudgeVerdict
		text   string
		failed bool
		detail []string
	}{
		{"met", &state.JudgeVerdict{Turn: 2, Met: true, Predicates: []state.PredicateVerdict{{ID: "a", Verdict: "met", Confidence: 90,
			Evidence: []state.JudgeEvidence{{Source: "artifacts/x:1", Quote: "q", Tier: "T2"}}}}},
			"⚖ s judged met (turn 2): 1/1 predicates met", false, []string{`✓ a met · confidence 90`, "evidence artifacts/x:1 (T2): “q”"}},
		{"not met", &state.JudgeVerdict{Turn: 1, Predicates: []state.PredicateVerdict{{ID: "a", Verdict: "met"}, {ID: "b", Verdict: "not_met", Reason: "r"},
			{ID: "c", Verdict: "ambiguous"}}},
			"⚖ s judged not met (turn 1): b not met, c ambiguous", true, []string{"✗ b not met · confidence 0", "  reason: r", "  no evidence cited"}},
		{"no verdict", nil, "⚖ s judged", false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, detail, failed := judgeRow("s", c.v)
			if text != c.text || failed != c.failed {
				t.Errorf("row %q failed %v, want %q %v", text, failed, c.text, c.failed)
			}
			for _, w := range c.detail {
				if !strings.Contains(detail, w) {
					t.Errorf("detail lacks %q:\n%s", w, detail)
				}
			}
		})
	}
}
