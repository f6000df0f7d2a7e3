package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

const specGate = `version: "0.2"
functions:
  approve_it:
    mode: gate
    timeout: 60
flows:
  main:
    input: {}
    max_rounds: 2
    steps:
      - id: work
        intent: "work"
      - id: review
        function: approve_it
        depends_on: [work]
        on_approve: ~
        on_revise: work
        on_kill: ~
`

func atGate(t *testing.T, src string) *fixture {
	t.Helper()
	f, _ := plan(t, src, "main", nil)
	r := f.stepDone("work", map[string]any{"v": 1})
	if r["status"] != "await_gate" {
		t.Fatalf("not at the gate: %s", show(r))
	}
	return f
}

func TestAwaitGateDispatch(t *testing.T) {
	f, _ := plan(t, specGate, "main", nil)
	f.later(10 * time.Second)
	r := f.stepDone("work", map[string]any{"v": 1})
	expect(t, r, map[string]any{
		"status": "await_gate", "flow_id": f.st.FlowID, "step_number": 2, "total_steps": 2, "step_id": "review",
		"step_mode": "function", "function": "approve_it", "agent": nil, "on_approve": nil, "on_revise": "work",
		"on_kill": nil, "timeout": 60, "approver": "any",
		"deadline": t0.Add(70 * time.Second).Format(time.RFC3339Nano),
	})
	if f.st.Status != state.StatusAwaitingGate || f.st.Gate == nil || f.st.Gate.StepID != "review" || f.st.Gate.OnTimeout != "kill" {
		t.Fatalf("state %q gate %+v", f.st.Status, f.st.Gate)
	}
	r = f.stepDone("review", map[string]any{})
	expect(t, r, map[string]any{"status": "error", "error_type": "gate_step_requires_gate_resolve",
		"message": "Step 'review' is a gate step. Use stratum_gate_resolve to resolve it."})
	noKey(t, r, "success")
	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return skipStep(st, env, "review", "no")
	})
	expect(t, r, map[string]any{"error_type": "execution_error"})
	if !strings.Contains(r["message"].(string), "gate step") {
		t.Errorf("message %v", r["message"])
	}
}

// §2.10 validation order.
func TestGateValidationOrder(t *testing.T) {
	bad := func(d *review.Decision) { d.Outcome = "maybe"; d.ResolvedBy = "robot"; d.StepID = "nope" }
	// Not at a gate: not_a_gate_step wins over every other problem.
	f, _ := plan(t, specGate, "main", nil)
	r := f.resolve("review", review.Approve, bad)
	expect(t, r, map[string]any{"status": "error", "error_type": "not_a_gate_step", "message": "Step 'work' is not a gate step"})

	f = atGate(t, specGate)
	cases := []struct {
		name   string
		mutate func(*review.Decision)
		typ    string
		msg    string
	}{
		{"outcome", bad, "invalid_outcome", "outcome must be one of ['approve', 'kill', 'revise'], got 'maybe'"},
		{"resolved_by", func(d *review.Decision) { d.ResolvedBy = "robot"; d.StepID = "nope" }, "invalid_resolved_by",
			"resolved_by must be one of ['agent', 'human', 'system'], got 'robot'"},
		{"step", func(d *review.Decision) { d.StepID = "nope" }, "wrong_step", "Expected gate step 'review', got 'nope'"},
		{"stale", func(d *review.Decision) { n := 3; d.Round = &n }, "stale_round", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := showV(f.st)
			r := f.resolve("review", review.Approve, c.mutate)
			expect(t, r, map[string]any{"status": "error", "error_type": c.typ})
			if c.msg != "" {
				expect(t, r, map[string]any{"message": c.msg})
			}
			if showV(f.st) != before {
				t.Error("a refused decision changed the state")
			}
		})
	}
	r = f.resolve("review", review.Approve, func(d *review.Decision) { n := 0; d.Round = &n })
	expect(t, r, map[string]any{"status": "complete", "output": map[string]any{"v": 1}})
	r = f.resolve("review", review.Approve)
	expect(t, r, map[string]any{"status": "error", "error_type": "flow_already_complete"})
}

func TestGateApproveRecord(t *testing.T) {
	f := atGate(t, specGate)
	f.later(5 * time.Second)
	r := f.resolve("review", review.Approve)
	expect(t, r, map[string]any{"status": "complete"})
	if got := traceTypes(r["trace"]); got != "step:work gate:review" {
		t.Fatalf("trace %s", got)
	}
	g := f.st.Records[1]
	if g.Outcome != "approve" || g.Rationale != "because" || g.ResolvedBy != "human" || g.Channel != "tui" || g.Reviewer != "ann" || g.DurationMS != 5000 || g.Round != 0 || g.RoundStartStepID != nil {
		t.Errorf("gate record %+v", g)
	}
	if f.st.Gate != nil || f.st.Status != state.StatusComplete {
		t.Errorf("gate %+v status %q", f.st.Gate, f.st.Status)
	}
}

