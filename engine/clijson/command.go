package clijson

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// The command bodies here answer as `stratum run`'s does: (answer, exit
// status, error). The answer (nil: none) is what the command prints as
// JSON; the status is its exit status; the error, when set, is the message
// the command prints on stderr with it (a store failure, a refusal).
const (
	statusFailure = 1 // the command ran and the answer is "no", or a store failure
	statusUsage   = 2 // a usage problem, or a gate decision that conflicts
)

// Answer is an engine answer as the CLI prints it (plan, step-done,
// resume, audit, a FLOW that does not resolve): engine.Wire's object, and
// exit 1 when it is an error envelope. An error without an envelope is a
// store failure: no answer, exit 1 with its message.
func Answer(out engine.Outcome, err error) (answer any, status int, _ error) {
	if err != nil && engine.AsError(err) == nil {
		return nil, statusFailure, err
	}
	if err != nil {
		return engine.Wire(out, err), statusFailure, nil
	}
	return engine.Wire(out, nil), 0, nil
}

// AuditHelp is the long help of `stratum audit` (its answer is Answer's,
// or with --text the TUI's rendering).
const AuditHelp = `Audit prints the flow's trace, rounds, iterations and child audits as JSON (the
original's stratum_audit); for a flow a Go program drives, its calls too. --text prints it for
a person: the records in order and each call with its inputs, retries, tool calls and output.
Completed flows are kept in the store, so audits work after the fact until "stratum gc"
prunes them.`

// AuditExamples are the examples of `stratum audit`'s help.
const AuditExamples = `  stratum audit 3f2a1c | jq '.trace'
  stratum audit 3f2a1c --text`

// Gate is `stratum gate VERB FLOW STEP`: d is GateLine.Decision's (its
// FlowID as typed: the id or a unique prefix). It resolves the flow,
// confirms an approver: human gate (ConfirmHuman), records the decision,
// warns on warn when the flow is stalled (StalledNote), and answers with
// GateAnswer's object: exit 0 resolved, 2 a conflict or a refused
// confirmation, 1 anything else.
func Gate(ctx context.Context, svc *engine.Service, d review.Decision, confirm review.HumanConfirm, warn io.Writer, now time.Time) (answer any, status int, _ error) {
	step := d.StepID
	id, err := svc.Query().ResolveFlowID(ctx, d.FlowID)
	if err != nil {
		return gateAnswer(d, step, nil, err, "")
	}
	d.FlowID = id
	if err := ConfirmHuman(ctx, svc, &d, confirm); errors.Is(err, review.ErrNotAllowed) {
		return nil, statusUsage, err
	} else if err != nil {
		return nil, statusFailure, err
	}
	next, err := svc.GateResolve(ctx, d.FlowID, d)
	stalled := ""
	if err == nil {
		// A runner's flow nothing drives any more: the decision stands,
		// and only a resume acts on it; say so.
		if n, nerr := StalledNote(ctx, svc, d.FlowID, now); nerr == nil && n != "" {
			fmt.Fprintln(warn, "stratum: warning: "+specs.EscapeControl(n))
			stalled = n
		}
	}
	return gateAnswer(d, step, next, err, stalled)
}

// gateAnswer is Gate's answer (GateAnswer) and exit status; stalled, when
// set, is StalledNote's warning: the answer says "stalled": true with it.
func gateAnswer(d review.Decision, step string, next engine.Outcome, err error, stalled string) (any, int, error) {
	if err != nil && engine.AsError(err) == nil {
		return nil, statusFailure, err
	}
	resp, verdict := GateAnswer(d.FlowID, step, d.Outcome, next, err)
	if stalled != "" {
		resp["stalled"], resp["warning"] = true, stalled
	}
	switch verdict {
	case GateResolved:
		return resp, 0, nil
	case GateConflict:
		return resp, statusUsage, nil
	}
	return resp, statusFailure, nil
}

// KillLine is the command line of `stratum kill FLOW`: --reason and --by.
type KillLine struct {
	Reason, By string
}

// Request is the kill the line asks for: a reason is required (it is
// recorded), and By defaults to review.CurrentUser. The error is a usage
// problem.
func (l KillLine) Request() (engine.KillRequest, error) {
	if strings.TrimSpace(l.Reason) == "" {
		return engine.KillRequest{}, errors.New("kill needs --reason TEXT: it is recorded with the kill")
	}
	by := l.By
	if by == "" {
		by = review.CurrentUser()
	}
	return engine.KillRequest{By: by, Reason: l.Reason}, nil
}

