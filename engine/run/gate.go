package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// gate resolves the gate the flow waits at through the sinks and returns
// the engine's next response, or an end (stopped at the gate).
func (r *Runner) gate(ctx context.Context, fc *flowCtx, _ *engine.GateDispatch) (turn, error) {
	st, err := r.svc.Query().Get(ctx, fc.id)
	if err != nil {
		return turn{}, err
	}
	pr, ok := engine.PendingReview(st, fc.flow)
	if !ok {
		// The gate was resolved meanwhile: continue from the current state.
		return answered(r.svc.Resume(ctx, fc.id))
	}
	step := fc.flow.Step(pr.StepID)
	rep := r.stepReport(fc, step)
	r.emit(Event{Kind: EventGateOpen, FlowID: fc.id, Step: step, Gate: &pr, Spec: fc.spec})
	svc := review.NewService[engine.Outcome](r.svc, r.gateHandlers(fc, pr)...)
	d, out, err := svc.Request(ctx, pr)
	var interrupted *interruptedError
	switch {
	case errors.As(err, &interrupted):
		return stop(&endState{status: EndInterrupted})
	case errors.Is(err, review.ErrDecidedElsewhere):
		rep.Attempts++
		rep.Status = "passed"
		if d.Outcome == review.Kill {
			rep.Status = "killed"
		}
		if d.Outcome == review.Revise {
			fc.round = pr.Round + 1
		}
		r.emit(Event{Kind: EventGateResolved, FlowID: fc.id, Step: step, Spec: fc.spec, Status: rep.Status, Message: decisionText(d)})
		return answered(r.svc.Resume(ctx, fc.id))
	case errors.Is(err, review.ErrNeedsTerminal), errors.Is(err, review.ErrNotConfirmed):
		// The human-presence rule refused a decision of this run (an
		// approver: human gate without a terminal or its confirmation):
		// nothing was recorded; a usage problem, exit 2.
		end := r.gateStop(fc, pr)
		end.message = err.Error() + "\n" + end.message
		end.exit = ExitUsage
		return stop(end)
	case errors.Is(err, review.ErrNoReviewer):
		end := r.gateStop(fc, pr)
		if !errors.Is(err, errNoHandler) {
			end.message = err.Error() + "\n" + end.message
		}
		return stop(end)
	case engine.AsError(err) != nil:
		// max_rounds_exceeded, or someone else decided first: show it and
		// continue from the current state.
		r.emit(Event{Kind: EventGateResolved, FlowID: fc.id, Step: step, Spec: fc.spec, Message: "decision refused: " + engine.AsError(err).Message})
		return answered(r.svc.Resume(ctx, fc.id))
	case err != nil:
		return turn{}, err
	}
	rep.Attempts++
	rep.Status = "passed"
	if d.Outcome == review.Kill {
		rep.Status = "killed"
	}
	if d.Outcome == review.Revise {
		fc.round = pr.Round + 1
	}
	r.emit(Event{Kind: EventGateResolved, FlowID: fc.id, Step: step, Spec: fc.spec, Status: string(d.Outcome), Message: decisionText(d)})
	return answered(out, nil)
}

// errNoHandler ends the handlers of a run when none of them may decide.
var errNoHandler = fmt.Errorf("%w: no handler decides", review.ErrNoReviewer)

// gateHandlers are the review handlers of this run, in the order they are
// asked: the policy (--approve, --on-gate approve|kill), then the console
// (--on-gate prompt) or the wait for a decision made elsewhere (--on-gate
// wait); when all pass, the run stops at the gate.
func (r *Runner) gateHandlers(fc *flowCtx, pr review.PendingReview) []review.Handler {
	policy := r.opts.Gates
	if policy.Reviewer == "" {
		policy.Reviewer = review.CurrentUser()
	}
	hs := []review.Handler{policy}
	switch policy.OnGate {
	case review.OnGatePrompt:
		if c := r.opts.Console; c != nil {
			if c.Reviewer == "" {
				c.Reviewer = policy.Reviewer
			}
			if c.Escape == nil {
				c.Escape = specs.EscapeControl
			}
			hs = append(hs, c)
		}
	case review.OnGateWait:
		hs = append(hs, review.HandlerFunc(func(ctx context.Context, _ review.PendingReview) (review.Decision, error) {
			return r.waitGate(ctx, fc, pr)
		}))
	}
	return append(hs, review.HandlerFunc(func(context.Context, review.PendingReview) (review.Decision, error) {
		return review.Decision{}, errNoHandler
	}))
}

// decisionText names a gate decision by who made it, through what, and
// why: "approved by --approve all (policy)" (a policy's rationale names
// its flag), "revised by bob (cli): needs work", "approved by ann at the
// console", "killed by the gate's timeout".
func decisionText(d review.Decision) string {
	if d.Outcome == "" {
		return "decided by another process"
	}
	done := map[review.Outcome]string{review.Approve: "approved", review.Revise: "revised", review.Kill: "killed"}[d.Outcome]
	if done == "" {
		done = string(d.Outcome)
	}
	switch d.Channel {
	case review.ChannelPolicy:
		msg := d.Rationale // "approved by --approve all"
		if !strings.HasPrefix(msg, done+" by ") {
			msg = done + " by the gate policy"
		}
		if d.ResolvedBy == review.Human && d.Reviewer != "" {
			return msg + " (policy, " + d.Reviewer + ")"
		}
		return msg + " (policy)"
	case review.ChannelTimeout:
		return done + " by the gate's timeout (on_timeout)"
	}
	msg := done + " by " + orUnknown(d.Reviewer)
	if d.Channel == review.ChannelConsole {
		msg += " at the console"
	} else if d.Channel != "" {
		msg += " (" + string(d.Channel) + ")"
	}
	if d.Rationale != "" {
		msg += ": " + d.Rationale
	}
	return msg
}