// revise archives the round; max_rounds: 2 allows exactly two revises.
func TestGateRevise(t *testing.T) {
	f := atGate(t, specGate)
	r := f.resolve("review", review.Revise)
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "work", "retries_remaining": 1})
	if f.st.Round != 1 || len(f.st.Rounds) != 1 || len(f.st.Records) != 0 || *f.st.RoundStartStepID != "work" {
		t.Fatalf("round %d rounds %v records %v", f.st.Round, f.st.Rounds, f.st.Records)
	}
	if got := recordTypes(f.st.Rounds[0]); got != "step:work gate:review" {
		t.Errorf("archived %s", got)
	}
	if len(f.st.ArchivedIterations) != 1 {
		t.Errorf("archived iterations %v", f.st.ArchivedIterations)
	}
	if _, ok := f.st.StepOutputs["work"]; ok {
		t.Error("revise did not clear from on_revise")
	}
	r = f.stepDone("work", map[string]any{"v": 2})
	expect(t, r, map[string]any{"status": "await_gate"})
	if f.st.Records[0].Round != 1 || *f.st.Records[0].RoundStartStepID != "work" {
		t.Errorf("round-1 record %+v", f.st.Records[0])
	}
	f.resolve("review", review.Revise)
	f.stepDone("work", map[string]any{"v": 3})
	r = f.resolve("review", review.Revise)
	expect(t, r, map[string]any{"status": "error", "error_type": "max_rounds_exceeded", "round": 2, "message": "Maximum rounds (2) exceeded"})
	if got := recordTypes(f.st.Records); got != "step:work gate:review" {
		t.Errorf("over-limit revise record should stay in the active trace: %s", got)
	}
	if f.st.Status != state.StatusAwaitingGate || f.st.Gate == nil {
		t.Errorf("gate not current after refused revise: %q %+v", f.st.Status, f.st.Gate)
	}
	r = f.resolve("review", review.Approve)
	expect(t, r, map[string]any{"status": "complete", "output": map[string]any{"v": 3}})
	if got := traceTypes(r["trace"]); got != "step:work gate:review gate:review" {
		t.Errorf("trace %s", got)
	}
}

func TestGateKill(t *testing.T) {
	f := atGate(t, specGate)
	r := f.resolve("review", review.Kill)
	expect(t, r, map[string]any{"status": "killed", "flow_id": f.st.FlowID})
	noKey(t, r, "output", "reason")
	if f.st.Status != state.StatusKilled || *f.st.TerminalStatus != "killed" {
		t.Fatalf("status %q", f.st.Status)
	}
	r = f.do(resumeFlow)
	expect(t, r, map[string]any{"status": "killed", "flow_id": f.st.FlowID})
}

// README, "Deliberate differences": kill with a cleanup step runs only the cleanup step, then the
// flow ends killed (with output).
func TestGateKillWithCleanup(t *testing.T) {
	src := `version: "0.2"
functions:
  g:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: work
        intent: "work"
      - id: review
        function: g
        depends_on: [work]
        on_approve: ship
        on_revise: work
        on_kill: cleanup
      - id: ship
        intent: "ship"
        depends_on: [review]
      - id: cleanup
        intent: "cleanup"
        depends_on: [ship]
      - id: after
        intent: "after cleanup"
        depends_on: [cleanup]
`
	f := atGate(t, src)
	r := f.resolve("review", review.Kill)
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "cleanup"})
	r = f.do(resumeFlow)
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "cleanup"})
	r = f.stepDone("cleanup", map[string]any{"cleaned": true})
	expect(t, r, map[string]any{"status": "killed", "output": map[string]any{"cleaned": true}})
	if f.st.Status != state.StatusKilled {
		t.Errorf("status %q", f.st.Status)
	}
	if _, ran := f.st.StepOutputs["after"]; ran {
		t.Error("a step after the cleanup step ran")
	}
	if got := recordTypes(f.st.Records); got != "step:work gate:review step:cleanup" {
		t.Errorf("records %s", got)
	}
}

const specPolicy = `version: "0.2"
functions:
  g:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: a
        intent: "A"
      - id: g1
        function: g
        policy: flag
        depends_on: [a]
        on_approve: g2
        on_revise: a
        on_kill: ~
      - id: g2
        function: g
        policy: skip
        depends_on: [g1]
        on_approve: b
        on_revise: a
        on_kill: ~
      - id: b
        intent: "B"
        depends_on: [g2]
`

func TestPolicyLoop(t *testing.T) {
	f, _ := plan(t, specPolicy, "main", nil)
	r := f.stepDone("a", map[string]any{})
	expect(t, r, map[string]any{"status": "execute_step", "step_id": "b"})
	if got := recordTypes(f.st.Records); got != "step:a policy:g1 policy:g2" {
		t.Fatalf("records %s", got)
	}
	p := f.st.Records[1]
	if p.EffectivePolicy != "flag" || p.ResolvedOutcome != "approve" || p.Rationale != "policy: flag — auto-approved" {
		t.Errorf("policy record %+v", p)
	}
	if f.st.Records[2].Rationale != "policy: skip — auto-approved" {
		t.Errorf("policy record %+v", f.st.Records[2])
	}
}

