package review

import (
	"errors"
	"testing"
)

func TestValidity(t *testing.T) {
	for _, o := range []Outcome{Approve, Revise, Kill} {
		if !o.Valid() {
			t.Errorf("%q should be valid", o)
		}
	}
	for _, o := range []Outcome{"", "reject", "APPROVE"} {
		if o.Valid() {
			t.Errorf("%q should be invalid", o)
		}
	}
	for _, r := range []ResolvedBy{Human, Agent, System} {
		if !r.Valid() {
			t.Errorf("%q should be valid", r)
		}
	}
	if ResolvedBy("robot").Valid() {
		t.Error("robot should be invalid")
	}
}

func TestOutcomesSorted(t *testing.T) {
	for i := 1; i < len(Outcomes); i++ {
		if Outcomes[i-1] >= Outcomes[i] {
			t.Fatalf("Outcomes not sorted: %v", Outcomes)
		}
	}
}

func TestID(t *testing.T) {
	cases := []struct {
		flow, step string
		round      int
		want       string
	}{
		{"f", "g", 0, "f/g/0"},
		{"f", "g", 12, "f/g/12"},
		{"f", "g", -3, "f/g/-3"},
	}
	for _, c := range cases {
		if got := ID(c.flow, c.step, c.round); got != c.want {
			t.Errorf("ID(%q,%q,%d) = %q, want %q", c.flow, c.step, c.round, got, c.want)
		}
	}
}

// TestApproverAllows: an approver: human gate or review is decided only
// through the channels where a person is present, and the clock; any
// other approver takes every channel.
func TestApproverAllows(t *testing.T) {
	for _, c := range []struct {
		ch    Channel
		human bool
	}{
		{ChannelTUI, true}, {ChannelCLI, true}, {ChannelConsole, true}, {ChannelPolicy, true}, {ChannelTimeout, true},
		{ChannelMCP, false}, {ChannelProgram, false}, {"", false}, {"webhook", false},
	} {
		if got := HumanApprover.Allows(c.ch); got != c.human {
			t.Errorf("human approver, channel %q: allows = %v, want %v", c.ch, got, c.human)
		}
		err := HumanApprover.CheckChannel(c.ch, "Review 'review-1'")
		if (err == nil) != c.human || (err != nil && !errors.Is(err, ErrNotAllowed)) {
			t.Errorf("human approver, channel %q: CheckChannel = %v", c.ch, err)
		}
		for _, a := range []Approver{AnyApprover, ""} {
			if !a.Allows(c.ch) || a.CheckChannel(c.ch, "Gate 'g'") != nil {
				t.Errorf("approver %q refused channel %q", a, c.ch)
			}
		}
	}
	err := HumanApprover.CheckChannel(ChannelMCP, "Gate 'deploy'")
	want := "Gate 'deploy' requires a human decision (approver: human) and cannot be resolved through MCP; decide it in `stratum tui` or with `stratum gate`"
	if err == nil || err.Error() != want {
		t.Errorf("MCP refusal: %v\nwant %s", err, want)
	}
}
