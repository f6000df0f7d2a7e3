package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// humanSpec: inner waits at an approver: human gate; outer runs inner as a
// child (sub), deep runs it as a grandchild (through middle).
const humanSpec = `version: "0.2"
functions:
  hg:
    mode: gate
    approver: human
flows:
  inner:
    input: {}
    steps:
      - id: work
        intent: "W"
      - id: signoff
        function: hg
        depends_on: [work]
        on_approve: ~
        on_revise: work
        on_kill: ~
  middle:
    input: {}
    steps:
      - id: nest
        flow: inner
  outer:
    input: {}
    steps:
      - id: prep
        intent: "P"
      - id: sub
        flow: inner
        depends_on: [prep]
      - id: after
        intent: "A"
        depends_on: [sub]
  deep:
    input: {}
    steps:
      - id: prep
        intent: "P"
      - id: sub
        flow: middle
        depends_on: [prep]
      - id: after
        intent: "A"
        depends_on: [sub]
`

// humanGateBelow plans flow (outer or deep), commits "start", reports prep
// and drives the innermost child to its human gate. It returns the parent's
// id and the id of the flow waiting at the gate.
func humanGateBelow(t *testing.T, s *engine.Service, flow string) (parent, gated string) {
	t.Helper()
	ctx := context.Background()
	r := must(t)(s.Plan(ctx, humanSpec, flow, nil, engine.PlanOptions{}))
	parent, _ = r["flow_id"].(string)
	must(t)(s.Commit(ctx, parent, "start", engine.ReportOptions{}))
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: parent, StepID: "prep", Result: map[string]any{"p": 1}}))
	for r["status"] == "execute_flow" {
		gated, _ = r["child_flow_id"].(string)
		r, _ = r["child_step"].(engine.Response)
		if r == nil {
			t.Fatalf("no child dispatch")
		}
	}
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: gated, StepID: "work", Result: map[string]any{"w": 1}}))
	if r["status"] != "await_gate" || r["step_id"] != "signoff" {
		t.Fatalf("child not at its human gate: %v", r)
	}
	return parent, gated
}

// TestHumanGatePendingRefusesBypass: while a child (or grandchild) waits at
// an approver: human gate, nothing that would end, skip or orphan that gate
// is accepted — reports and skips of the parent's flow step, a runner's
// failed attempt on it, a revert of the parent that leaves the child behind
// (over any channel). The flows stay as they were; once a human decided, the
// parent's step can be reported.
func TestHumanGatePendingRefusesBypass(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		name string
		call func(s *engine.Service, parent string) (engine.Outcome, error)
	}{
		{"step_done", func(s *engine.Service, p string) (engine.Outcome, error) {
			return s.StepDone(ctx, engine.StepReport{FlowID: p, StepID: "sub", Result: map[string]any{"status": "complete", "output": map[string]any{"forged": true}}})
		}},
		{"skip_step", func(s *engine.Service, p string) (engine.Outcome, error) {
			return s.SkipStep(ctx, p, "sub", "no time for reviews", engine.ReportOptions{})
		}},
		{"step_attempt_failed", func(s *engine.Service, p string) (engine.Outcome, error) {
			return s.StepAttemptFailed(ctx, engine.AttemptFailure{FlowID: p, StepID: "sub", Violations: []string{"child gave up"}})
		}},
		{"revert_mcp", func(s *engine.Service, p string) (engine.Outcome, error) {
			return s.Revert(ctx, p, "start", engine.ReportOptions{Channel: review.ChannelMCP})
		}},
		{"revert_tui", func(s *engine.Service, p string) (engine.Outcome, error) {
			return s.Revert(ctx, p, "start", engine.ReportOptions{Channel: review.ChannelTUI})
		}},
	}
	for _, flow := range []string{"outer", "deep"} {
		for _, tc := range calls {
			t.Run(flow+"/"+tc.name, func(t *testing.T) {
				s, _, _ := newService()
				parent, gated := humanGateBelow(t, s, flow)
				before, _ := s.Query().Get(ctx, parent)
				out, err := tc.call(s, parent)
				e := engine.AsError(err)
				if e == nil || e.Type != engine.ErrTypeHumanGatePending {
					t.Fatalf("%s accepted while %s waits at a human gate: %v %v", tc.name, gated, engine.Wire(out, err), err)
				}
				if !strings.Contains(e.Message, gated) || !strings.Contains(e.Message, "signoff") {
					t.Errorf("message does not name the gate (%s, signoff): %s", gated, e.Message)
				}
				w := engine.Wire(nil, err)
				if w["gate_flow_id"] != gated || w["gate_step_id"] != "signoff" {
					t.Errorf("envelope: %v", w)
				}
				after, _ := s.Query().Get(ctx, parent)
				if after.Version != before.Version {
					t.Errorf("the refused call changed the parent (version %d → %d)", before.Version, after.Version)
				}
				if g, _ := s.Query().Get(ctx, gated); g.Status != state.StatusAwaitingGate {
					t.Errorf("gated child is %s", g.Status)
				}
				// A human decides; the parent's step may then be reported.
				must(t)(s.GateResolve(ctx, gated, review.Decision{StepID: "signoff", Outcome: review.Approve, ResolvedBy: review.Human, Channel: review.ChannelTUI}))
				if flow == "deep" {
					mid, _ := s.Query().Get(ctx, *after.ActiveChildFlowID)
					must(t)(s.StepDone(ctx, engine.StepReport{FlowID: mid.FlowID, StepID: "nest", Result: map[string]any{"w": 1}}))
				}
				if r := must(t)(s.StepDone(ctx, engine.StepReport{FlowID: parent, StepID: "sub", Result: map[string]any{"w": 1}})); r["step_id"] != "after" {
					t.Fatalf("after the human decided: %v", r)
				}
			})
		}
	}
}

