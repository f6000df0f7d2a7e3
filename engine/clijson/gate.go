package clijson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
)

// GateHelp is the long help of `stratum gate` (cobra's Long): what it
// prints, the confirmation of an approver: human gate, a Go program's
// reviews and the exit statuses.
const GateHelp = `Gate records a decision on the gate a flow is waiting at, first-writer-wins across
every stratum process (TUI, MCP server, other shells). It prints
{"_schema_version": "1", "ok": true, "flow_id", "step_id", "outcome", "result"} where result
is the flow's next status (execute_step, await_gate, complete, killed, max_rounds_exceeded).

A gate with approver: human is decided here only on an interactive terminal, after you type
the gate's step id (or the flow's short id) to confirm; without a terminal (a script, an
agent's tool) it is refused with exit 2: decide it in the TUI or from a terminal.

A review opened by a Go program (stratum.AwaitHuman) is a gate whose STEP is its review id
(review-1, review-2, …; stratum query gates lists each with its question and options): approve
records a value, --option N (counted from 1) or --value JSON (checked against the review's
type); reject declines it (the program gets a ReviewRejectedError with the note); revise is
refused. A value that is not an option or does not fit is refused and the review stays open.

A flow nothing drives any more (stalled: its stratum run or Go program exited): a Go program's
review is not decided (error.code flow_stalled, exit 1, nothing recorded; end the flow with
stratum kill); a runner's gate is, and the answer adds "stalled": true and a "warning" naming
the stratum run --resume that continues it.

Exit status: 0 resolved; 1 unknown flow (error.code NOT_FOUND) or another error;
2 conflict (the gate was already resolved, or STEP is not the gate waiting), or an
approver: human gate without a terminal or without the confirmation.`

// GateLine is the command line of `stratum gate VERB FLOW STEP`: the verb's
// outcome and the flags the command binds.
type GateLine struct {
	Outcome review.Outcome
	// Note is --note, the rationale; ResolvedBy --resolved-by (human,
	// agent or system); Reviewer --reviewer (empty: review.CurrentUser).
	Note, ResolvedBy, Reviewer string
	// Round is --round: the decision is refused unless the gate is in it.
	Round int
	// Option (--option, counted from 1) and Value (--value, JSON) are the
	// value of a Go program's review (approve only).
	Option int
	Value  string
	// Set reports whether a flag was given (--round, --option, --value).
	Set func(flag string) bool
}

// Decision is the decision the line asks for at STEP of FLOW (the id as
// typed: the caller puts in the resolved one), recorded with channel cli.
// Every error is a usage problem, found before the store is touched: an
// invalid --resolved-by, both --option and --value, an option below 1, a
// value that is not JSON, or a decision review.Check refuses (revise and
// kill need a rationale; the engine refuses it too).
func (l GateLine) Decision(flow, step string) (review.Decision, error) {
	rb := review.ResolvedBy(l.ResolvedBy)
	if !rb.Valid() {
		return review.Decision{}, fmt.Errorf("--resolved-by %q: want human, agent or system", l.ResolvedBy)
	}
	reviewer := l.Reviewer
	if reviewer == "" {
		reviewer = review.CurrentUser()
	}
	d := review.Decision{FlowID: flow, StepID: step, Outcome: l.Outcome, Rationale: l.Note,
		Reviewer: reviewer, ResolvedBy: rb, Channel: review.ChannelCLI}
	switch opt, val := l.Set("option"), l.Set("value"); {
	case opt && val:
		return d, errors.New("--option and --value: give one of them")
	case opt:
		if l.Option < 1 {
			return d, fmt.Errorf("--option %d: options are counted from 1", l.Option)
		}
		d.Option = l.Option
	case val:
		if !json.Valid([]byte(l.Value)) {
			return d, fmt.Errorf("--value %q is not JSON (a string is quoted: --value '\"yes\"')", l.Value)
		}
		d.Value = json.RawMessage(l.Value)
	}
	if l.Set("round") {
		round := l.Round
		d.Round = &round
	}
	if err := review.Check(d); err != nil {
		return d, fmt.Errorf("%v: say why with --note", err)
	}
	return d, nil
}

// ConfirmHuman applies c (review.HumanConfirm.ConfirmAt) to a decision made
// with `stratum gate` at the gate its flow waits at — for a Go program's
// review, that review's own gate (each has its own approver): at an
// approver: human gate it needs c's terminal and the gate's step id or the
// flow's short id typed, and pins d to the round confirmed. A refusal
// matches review.ErrNotAllowed; any other error is a store failure. An
// unknown flow is nil: the engine answers it.
func ConfirmHuman(ctx context.Context, svc *engine.Service, d *review.Decision, c review.HumanConfirm) error {
	st, err := svc.Query().Get(ctx, d.FlowID)
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	var g *review.WaitingGate
	if r := st.Library.Review(d.StepID); r != nil {
		g = &review.WaitingGate{StepID: r.ID, Approver: review.Approver(r.Approver)} // reviews have no rounds
	} else if pg := st.Gate; pg != nil {
		g = &review.WaitingGate{StepID: pg.StepID, Approver: review.Approver(pg.Approver), Round: pg.Round}
	}
	return c.ConfirmAt(d, g)
}