// The visited set breaks on_approve cycles between auto gates: the gate
// reached a second time is returned as await_gate.
func TestPolicyCycleGuard(t *testing.T) {
	src := strings.Replace(specPolicy, "on_approve: b", "on_approve: g1", 1)
	f, _ := plan(t, src, "main", nil)
	r := f.stepDone("a", map[string]any{})
	expect(t, r, map[string]any{"status": "await_gate", "step_id": "g1"})
	if got := recordTypes(f.st.Records); got != "step:a policy:g1 policy:g2" {
		t.Fatalf("records %s", got)
	}
	if f.st.Status != state.StatusAwaitingGate {
		t.Errorf("status %q", f.st.Status)
	}
}

// A true skip_if on a gate auto-approves it with a PolicyRecord
// effective_policy skip_if and follows on_approve (null → complete).
func TestGateSkipIf(t *testing.T) {
	src := `version: "0.2"
functions:
  g:
    mode: gate
flows:
  main:
    input: {auto: {type: boolean}}
    steps:
      - id: a
        intent: "A"
      - id: review
        function: g
        depends_on: [a]
        skip_if: "$.input.auto == True"
        skip_reason: "automatic"
        on_approve: ~
        on_revise: a
        on_kill: ~
`
	f, _ := plan(t, src, "main", map[string]any{"auto": true})
	r := f.stepDone("a", map[string]any{"x": 1})
	expect(t, r, map[string]any{"status": "complete", "output": map[string]any{"x": 1}})
	p := f.st.Records[1]
	if p.Type != state.RecordPolicy || p.EffectivePolicy != "skip_if" || p.Rationale != "automatic" || p.ResolvedOutcome != "approve" {
		t.Errorf("record %+v", p)
	}
	f, _ = plan(t, src, "main", map[string]any{"auto": false})
	r = f.stepDone("a", map[string]any{"x": 1})
	expect(t, r, map[string]any{"status": "await_gate"})
}

func TestCheckTimeouts(t *testing.T) {
	f, _ := plan(t, specGate, "main", nil)
	r := f.do(checkTimeouts)
	// The original's no_timeout carries no flow_id.
	expect(t, r, map[string]any{"status": "no_timeout", "message": "Current step is not a gate step"})
	noKey(t, r, "flow_id")
	f.stepDone("work", map[string]any{"v": 1}) // gate dispatched at t0 → deadline t0+60s
	f.later(30 * time.Second)
	r = f.do(checkTimeouts)
	expect(t, r, map[string]any{"status": "no_timeout", "remaining_seconds": 30})
	// A resume does not re-stamp the persisted deadline.
	r = f.do(resumeFlow)
	expect(t, r, map[string]any{"status": "await_gate", "deadline": t0.Add(60 * time.Second).Format(time.RFC3339Nano)})
	f.later(31 * time.Second)
	r = f.do(checkTimeouts)
	expect(t, r, map[string]any{"status": "killed", "reason": "timeout", "flow_id": f.st.FlowID})
	g := f.st.Records[len(f.st.Records)-1]
	if g.Type != state.RecordGate || g.Outcome != "kill" || g.ResolvedBy != "system" || g.Channel != "timeout" || g.Rationale != "timeout" {
		t.Errorf("record %+v", g)
	}
	r = f.do(checkTimeouts)
	expect(t, r, map[string]any{"status": "killed", "reason": "timeout", "flow_id": f.st.FlowID, "total_duration_ms": 61000})
}

func TestOnTimeoutVariants(t *testing.T) {
	for _, c := range []struct {
		onTimeout, status, step string
	}{
		{"approve", "complete", ""},
		{"revise", "execute_step", "work"},
		{"kill", "killed", ""},
	} {
		t.Run(c.onTimeout, func(t *testing.T) {
			src := strings.Replace(specGate, "timeout: 60", "timeout: 60\n    on_timeout: "+c.onTimeout, 1)
			f := atGate(t, src)
			f.later(2 * time.Minute)
			r := f.do(checkTimeouts)
			expect(t, r, map[string]any{"status": c.status})
			if c.step != "" {
				expect(t, r, map[string]any{"step_id": c.step})
			}
			if g := f.st.Gate; g != nil && g.Round == 0 {
				t.Errorf("gate still pending: %+v", g)
			}
		})
	}
}

func TestApproverHuman(t *testing.T) {
	src := strings.Replace(specGate, "timeout: 60", "approver: human", 1)
	f := atGate(t, src)
	r := f.resolve("review", review.Approve, func(d *review.Decision) { d.Channel = review.ChannelMCP; d.ResolvedBy = review.Agent })
	expect(t, r, map[string]any{"status": "error", "error_type": "gate_requires_human"})
	if !strings.Contains(r["message"].(string), "human") {
		t.Errorf("message %v", r["message"])
	}
	r = f.resolve("review", review.Approve, func(d *review.Decision) { d.Channel = review.ChannelCLI })
	expect(t, r, map[string]any{"status": "complete"})
}
