package engine

import (
	"testing"

	"github.com/stratum-go/stratum/review"
)

const specReviseFeedback = `version: "0.2"
functions:
  approve_it:
    mode: gate
flows:
  main:
    input: {}
    max_rounds: 3
    steps:
      - id: plan
        intent: "plan"
      - id: work
        intent: "work"
        depends_on: [plan]
        ensure: ["result.ok == True"]
        retries: 2
      - id: check
        intent: "check"
        depends_on: [work]
      - id: review
        function: approve_it
        depends_on: [check]
        on_approve: ~
        on_revise: work
        on_kill: ~
`

// A revise reaches the worker: the dispatch of the on_revise target carries
// the decision that sent it back (gate, round, rationale, reviewer,
// channel) — on its retries too — until it completes in the new round; no
// other dispatch carries it, and none before the first revise.
func TestReviseFeedback(t *testing.T) {
	f, r := plan(t, specReviseFeedback, "main", nil)
	noKey(t, r, "revise_feedback")
	r = f.stepDone("plan", map[string]any{})
	noKey(t, r, "revise_feedback")
	r = f.stepDone("work", map[string]any{"ok": true})
	noKey(t, r, "revise_feedback")
	f.stepDone("check", map[string]any{})

	r = f.resolve("review", review.Revise, func(d *review.Decision) { d.Rationale = "add tests"; d.Reviewer = "ann"; d.Channel = review.ChannelTUI })
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "work",
		"revise_feedback": map[string]any{"gate": "review", "round": 0, "rationale": "add tests", "reviewer": "ann", "channel": "tui"}})
	fb := map[string]any{"gate": "review", "round": 0, "rationale": "add tests", "reviewer": "ann", "channel": "tui"}
	r = f.do(resumeFlow)
	expect(t, r, map[string]any{"step_id": "work", "revise_feedback": fb})
	r = f.stepDone("work", map[string]any{"ok": false}) // a retry of the revised step keeps it
	expect(t, r, map[string]any{"status": "ensure_failed", "step_id": "work", "revise_feedback": fb})
	r = f.stepDone("work", map[string]any{"ok": true})
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "check"})
	noKey(t, r, "revise_feedback")
	f.stepDone("check", map[string]any{})

	// A second revise replaces it with the decision of its round, also
	// over MCP with an empty rationale.
	r = f.resolve("review", review.Revise, func(d *review.Decision) {
		d.Rationale, d.Reviewer, d.Channel, d.ResolvedBy = "", "mcp:claude", review.ChannelMCP, review.Agent
	})
	expect(t, r, map[string]any{"step_id": "work",
		"revise_feedback": map[string]any{"gate": "review", "round": 1, "rationale": "", "reviewer": "mcp:claude", "channel": "mcp"}})

	// The typed dispatch carries the same.
	res, err := resumeFlow(f.st, f.env)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := res.Outcome.(*StepDispatch)
	if !ok || d.ReviseFeedback == nil || d.ReviseFeedback.Round != 1 || d.ReviseFeedback.Reviewer != "mcp:claude" {
		t.Fatalf("typed dispatch %+v", res.Outcome)
	}
}

func TestReviseFeedbackPrompt(t *testing.T) {
	f := &ReviseFeedback{Gate: "review", Round: 2, Rationale: "cover the error path", Reviewer: "ann", Channel: "tui"}
	want := "The reviewer sent this back (gate review, round 2, ann via tui): cover the error path\nAddress this feedback in this attempt."
	if got := f.Prompt(); got != want {
		t.Fatalf("got %q", got)
	}
	if got := (&ReviseFeedback{Gate: "g"}).Prompt(); got != "The reviewer sent this back (gate g, round 0, a reviewer): (no rationale given)\nAddress this feedback in this attempt." {
		t.Fatalf("got %q", got)
	}
}
