package run

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// What the runner does at a gate that --approve does not cover.
const (
	OnGateExit    = "exit"    // stop (exit 4) and print how to decide and resume
	OnGateWait    = "wait"    // wait for another process to decide (until the deadline)
	OnGateApprove = "approve" // approve (policy, resolved_by system)
	OnGateKill    = "kill"    // kill (policy, resolved_by system)
	OnGatePrompt  = "prompt"  // ask on the console
)

// GatePolicy is the policy review sink of a headless run.
type GatePolicy struct {
	// Approve lists gate step ids to approve; "all" approves every gate.
	// A gate named explicitly is approved as a human decision (the person
	// who typed the flag); "all" and OnGate approve are system decisions and
	// do not apply to `approver: human` gates.
	Approve []string
	// OnGate is one of the OnGate* constants (default exit).
	OnGate string
	// Reviewer is recorded with the decisions (default $USER).
	Reviewer string
}

func (p GatePolicy) approves(stepID string) (bool, review.ResolvedBy) {
	for _, a := range p.Approve {
		if a == stepID {
			return true, review.Human
		}
	}
	for _, a := range p.Approve {
		if a == "all" {
			return true, review.System
		}
	}
	return false, ""
}

// ValidOnGate reports whether s is a valid --on-gate value.
func ValidOnGate(s string) bool {
	switch s {
	case OnGateExit, OnGateWait, OnGateApprove, OnGateKill, OnGatePrompt:
		return true
	}
	return false
}

// Console is the console review sink: it shows the gate on Out and reads
// the decision from In (a terminal).
type Console struct {
	In  io.Reader
	Out io.Writer
	br  *bufio.Reader
}

func (c *Console) line() (string, error) {
	if c.br == nil {
		c.br = bufio.NewReader(c.In)
	}
	s, err := c.br.ReadString('\n')
	if err != nil && s == "" {
		return "", err
	}
	return strings.TrimSpace(s), nil
}

// Ask shows the review and returns the decision (outcome and rationale).
func (c *Console) Ask(pr review.PendingReview) (review.Outcome, string, error) {
	w := c.Out
	// Everything shown comes from the spec, the steps' outputs or other
	// processes: escaped (specs.EscapeControl) so it cannot drive the terminal.
	fmt.Fprintf(w, "\n── gate %s (flow %s, round %d) ──\n%s\n", specs.EscapeControl(pr.StepID), specs.EscapeControl(pr.FlowID), pr.Round, escapeLines(pr.Question))
	if outs, ok := pr.Artifacts["step_outputs"].(map[string]any); ok && len(outs) > 0 {
		keys := make([]string, 0, len(outs))
		for k := range outs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "outputs so far:")
		for _, k := range keys {
			b, _ := json.Marshal(outs[k])
			fmt.Fprintf(w, "  %s: %s\n", specs.EscapeControl(k), specs.EscapeControl(clip(string(b), 300)))
		}
	}
	if pr.Deadline != nil {
		fmt.Fprintf(w, "deadline: %s (then %s)\n", pr.Deadline.Local().Format(time.RFC3339), specs.EscapeControl(string(pr.OnTimeout)))
	}
	choices := make([]string, len(pr.Outcomes))
	for i, o := range pr.Outcomes {
		choices[i] = string(o)
	}
	for {
		fmt.Fprintf(w, "decision [%s]: ", strings.Join(choices, "/"))
		s, err := c.line()
		if err != nil {
			return "", "", fmt.Errorf("reading the gate decision: %w", err)
		}
		o := matchOutcome(strings.ToLower(s), pr.Outcomes)
		if o == "" {
			fmt.Fprintf(w, "please answer one of: %s\n", strings.Join(choices, ", "))
			continue
		}
		fmt.Fprint(w, "rationale (optional): ")
		note, err := c.line()
		if err != nil && err != io.EOF {
			return "", "", err
		}
		return o, note, nil
	}
}