func orUnknown(s string) string {
	if s == "" {
		return "someone"
	}
	return s
}

// interruptedError is what the wait handler returns when the run is
// interrupted while it waits.
type interruptedError struct{}

func (*interruptedError) Error() string { return "interrupted while waiting for a gate decision" }

// gateStop is the end of a run stopped at a gate nobody here may resolve.
func (r *Runner) gateStop(fc *flowCtx, pr review.PendingReview) *endState {
	root := rootID(fc)
	msg := fmt.Sprintf("flow %s stopped at gate '%s' (round %d). Decide it, then continue the run:\n"+
		"  %s --note \"…\"   (or: reject, revise)\n"+
		"  %s",
		fc.id, pr.StepID, pr.Round, r.cmd("gate approve "+fc.id+" "+pr.StepID), r.cmd("run --resume "+root))
	if pr.Approver == review.HumanApprover {
		msg += "\n(the gate requires a human decision: approver: human)"
	}
	return &endState{status: EndGate, gate: &pr, message: msg}
}

// waitGate waits for another process (or this one's TUI) to decide the
// gate, and returns the recorded decision with review.ErrDecidedElsewhere.
// It follows the store's events (Service.Watch): the gate_resolved event
// of the gate's round carries the decision (engine.Event.GateDecision),
// which it returns without reading the flow. The flow is read once before
// the wait, and again only when an event about it does not tell (a revert,
// an event without the decision) or after the deadline's sweep; a timer at
// the gate's deadline applies expired deadlines (SweepTimeouts), as every
// stratum process does, so on_timeout takes effect even when no other
// process sweeps.
func (r *Runner) waitGate(ctx context.Context, fc *flowCtx, pr review.PendingReview) (review.Decision, error) {
	r.emit(Event{Kind: EventGateWait, FlowID: fc.id, Step: fc.flow.Step(pr.StepID), Gate: &pr, Spec: fc.spec,
		Message: "waiting for a decision: " + r.cmd("gate approve "+fc.id+" "+pr.StepID)})
	// The end of the log before the first read: Watch delivers everything
	// after it, so a decision made in between is not missed.
	after, err := r.svc.Query().LastSeq(ctx)
	if err != nil {
		return review.Decision{}, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	events, err := r.svc.Watch(watchCtx, after)
	if err != nil {
		return review.Decision{}, err
	}
	var expired <-chan time.Time
	if pr.Deadline != nil {
		t := time.NewTimer(time.Until(*pr.Deadline))
		defer t.Stop()
		expired = t.C
	}
	for {
		st, err := r.svc.Query().Get(ctx, fc.id)
		if err != nil {
			return review.Decision{}, err
		}
		if st.Status != state.StatusAwaitingGate || st.Gate == nil || st.Gate.StepID != pr.StepID || st.Gate.Round != pr.Round {
			return recordedDecision(st, pr), review.ErrDecidedElsewhere
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return review.Decision{}, &interruptedError{}
			case <-expired:
				expired = nil
				if _, err := r.svc.SweepTimeouts(ctx); err != nil {
					return review.Decision{}, err
				}
				break wait
			case batch, ok := <-events:
				if !ok {
					return review.Decision{}, &interruptedError{}
				}
				d, decided, reread := engine.GateNews(batch, pr.FlowID, pr.StepID, pr.Round)
				if decided {
					return d, review.ErrDecidedElsewhere
				}
				if reread {
					break wait
				}
			}
		}
	}
}

// recordedDecision is the decision recorded on the gate of pr (its last
// gate record for that step and round, in the current round or archived),
// or a zero decision when none is found (the flow moved on otherwise).
func recordedDecision(st *state.FlowState, pr review.PendingReview) review.Decision {
	rounds := append([][]state.Record{st.Records}, st.Rounds...)
	for _, recs := range rounds {
		for i := len(recs) - 1; i >= 0; i-- {
			rec := recs[i]
			if rec.Type == state.RecordGate && rec.StepID == pr.StepID && rec.Round == pr.Round && !rec.Reverted {
				return review.Decision{FlowID: pr.FlowID, StepID: pr.StepID, Outcome: review.Outcome(rec.Outcome),
					Rationale: rec.Rationale, Reviewer: rec.Reviewer, ResolvedBy: review.ResolvedBy(rec.ResolvedBy),
					Channel: review.Channel(rec.Channel)}
			}
		}
	}
	return review.Decision{}
}

// stepLine is the spec line of a step (0 when unknown).
func stepLine(s *specs.Step) int {
	if s == nil {
		return 0
	}
	return s.Pos.Line
}
