package specs

import (
	"fmt"
	"strings"
)

// humanTimeout refuses on_timeout: approve on an approver: human gate: the
// deadline would approve, as the system, a gate only a person may approve
// (the rule policyFailure applies to policy: flag|skip). Such a gate may
// time out to kill or to revise, never to approve.
func (c *checker) humanTimeout(fn *Function, m *mapping, path string) {
	if fn.Approver != "human" || fn.OnTimeout != "approve" {
		return
	}
	c.add(CodePolicyHuman, m.valNode("on_timeout"), path+".on_timeout",
		fmt.Sprintf("Gate function '%s' has on_timeout: approve, which would approve at the deadline a gate that has approver: human", fn.Name),
		"Use on_timeout: kill or on_timeout: revise: only a person approves a human gate.")
}

// gateRules are the rules of a gate step: no loop or on_fail/next, explicit
// on_approve and on_kill, an on_revise that targets an earlier step,
// policy_fallback with a policy, no cache.
func (sc *stepCheck) gateRules() {
	c, fc, ss, s, m, sp, label, forbid := sc.c, sc.fc, sc.ss, sc.s, sc.m, sc.sp, sc.label, sc.forbid
	for _, k := range []string{"output_schema", "max_iterations", "exit_criterion", "score_expr", "accumulate", "accumulate_key"} {
		if m.has(k) {
			forbid(CodeGateStepField, k, fmt.Sprintf("Gate %s must not have '%s'", strings.ToLower(label), k), "Gates are resolved by a reviewer; remove it.")
		}
	}
	if m.has("on_fail") {
		forbid(CodeGateStepField, "on_fail", fmt.Sprintf("Gate %s must not have 'on_fail' — use on_revise for gates", strings.ToLower(label)), "Use on_revise.")
	}
	if m.has("next") {
		forbid(CodeGateStepField, "next", fmt.Sprintf("Gate %s must not have 'next' — use on_approve for gates", strings.ToLower(label)), "Use on_approve.")
	}
	for _, k := range []string{"on_approve", "on_kill"} {
		if !m.has(k) {
			c.add(CodeGateRoutingMissing, m.node, sp+"."+k,
				fmt.Sprintf("Gate %s must explicitly declare '%s' (use null for default terminal behaviour)", strings.ToLower(label), k),
				fmt.Sprintf("Add %s: ~ (or the id of the step to route to).", k))
		}
	}
	for _, k := range []string{"on_approve", "on_kill"} {
		t, _ := c.strOrNullQuiet(m, k)
		if t != "" {
			if _, ok := fc.ids[t]; !ok {
				c.undefinedStep(fc, m.valNode(k), sp+"."+k, fmt.Sprintf("Gate %s %s targets undefined step '%s'", strings.ToLower(label), k, t), t)
			}
		}
	}
	switch {
	case m.bad["on_revise"]:
	case !m.has("on_revise"):
		c.add(CodeGateReviseTarget, m.node, sp+".on_revise",
			fmt.Sprintf("Gate %s must declare on_revise: the topologically-earlier step to route to on revise", strings.ToLower(label)),
			"Add on_revise: <id of the step that should redo the work>.")
	case s.OnRevise == "":
		c.add(CodeGateReviseTarget, m.valNode("on_revise"), sp+".on_revise",
			fmt.Sprintf("Gate %s on_revise must not be null: it must name a topologically-earlier step", strings.ToLower(label)),
			"Set on_revise to the step that should redo the work.")
	case s.OnRevise == s.ID:
		c.add(CodeGateReviseTarget, m.valNode("on_revise"), sp+".on_revise",
			fmt.Sprintf("Gate %s on_revise may not target itself", strings.ToLower(label)),
			"Set on_revise to an earlier step.")
	default:
		t, ok := fc.ids[s.OnRevise]
		if !ok {
			c.undefinedStep(fc, m.valNode("on_revise"), sp+".on_revise",
				fmt.Sprintf("Gate %s on_revise targets undefined step '%s'", strings.ToLower(label), s.OnRevise), s.OnRevise)
			break
		}
		rt, ok1 := fc.rank[t]
		rs, ok2 := fc.rank[ss.idx]
		if ok1 && ok2 && rt >= rs {
			c.add(CodeGateReviseTarget, m.valNode("on_revise"), sp+".on_revise",
				fmt.Sprintf("Gate %s on_revise must target a topologically-earlier step, but '%s' runs after it", strings.ToLower(label), s.OnRevise),
				"Target a step that runs before the gate (see depends_on and $.steps inputs).")
		}
	}
	if m.has("policy_fallback") && !m.has("policy") {
		c.add(CodePolicyFallback, m.keyNode("policy_fallback"), sp+".policy_fallback",
			fmt.Sprintf("Gate %s has policy_fallback but no policy", strings.ToLower(label)), "Add policy, or remove policy_fallback.")
	}
	c.policyFailure(s, m, sp, label)
	if s.Cache {
		c.add(CodeCacheField, m.keyNode("cache"), sp+".cache", fmt.Sprintf("Gate %s must not have 'cache: true'", strings.ToLower(label)),
			"Only compute-function steps may be cached.")
	}
}

// policyFailure checks what happens when a gate's auto-approving policy
// (flag, skip) cannot apply. No policy may approve an `approver: human`
// gate, so such a policy always fails there: the spec must say so with
// policy_fallback: gate (wait for a reviewer). A fallback of flag or skip
// can never take over from a failed policy (it would need the same
// approval), so it is a warning: a failed policy always waits.
func (c *checker) policyFailure(s *Step, m *mapping, sp, label string) {
	if s.Policy != "flag" && s.Policy != "skip" {
		return
	}
	human := s.Fn != nil && s.Fn.Approver == "human"
	switch s.PolicyFallback {
	case "":
		if human {
			c.add(CodePolicyHuman, m.valNode("policy"), sp+".policy",
				fmt.Sprintf("Gate %s has policy '%s', which can never approve it: function '%s' has approver: human", strings.ToLower(label), s.Policy, s.Function),
				"Add policy_fallback: gate to wait for a reviewer when the policy cannot apply, or remove the policy.")
		}
	case "flag", "skip":
		c.warn(CodePolicyFallback, m.valNode("policy_fallback"), sp+".policy_fallback",
			fmt.Sprintf("Gate %s has policy_fallback '%s', which cannot take over from a failed policy: a gate whose policy fails waits for a reviewer", strings.ToLower(label), s.PolicyFallback),
			"Use policy_fallback: gate.")
	}
}