// TestHumanGatePendingOwnGateRevert: a flow waiting at its own human gate
// cannot be reverted away from it over MCP (that would skip the gate); a
// human may (the TUI's revert).
func TestHumanGatePendingOwnGateRevert(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	r := must(t)(s.Plan(ctx, humanSpec, "inner", nil, engine.PlanOptions{}))
	id, _ := r["flow_id"].(string)
	must(t)(s.Commit(ctx, id, "start", engine.ReportOptions{}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "work", Result: map[string]any{"w": 1}}))
	for _, ch := range []review.Channel{review.ChannelMCP, ""} {
		r = must(t)(s.Revert(ctx, id, "start", engine.ReportOptions{Channel: ch}))
		if r["error_type"] != "human_gate_pending" || r["gate_flow_id"] != id || r["gate_step_id"] != "signoff" {
			t.Fatalf("revert away from a pending human gate over %q: %v", ch, r)
		}
	}
	// A checkpoint at the gate itself leaves it pending: allowed.
	must(t)(s.Commit(ctx, id, "at-gate", engine.ReportOptions{}))
	if r = must(t)(s.Revert(ctx, id, "at-gate", engine.ReportOptions{Channel: review.ChannelMCP})); r["status"] != "await_gate" {
		t.Fatalf("revert to the gate itself: %v", r)
	}
	if r = must(t)(s.Revert(ctx, id, "start", engine.ReportOptions{Channel: review.ChannelTUI})); r["step_id"] != "work" {
		t.Fatalf("a human's revert: %v", r)
	}
}

// TestRevertKeepsDecisions: a revert never erases a gate decision — it stays
// in the trace marked reverted — and undoing a human's decision needs a
// human's channel: stratum_revert after a human killed the flow is refused
// (it restarted the flow and erased the kill from the audit).
func TestRevertKeepsDecisions(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	must(t)(s.Commit(ctx, "f1", "start", engine.ReportOptions{Channel: review.ChannelMCP}))
	toGate := func() {
		t.Helper()
		must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
		if r := must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "b", Result: map[string]any{}})); r["status"] != "await_gate" {
			t.Fatalf("not at the gate: %v", r)
		}
	}
	toGate()
	r := must(t)(s.GateResolve(ctx, "f1", review.Decision{StepID: "review", Outcome: review.Kill, Rationale: "no",
		ResolvedBy: review.Human, Reviewer: "ann", Channel: review.ChannelTUI}))
	if r["status"] != "killed" {
		t.Fatalf("kill: %v", r)
	}
	for _, ch := range []review.Channel{review.ChannelMCP, ""} {
		r = must(t)(s.Revert(ctx, "f1", "start", engine.ReportOptions{Channel: ch}))
		if r["error_type"] != "gate_requires_human" || !strings.Contains(r["message"].(string), "kill of gate 'review'") {
			t.Fatalf("revert past a human's kill through %q: %v", ch, r)
		}
	}
	if st, _ := s.Query().Get(ctx, "f1"); st.Status != state.StatusKilled {
		t.Fatalf("refused revert changed the flow: %s", st.Status)
	}
	audit := func() map[string]any {
		t.Helper()
		a, err := s.Audit(ctx, "f1")
		if err != nil {
			t.Fatal(err)
		}
		return wire(t, a)
	}
	reverted := func(a map[string]any) []string {
		var out []string
		for _, rec := range a["trace"].([]any) {
			m := rec.(map[string]any)
			if m["reverted"] == true {
				out = append(out, m["type"].(string)+":"+m["outcome"].(string)+":"+m["resolved_by"].(string))
			}
		}
		return out
	}
	// A human may revert it; the kill stays in the trace, marked reverted.
	r = must(t)(s.Revert(ctx, "f1", "start", engine.ReportOptions{Channel: review.ChannelTUI}))
	if r["step_id"] != "a" || r["reverted_to"] != "start" {
		t.Fatalf("a human's revert: %v", r)
	}
	a := audit()
	if got := strings.Join(reverted(a), ","); got != "gate:kill:human" {
		t.Fatalf("reverted records in the trace: %q (trace %v)", got, a["trace"])
	}
	if a["steps_completed"] != float64(0) || a["status"] != "in_progress" {
		t.Fatalf("audit after revert: steps_completed %v status %v", a["steps_completed"], a["status"])
	}
	// An agent's own decision (through MCP) is the agent's to revert; both
	// decisions stay, each once, however often the flow is reverted.
	toGate()
	must(t)(s.GateResolve(ctx, "f1", review.Decision{StepID: "review", Outcome: review.Approve, ResolvedBy: review.Agent, Channel: review.ChannelMCP}))
	for i := 0; i < 2; i++ {
		if r = must(t)(s.Revert(ctx, "f1", "start", engine.ReportOptions{Channel: review.ChannelMCP})); r["step_id"] != "a" {
			t.Fatalf("revert past an agent's approval: %v", r)
		}
	}
	if got := strings.Join(reverted(audit()), ","); got != "gate:kill:human,gate:approve:agent" {
		t.Fatalf("reverted records after two reverts: %q", got)
	}
}

func wire(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
