package review

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Console is the console handler of `stratum run` at a terminal, and the
// console of a Go program's reviews (PendingReview.Library): it shows the
// gate on Out and reads the decision and its rationale from In. A gate is
// approved, revised or killed; a program's review is approved with an
// option's number (from 1) or, without options, a JSON value (text that is
// not JSON is taken as a string), or rejected. A rationale is asked for
// again until Check accepts the decision (revise and kill need one). Every
// line read is bounded. When In ends, the console cannot decide: it passes.
type Console struct {
	In       io.Reader
	Out      io.Writer
	Reviewer string
	// Escape makes untrusted text (ids, the question, outputs) safe to print
	// on a terminal. Callers set specs.EscapeControl, the one rule for
	// that (review imports nothing else of stratum); nil prints it as is.
	Escape func(string) string
	// Terminal reports whether In and Out are an interactive terminal. A
	// gate with approver: human is decided here only on one, and after the
	// typed confirmation of HumanConfirm: a pipe into a run's console is a
	// program, not a person.
	Terminal bool
	br       *bufio.Reader
	shown    string // the review id last shown (asked again: not shown twice)
}

func (c *Console) line() (string, error) {
	if c.br == nil {
		c.br = reader(c.In)
	}
	s, _, err := readLine(c.br, maxConsoleLine)
	if err != nil && (s == "" || errors.Is(err, ErrLineTooLong)) {
		return "", err
	}
	return strings.TrimSpace(s), nil
}

// Handle implements Handler.
func (c *Console) Handle(_ context.Context, r PendingReview) (Decision, error) {
	human := HumanConfirm{Terminal: c.Terminal, In: c.In, Out: c.Out, Escape: c.Escape}
	if r.Approver == HumanApprover && !c.Terminal {
		return Decision{}, ErrNeedsTerminal // refused before anything is shown or read
	}
	if r.Library {
		return c.handleValue(r, human)
	}
	w := c.Out
	esc := c.Escape
	if esc == nil {
		esc = func(s string) string { return s }
	}
	fmt.Fprintf(w, "\n── gate %s (flow %s, round %d) ──\n%s\n", esc(r.StepID), esc(r.FlowID), r.Round, escLines(esc, r.Question))
	if outs := r.Artifacts.StepOutputs; len(outs) > 0 {
		keys := make([]string, 0, len(outs))
		for k := range outs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "outputs so far:")
		for _, k := range keys {
			b, _ := json.Marshal(outs[k])
			fmt.Fprintf(w, "  %s: %s\n", esc(k), esc(clip(string(b), 300)))
		}
	}
	if r.Deadline != nil {
		fmt.Fprintf(w, "deadline: %s (then %s)\n", r.Deadline.Local().Format(time.RFC3339), esc(string(r.OnTimeout)))
	}
	choices := make([]string, len(r.Outcomes))
	for i, o := range r.Outcomes {
		choices[i] = string(o)
	}
	d := Decision{Reviewer: c.Reviewer, ResolvedBy: Human, Channel: ChannelConsole, StepID: r.StepID, FlowID: r.FlowID}
	for {
		fmt.Fprintf(w, "decision [%s]: ", strings.Join(choices, "/"))
		s, err := c.line()
		if err != nil {
			return Decision{}, c.noAnswer(err)
		}
		d.Outcome = matchOutcome(strings.ToLower(s), r.Outcomes)
		if d.Outcome == "" {
			fmt.Fprintf(w, "please answer one of: %s\n", strings.Join(choices, ", "))
			continue
		}
		break
	}
	return c.rationale(d, r.Approver, human)
}

// handleValue is Handle for a Go program's review: an option or a value,
// or a rejection, then a rationale and, for approver: human, the typed
// confirmation. The value's fit is the recorder's to check: a refused one
// comes back here (Handle again), shown once.
func (c *Console) handleValue(r PendingReview, human HumanConfirm) (Decision, error) {
	w, esc := c.Out, c.Escape
	if esc == nil {
		esc = func(s string) string { return s }
	}
	if c.shown != r.ReviewID {
		c.shown = r.ReviewID
		fmt.Fprintf(w, "\n── %s (flow %s) ──\n%s\n", esc(r.StepID), esc(ShortID(r.FlowID)), escLines(esc, r.Question))
		keys := make([]string, 0, len(r.Artifacts.Values))
		for k := range r.Artifacts.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b, _ := json.Marshal(r.Artifacts.Values[k])
			fmt.Fprintf(w, "  %s: %s\n", esc(k), esc(clip(string(b), 300)))
		}
		for i, o := range r.Options {
			fmt.Fprintf(w, "  [%d] %s\n", i+1, esc(clip(string(o), 300)))
		}
		if r.Deadline != nil {
			fmt.Fprintf(w, "deadline: %s\n", r.Deadline.Local().Format(time.RFC3339))
		}
	}
	d := Decision{Reviewer: c.Reviewer, ResolvedBy: Human, Channel: ChannelConsole, StepID: r.StepID, FlowID: r.FlowID}
	for d.Outcome == "" {
		if n := len(r.Options); n > 0 {
			fmt.Fprintf(w, "decision (1–%d, or reject): ", n)
		} else {
			fmt.Fprint(w, "decision (a JSON value, or reject): ")
		}
		s, err := c.line()
		if err != nil {
			return Decision{}, c.noAnswer(err)
		}
		switch {
		case s == "":
		case strings.EqualFold(s, "reject"):
			d.Outcome = Kill
		case len(r.Options) > 0:
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > len(r.Options) {
				fmt.Fprintf(w, "type a number from 1 to %d, or reject\n", len(r.Options))
				continue
			}
			d.Outcome, d.Option = Approve, n
		default:
			d.Outcome, d.Value = Approve, json.RawMessage(s)
			if !json.Valid(d.Value) {
				d.Value, _ = json.Marshal(s)
			}
		}
	}
	return c.rationale(d, r.Approver, human)
}

// rationale reads the decision's rationale until Check accepts it, then
// asks for the confirmation an approver: human gate or review needs.
func (c *Console) rationale(d Decision, approver Approver, human HumanConfirm) (Decision, error) {
	for {
		if d.Outcome == Approve {
			fmt.Fprint(c.Out, "rationale (optional): ")
		} else {
			fmt.Fprint(c.Out, "rationale (required): ")
		}
		note, err := c.line()
		if err != nil && !errors.Is(err, io.EOF) {
			return Decision{}, c.noAnswer(err)
		}
		d.Rationale = note
		if cerr := Check(d); cerr == nil {
			if c.br != nil {
				human.In = c.br // what the console buffered stays readable
			}
			if err := human.Confirm(d, approver); err != nil {
				return Decision{}, err
			}
			return d, nil
		} else if err != nil {
			return Decision{}, c.noAnswer(err)
		}
		fmt.Fprintf(c.Out, "a %s needs a rationale: say why\n", d.Outcome)
	}
}

// noAnswer is what an ended input means: nobody at this console decides.
func (c *Console) noAnswer(err error) error {
	return fmt.Errorf("%w: reading the gate decision: %w", ErrNoReviewer, err)
}

func matchOutcome(s string, allowed []Outcome) Outcome {
	if s == "" {
		return ""
	}
	for _, o := range allowed {
		if string(o) == s || string(o)[:1] == s[:1] && len(s) == 1 {
			return o
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// escLines applies esc to each line of s, keeping the line breaks.
func escLines(esc func(string) string, s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = esc(l)
	}
	return strings.Join(lines, "\n")
}