func matchOutcome(s string, allowed []review.Outcome) review.Outcome {
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

// gate resolves the gate the flow waits at through the sinks and returns
// the engine's next response, or an end (stopped at the gate).
func (r *Runner) gate(ctx context.Context, fc *flowCtx, _ *engine.GateDispatch) (turn, error) {
	st, err := r.svc.Get(ctx, fc.id)
	if err != nil {
		return turn{}, err
	}
	env := engine.Env{Spec: fc.spec, Flow: fc.flow, Now: r.now()}
	pr, ok := engine.PendingReviewOf(st, env)
	if !ok {
		// The gate was resolved meanwhile: continue from the current state.
		return answered(r.svc.Resume(ctx, fc.id))
	}
	step := fc.flow.Step(pr.StepID)
	rep := r.stepReport(fc, step)
	r.emit(Event{Kind: EventGateOpen, FlowID: fc.id, Step: step, Gate: &pr, Spec: fc.spec})
	reviewer := r.opts.Gates.Reviewer
	if reviewer == "" {
		reviewer = os.Getenv("USER")
	}
	round := pr.Round
	decide := func(o review.Outcome, note string, by review.ResolvedBy, ch review.Channel) (turn, error) {
		next, err := answered(r.svc.GateResolve(ctx, fc.id, review.Decision{StepID: pr.StepID, Round: &round, Outcome: o,
			Rationale: note, Reviewer: reviewer, ResolvedBy: by, Channel: ch}))
		if err != nil {
			return turn{}, err
		}
		if next.err != nil {
			// max_rounds_exceeded, or someone else decided first: show it and
			// continue from the current state.
			r.emit(Event{Kind: EventGateResolved, FlowID: fc.id, Step: step, Spec: fc.spec, Message: "decision refused: " + next.err.Message})
			return answered(r.svc.Resume(ctx, fc.id))
		}
		rep.Attempts++
		rep.Status = "passed"
		if o == review.Kill {
			rep.Status = "killed"
		}
		r.emit(Event{Kind: EventGateResolved, FlowID: fc.id, Step: step, Spec: fc.spec, Status: string(o), Message: fmt.Sprintf("%s (%s, %s)", o, ch, by)})
		return next, nil
	}
	human := pr.Approver == review.HumanApprover
	if ok, by := r.opts.Gates.approves(pr.StepID); ok && (by == review.Human || !human) {
		return decide(review.Approve, "approved by --approve", by, review.ChannelPolicy)
	}
	switch r.opts.Gates.OnGate {
	case OnGateApprove:
		if !human {
			return decide(review.Approve, "approved by --on-gate approve", review.System, review.ChannelPolicy)
		}
	case OnGateKill:
		return decide(review.Kill, "killed by --on-gate kill", review.System, review.ChannelPolicy)
	case OnGatePrompt:
		if r.opts.Console != nil {
			o, note, err := r.opts.Console.Ask(pr)
			if err != nil {
				// No answer (stdin closed): nobody here can decide.
				end := r.gateStop(fc, pr)
				end.message = err.Error() + "\n" + end.message
				return stop(end)
			}
			return decide(o, note, review.Human, review.ChannelConsole)
		}
	case OnGateWait:
		return r.waitGate(ctx, fc, pr)
	}
	return stop(r.gateStop(fc, pr))
}

// gateStop is the end of a run stopped at a gate nobody here may resolve.
func (r *Runner) gateStop(fc *flowCtx, pr review.PendingReview) *endState {
	root := rootID(fc)
	msg := fmt.Sprintf("flow %s stopped at gate '%s' (round %d). Decide it, then continue the run:\n"+
		"  stratum gate approve %s %s --note \"…\"   (or: reject, revise)\n"+
		"  stratum run --resume %s",
		fc.id, pr.StepID, pr.Round, fc.id, pr.StepID, root)
	if pr.Approver == review.HumanApprover {
		msg += "\n(the gate requires a human decision: approver: human)"
	}
	return &endState{status: EndGate, gate: &pr, message: msg}
}

// waitGate waits for another process (or this one's TUI) to decide the
// gate. It follows the store's events (Service.Watch) and re-reads the flow
// when one is about it; a timer at the gate's deadline applies expired
// deadlines (SweepTimeouts), as every stratum process does, so on_timeout
// takes effect even when no other process sweeps.
func (r *Runner) waitGate(ctx context.Context, fc *flowCtx, pr review.PendingReview) (turn, error) {
	r.emit(Event{Kind: EventGateWait, FlowID: fc.id, Step: fc.flow.Step(pr.StepID), Gate: &pr, Spec: fc.spec,
		Message: fmt.Sprintf("waiting for a decision: stratum gate approve %s %s", fc.id, pr.StepID)})
	// The end of the log before the first read: Watch delivers everything
	// after it, so a decision made in between is not missed.
	after, err := r.svc.LastSeq(ctx)
	if err != nil {
		return turn{}, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	events, err := r.svc.Watch(watchCtx, after)
	if err != nil {
		return turn{}, err
	}
	var expired <-chan time.Time
	if pr.Deadline != nil {
		t := time.NewTimer(time.Until(*pr.Deadline))
		defer t.Stop()
		expired = t.C
	}
	for {
		st, err := r.svc.Get(ctx, fc.id)
		if err != nil {
			return turn{}, err
		}
		if st.Status != engine.StatusAwaitingGate || st.Gate == nil || st.Gate.StepID != pr.StepID || st.Gate.Round != pr.Round {
			if step := fc.flow.Step(pr.StepID); step != nil {
				rep := r.stepReport(fc, step)
				rep.Attempts++
				rep.Status = "passed"
				if st.Status == engine.StatusKilled {
					rep.Status = "killed"
				}
				r.emit(Event{Kind: EventGateResolved, FlowID: fc.id, Step: step, Spec: fc.spec, Status: rep.Status, Message: "decided by another process"})
			}
			return answered(r.svc.Resume(ctx, fc.id))
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return stop(&endState{status: EndInterrupted})
			case <-expired:
				expired = nil
				if _, err := r.svc.SweepTimeouts(ctx); err != nil {
					return turn{}, err
				}
				break wait
			case batch, ok := <-events:
				if !ok {
					return stop(&endState{status: EndInterrupted})
				}
				if engine.Mentions(batch, fc.id) {
					break wait
				}
			}
		}
	}
}

// stepLine is the spec line of a step (0 when unknown).
func stepLine(s *specs.Step) int {
	if s == nil {
		return 0
	}
	return s.Pos.Line
}
