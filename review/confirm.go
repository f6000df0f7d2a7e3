package review

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Errors of HumanConfirm. Both match ErrNotAllowed with errors.Is: the
// decision is refused for the way it came in.
var (
	// ErrNeedsTerminal: an approver: human gate decided from a shell that
	// is not an interactive terminal (a script, an agent's tool).
	ErrNeedsTerminal = fmt.Errorf("%w: an approver: human gate is decided by a person: use the TUI (stratum tui) or run stratum gate on an interactive terminal", ErrNotAllowed)
	// ErrNotConfirmed: the reviewer did not type the confirmation.
	ErrNotConfirmed = fmt.Errorf("%w: not confirmed", ErrNotAllowed)
)

// ShortIDLen is the length of a flow's short id, as the TUI and the
// confirmation prompt show it.
const ShortIDLen = 8

// ShortID is the first ShortIDLen characters of a flow id.
func ShortID(flowID string) string {
	if len(flowID) > ShortIDLen {
		return flowID[:ShortIDLen]
	}
	return flowID
}

// HumanConfirm is the separation-of-duties rule of a decision typed in a
// shell (`stratum gate`): a gate with approver: human is decided there only
// on an interactive terminal, after the reviewer typed the gate's step id
// or the flow's short id. An agent that decides through its tools (MCP is
// refused by the engine) or a non-interactive shell (a script, a tool
// call running `stratum gate`) cannot approve its own work; a program that
// drives a real terminal (a pty) can — see the README's threat model.
type HumanConfirm struct {
	// Terminal reports whether In and Out are an interactive terminal;
	// the front end decides it (injected, so tests need no pty).
	Terminal bool
	In       io.Reader
	Out      io.Writer
	// Escape makes untrusted text (ids) safe to print on a terminal;
	// nil prints it as is.
	Escape func(string) string
}

// Confirm asks for the confirmation d needs at a gate whose approver is
// approver. A gate any channel may decide needs none (nil). For
// HumanApprover: without a terminal it is ErrNeedsTerminal and nothing is
// read; on a terminal it prompts on Out and reads one line from In, which
// must be the gate's step id, the flow's short id or its whole id (blanks
// around it ignored), else ErrNotConfirmed.
func (c HumanConfirm) Confirm(d Decision, approver Approver) error {
	if approver != HumanApprover {
		return nil
	}
	if !c.Terminal || c.In == nil || c.Out == nil {
		return ErrNeedsTerminal
	}
	esc := c.Escape
	if esc == nil {
		esc = func(s string) string { return s }
	}
	short := ShortID(d.FlowID)
	fmt.Fprintf(c.Out, "Gate %s of flow %s needs a human (approver: human).\nTo %s it, type the gate's step id (%s) or the flow's short id (%s): ",
		esc(d.StepID), esc(short), d.Outcome, esc(d.StepID), esc(short))
	line, err := bufio.NewReader(c.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", ErrNotConfirmed, err)
	}
	if !strings.HasSuffix(line, "\n") {
		fmt.Fprintln(c.Out) // the input ended mid-line
	}
	typed := strings.TrimSpace(line)
	if typed != "" && (typed == d.StepID || typed == short || typed == d.FlowID) {
		return nil
	}
	return fmt.Errorf("%w: typed %q, want %q or %q", ErrNotConfirmed, esc(typed), esc(d.StepID), esc(short))
}

// WaitingGate is the gate a flow waits at, as far as HumanConfirm needs
// it: its step, its approver and its round.
type WaitingGate struct {
	StepID   string
	Approver Approver
	Round    int
}

// ConfirmAt is Confirm for a decision d on a flow waiting at g (nil: at no
// gate). A decision for a step the flow is not waiting at needs nothing
// here (the recorder refuses it). A decision confirmed at an approver:
// human gate is pinned to the round confirmed (d.Round, when d names
// none), so it cannot land on a later round the reviewer did not see.
func (c HumanConfirm) ConfirmAt(d *Decision, g *WaitingGate) error {
	if g == nil || g.StepID != d.StepID {
		return nil
	}
	if err := c.Confirm(*d, g.Approver); err != nil {
		return err
	}
	if g.Approver == HumanApprover && d.Round == nil {
		round := g.Round
		d.Round = &round
	}
	return nil
}