// KillFlow is `stratum kill FLOW`: it resolves FLOW (the id or a unique
// prefix) and ends the flow (Kill). Exit 0 ended; 1 refused (the answer
// says why: Refused) or a store failure; 2 an approver: human gate not
// confirmed.
func KillFlow(ctx context.Context, svc *engine.Service, flow string, k engine.KillRequest, confirm review.HumanConfirm) (answer any, status int, _ error) {
	id, err := svc.Query().ResolveFlowID(ctx, flow)
	if e := engine.AsError(err); e != nil {
		return Refused(flow, e), statusFailure, nil
	} else if err != nil {
		return nil, statusFailure, err
	}
	resp, ok, err := Kill(ctx, svc, id, k, confirm)
	switch {
	case errors.Is(err, review.ErrNotAllowed):
		return nil, statusUsage, err
	case err != nil:
		return nil, statusFailure, err
	case !ok:
		return resp, statusFailure, nil
	}
	return resp, 0, nil
}

// GCStalled is `stratum gc --stalled --older-than D`'s answer: {"killed":
// [ids], "skipped": [{flow_id, code, message}]} (KillStalled).
func GCStalled(ctx context.Context, svc *engine.Service, olderThan time.Duration, now time.Time) (answer any, status int, _ error) {
	killed, skipped, err := KillStalled(ctx, svc, olderThan, now)
	if err != nil {
		return nil, statusFailure, err
	}
	if killed == nil {
		killed = []string{}
	}
	if skipped == nil {
		skipped = []map[string]any{}
	}
	return map[string]any{"killed": killed, "skipped": skipped}, 0, nil
}

// QueryFlows is `stratum query flows`: the flows f selects, streamed to w
// (WriteFlows: the bytes the one-document rendering would be). Exit 1
// with a store failure; status 0 with an error is a failure to write.
func QueryFlows(ctx context.Context, svc *engine.Service, f engine.ListFilter, w io.Writer, now time.Time) (status int, _ error) {
	list, err := svc.Query().List(ctx, f)
	if err != nil {
		return statusFailure, err
	}
	return 0, WriteFlows(w, list, now)
}

// QueryGates is `stratum query gates`: every gate waiting for a decision
// (Gates).
func QueryGates(ctx context.Context, svc *engine.Service) (answer any, status int, _ error) {
	pending, err := svc.Query().PendingGateSteps(ctx)
	if err != nil {
		return nil, statusFailure, err
	}
	return Gates(pending), 0, nil
}

// GCLine is the command line of `stratum gc`: --older-than, --damaged,
// --stalled.
type GCLine struct {
	OlderThan        time.Duration
	Damaged, Stalled bool
	// Set reports whether a flag was given (--older-than).
	Set func(flag string) bool
}

// GCMode is what `stratum gc` was asked to do.
type GCMode int

// The modes of `stratum gc`.
const (
	GCPrune   GCMode = iota // --older-than D: delete finished flows (GC)
	GCStale                 // --stalled --older-than D: end stalled flows (GCStalled)
	GCDamaged               // --damaged: quarantine undecodable flows (the store's)
)

// Mode is what the line asks for; the error is a usage problem: --damaged
// with --older-than or --stalled, --stalled without a duration, no
// --older-than, or a negative one.
func (l GCLine) Mode() (GCMode, error) {
	set := l.Set != nil && l.Set("older-than")
	switch {
	case l.Damaged && (set || l.Stalled):
		return GCDamaged, errors.New("gc: give --older-than or --damaged, not both")
	case l.Damaged:
		return GCDamaged, nil
	case l.Stalled && (!set || l.OlderThan < 0):
		return GCStale, errors.New("gc --stalled needs --older-than DURATION: how long a flow has been stalled (for example 24h)")
	case l.Stalled:
		return GCStale, nil
	case !set:
		return GCPrune, errors.New("gc needs --older-than DURATION (for example 720h), or --damaged")
	case l.OlderThan < 0:
		return GCPrune, errors.New("--older-than must not be negative")
	}
	return GCPrune, nil
}

// GC is `stratum gc --older-than D`: it deletes the finished flows older
// than olderThan (engine.Service.GC); the answer is {"deleted": n}.
func GC(ctx context.Context, svc *engine.Service, olderThan time.Duration) (answer any, status int, _ error) {
	n, err := svc.GC(ctx, olderThan)
	if err != nil {
		return nil, statusFailure, err
	}
	return map[string]any{"deleted": n}, 0, nil
}
