package specs

import "fmt"

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
