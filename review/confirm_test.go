package review

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestHumanConfirm(t *testing.T) {
	d := Decision{FlowID: "3f2a1c9e-0000-4000-8000-000000000000", StepID: "review", Outcome: Approve}
	for _, tc := range []struct {
		name     string
		approver Approver
		terminal bool
		in       io.Reader
		want     error
		prompt   bool
	}{
		{"a gate anyone may decide needs nothing", AnyApprover, false, nil, nil, false},
		{"no approver declared is any", "", false, nil, nil, false},
		{"human gate without a terminal", HumanApprover, false, strings.NewReader("review\n"), ErrNeedsTerminal, false},
		{"human gate, the step id typed", HumanApprover, true, strings.NewReader("review\n"), nil, true},
		{"human gate, the short id typed", HumanApprover, true, strings.NewReader("  3f2a1c9e \n"), nil, true},
		{"human gate, the whole id typed", HumanApprover, true, strings.NewReader(d.FlowID), nil, true},
		{"human gate, something else typed", HumanApprover, true, strings.NewReader("yes\n"), ErrNotConfirmed, true},
		{"human gate, a prefix of the step typed", HumanApprover, true, strings.NewReader("rev\n"), ErrNotConfirmed, true},
		{"human gate, nothing typed", HumanApprover, true, strings.NewReader(""), ErrNotConfirmed, true},
		{"human gate, an empty line", HumanApprover, true, strings.NewReader("\nreview\n"), ErrNotConfirmed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			c := HumanConfirm{Terminal: tc.terminal, In: tc.in, Out: &out}
			err := c.Confirm(d, tc.approver)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Confirm = %v, want %v", err, tc.want)
			}
			if err != nil && !errors.Is(err, ErrNotAllowed) {
				t.Errorf("%v does not match ErrNotAllowed", err)
			}
			if got := strings.Contains(out.String(), "type the gate's step id (review) or the flow's short id (3f2a1c9e)"); got != tc.prompt {
				t.Errorf("prompt shown = %v, want %v: %q", got, tc.prompt, out.String())
			}
		})
	}
}

func TestHumanConfirmEscapes(t *testing.T) {
	var out bytes.Buffer
	c := HumanConfirm{Terminal: true, In: strings.NewReader("x\n"), Out: &out,
		Escape: func(s string) string { return strings.ReplaceAll(s, "\x1b", `\x1b`) }}
	_ = c.Confirm(Decision{FlowID: "f1", StepID: "evil\x1b[2J", Outcome: Approve}, HumanApprover)
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("raw escape printed: %q", out.String())
	}
}

func TestShortID(t *testing.T) {
	if ShortID("3f2a1c9e-0000") != "3f2a1c9e" || ShortID("abc") != "abc" {
		t.Error("ShortID")
	}
}

func TestHumanConfirmAt(t *testing.T) {
	two := 2
	for _, tc := range []struct {
		name      string
		gate      *WaitingGate
		round     *int
		in        string
		want      error
		wantRound *int
	}{
		{"no gate needs nothing", nil, nil, "", nil, nil},
		{"another step needs nothing", &WaitingGate{StepID: "other", Approver: HumanApprover, Round: 1}, nil, "", nil, nil},
		{"a gate anyone may decide keeps no round", &WaitingGate{StepID: "review", Approver: AnyApprover, Round: 1}, nil, "", nil, nil},
		{"a human gate confirmed pins the round", &WaitingGate{StepID: "review", Approver: HumanApprover, Round: 3}, nil, "review\n", nil, new(3)},
		{"a round given stays", &WaitingGate{StepID: "review", Approver: HumanApprover, Round: 3}, &two, "review\n", nil, &two},
		{"not confirmed", &WaitingGate{StepID: "review", Approver: HumanApprover, Round: 3}, nil, "no\n", ErrNotConfirmed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decision{FlowID: "f1", StepID: "review", Outcome: Approve, Round: tc.round}
			c := HumanConfirm{Terminal: true, In: strings.NewReader(tc.in), Out: io.Discard}
			if err := c.ConfirmAt(&d, tc.gate); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("ConfirmAt = %v, want %v", err, tc.want)
			}
			if (d.Round == nil) != (tc.wantRound == nil) || (d.Round != nil && *d.Round != *tc.wantRound) {
				t.Fatalf("round = %v, want %v", d.Round, tc.wantRound)
			}
		})
	}
}
