package review

import "testing"

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
