package engine

import (
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/state"
)

// policyFallbackSpec: a gate whose function's approver and the gate's
// policy vary (APPROVER, POLICY).
const policyFallbackSpec = `version: "0.2"
functions:
  review:
    mode: gate
    approver: APPROVER
flows:
  main:
    input: {}
    steps:
      - id: work
        intent: "do it"
      - id: gate
        function: review
        depends_on: [work]
        POLICY
        on_approve: ~
        on_revise: work
        on_kill: ~
`

// TestPolicyFallback: no policy approves an approver: human gate. A flag or
// skip policy (with policy_fallback: gate) and a true skip_if fail there and
// the gate waits for a reviewer, its gate_opened event naming the policy
// that failed; on an approver: any gate the same policies auto-approve.
func TestPolicyFallback(t *testing.T) {
	tests := []struct {
		name, approver, policy string
		wantStatus             string
		wantPolicy             string // the failed policy on gate_opened; "" : auto-approved
	}{
		{"human-flag", "human", "policy: flag\n        policy_fallback: gate", "await_gate", "flag"},
		{"human-skip", "human", "policy: skip\n        policy_fallback: gate", "await_gate", "skip"},
		{"human-skip-if", "human", "skip_if: \"True\"", "await_gate", "skip_if"},
		{"any-flag", "any", "policy: flag\n        policy_fallback: gate", "complete", ""},
		{"any-skip-if", "any", "skip_if: \"True\"", "complete", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.NewReplacer("APPROVER", tt.approver, "POLICY", tt.policy).Replace(policyFallbackSpec)
			f, _ := plan(t, src, "main", nil)
			got := f.stepDone("work", map[string]any{"ok": true})
			if got["status"] != tt.wantStatus {
				t.Fatalf("status %v, want %s: %s", got["status"], tt.wantStatus, show(got))
			}
			var opened *GateOpened
			var resolved *GateResolved
			for _, ev := range f.events {
				switch d := ev.Data.(type) {
				case GateOpened:
					opened = &d
				case GateResolved:
					resolved = &d
				}
			}
			if tt.wantPolicy == "" {
				if resolved == nil || resolved.Channel != "policy" {
					t.Fatalf("want a policy approval, got %+v", resolved)
				}
				return
			}
			if resolved != nil {
				t.Fatalf("a policy resolved a human gate: %+v", resolved)
			}
			if opened == nil || opened.Policy != tt.wantPolicy || opened.PolicyFailed != "approver: human" {
				t.Fatalf("gate_opened %+v, want policy %s failed", opened, tt.wantPolicy)
			}
			for _, r := range f.st.Records {
				if r.Type == state.RecordPolicy {
					t.Errorf("policy record written for a gate the policy could not approve: %+v", r)
				}
			}
		})
	}
}
