package review

import (
	"bufio"
	"bytes"
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
// drives a real terminal (a pty) can — see the threat model in
// engine/GATES.md.
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
	line, complete, err := readLine(reader(c.In), maxConfirmLine)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", ErrNotConfirmed, err)
	}
	if !complete {
		fmt.Fprintln(c.Out) // the input ended mid-line
	}
	typed := strings.TrimSpace(line)
	if typed != "" && (typed == d.StepID || typed == short || typed == d.FlowID) {
		return nil
	}
	return fmt.Errorf("%w: typed %q, want %q or %q", ErrNotConfirmed, esc(typed), esc(d.StepID), esc(short))
}

// maxConfirmLine bounds the confirmation typed for an approver: human
// gate: an id is short, and an input that never ends a line (/dev/zero, a
// runaway pipe) must not grow memory.
const maxConfirmLine = 1 << 10

// maxConsoleLine bounds one line read by the console (a decision, a
// rationale).
const maxConsoleLine = 64 << 10

// ErrLineTooLong is an input line over its bound; the line is refused, not
// cut.
var ErrLineTooLong = errors.New("the input line is too long")

// reader returns r as a *bufio.Reader, wrapping it only when it is not one
// already, so that readers sharing one input (the console and the
// confirmation) never lose what the other buffered.
func reader(r io.Reader) *bufio.Reader {
	if br, ok := r.(*bufio.Reader); ok {
		return br
	}
	return bufio.NewReader(r)
}

// readLine reads one line of at most max bytes (without its newline);
// complete says it ended with a newline. A longer line is ErrLineTooLong
// after reading at most max bytes and one buffer more; at the end of input
// it returns what was read with io.EOF.
func readLine(br *bufio.Reader, max int) (line string, complete bool, err error) {
	var b []byte
	for {
		frag, err := br.ReadSlice('\n')
		b = append(b, frag...)
		if len(b) > max+1 || (len(b) > max && !bytes.HasSuffix(b, []byte("\n"))) {
			return "", false, fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, max)
		}
		switch {
		case err == nil:
			return strings.TrimSuffix(string(b), "\n"), true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return string(b), false, err
		}
	}
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
