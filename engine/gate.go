package engine

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/py"
)

// gateResolve is stratum_gate_resolve (upstream-behavior §2.10). Validation
// order: flow not complete → current step is a gate → outcome → resolved_by
// → step id → (ours) approver human refuses the mcp channel → (ours) a
// decision for another round is stale. Then approve / revise / kill.
func gateResolve(st *state.FlowState, env transitionEnv, d review.Decision) (transitionResult, error) {
	ensureMaps(st)
	applyReviewID(&d)
	if st.IsLibrary() {
		return resolveLibraryReview(st, env, d)
	}
	if d.Option != 0 || len(d.Value) > 0 {
		return refused(refusal(ErrTypeInvalidReviewValue, "Flow '%s' waits at a gate of its spec: a gate decision carries no value (--option and --value are for reviews of Go programs)", st.FlowID)), nil
	}
	if pastEnd(st, env) || isFinished(st) {
		return refused(refusal(ErrTypeFlowComplete, "Flow is already complete")), nil
	}
	step := currentStep(st, env)
	if !step.IsGate() {
		return refused(refusal(ErrTypeNotAGateStep, "Step '%s' is not a gate step", step.ID)), nil
	}
	if !d.Outcome.Valid() {
		allowed := make([]string, len(review.Outcomes))
		for i, o := range review.Outcomes {
			allowed[i] = string(o)
		}
		sort.Strings(allowed)
		return refused(refusal(ErrTypeInvalidOutcome,
			"outcome must be one of %s, got %s", py.ReprStrings(allowed), py.ReprString(string(d.Outcome)))), nil
	}
	if !d.ResolvedBy.Valid() {
		return refused(refusal(ErrTypeInvalidResolvedBy, "resolved_by must be one of %s, got %s",
			py.ReprStrings([]string{string(review.Agent), string(review.Human), string(review.System)}), py.ReprString(string(d.ResolvedBy)))), nil
	}
	if d.StepID != step.ID {
		return refused(refusal(ErrTypeWrongStep, "Expected gate step '%s', got '%s'", step.ID, d.StepID)), nil
	}
	if err := review.Approver(gateApprover(st, step)).CheckChannel(d.Channel, "Gate '"+step.ID+"'"); err != nil {
		return refused(refusal(ErrTypeGateRequiresHuman, "%s", err.Error())), nil
	}
	if d.Round != nil && *d.Round != st.Round {
		e := refusal(ErrTypeStaleRound, "Decision is for round %d of gate '%s', but the gate is in round %d", *d.Round, step.ID, st.Round)
		e.Round = st.Round
		return refused(e), nil
	}
	if d.Outcome == review.Revise && step.OnRevise == "" {
		return refused(refusal(ErrTypeMissingOnRevise, "Gate step '%s' has no on_revise target configured", step.ID)), nil
	}
	return resolveGate(st, env, step, d)
}

// checkDecision applies review.Check, the rule of every channel (revise
// and kill need a rationale, except through MCP), to a decision before
// the gate is read: error_type rationale_required, with Check's message.
func checkDecision(d review.Decision) *Error {
	applyReviewID(&d)
	if err := review.Check(d); err != nil {
		return refusal(ErrTypeRationaleRequired, "%s", err.Error())
	}
	return nil
}

// applyReviewID fills a decision's step and round from its review id
// (flow_id/step_id/round) when they are not given.
func applyReviewID(d *review.Decision) {
	if d.ReviewID == "" {
		return
	}
	parts := strings.Split(d.ReviewID, "/")
	if len(parts) < 3 {
		return
	}
	if d.StepID == "" {
		d.StepID = strings.Join(parts[1:len(parts)-1], "/")
	}
	if d.Round == nil {
		if n, err := strconv.Atoi(parts[len(parts)-1]); err == nil {
			d.Round = &n
		}
	}
}

// gateApprover is the approver of the pending gate (or of the step's
// function when the gate was not dispatched yet).
func gateApprover(st *state.FlowState, step *specs.Step) string {
	if st.Gate != nil && st.Gate.StepID == step.ID && st.Gate.Approver != "" {
		return st.Gate.Approver
	}
	if step.Fn != nil && step.Fn.Approver != "" {
		return step.Fn.Approver
	}
	return string(review.AnyApprover)
}

// resolveGate applies a validated decision to the current gate.
func resolveGate(st *state.FlowState, env transitionEnv, step *specs.Step, d review.Decision) (transitionResult, error) {
	var res transitionResult
	rec := newRecord(st, env, state.RecordGate, step.ID)
	rec.Outcome = string(d.Outcome)
	rec.Rationale = d.Rationale
	rec.ResolvedBy = string(d.ResolvedBy)
	rec.Channel = string(d.Channel)
	rec.Reviewer = d.Reviewer
	opened := st.DispatchedAt[step.ID]
	if opened.IsZero() && st.Gate != nil {
		opened = st.Gate.DispatchedAt
	}
	rec.DurationMS = durationMS(opened, env.Now)
	st.Records = append(st.Records, rec)
	// The event carries the decision, so whoever waits at the gate acts on
	// it without reading the flow (GateDecision).
	resolved := GateResolved{
		Outcome: string(d.Outcome), ResolvedBy: string(d.ResolvedBy), Channel: string(d.Channel),
		Reviewer: d.Reviewer, Rationale: d.Rationale, Round: st.Round,
	}
	tooMany := d.Outcome == review.Revise && env.Flow != nil && env.Flow.MaxRounds > 0 && st.Round >= env.Flow.MaxRounds
	switch {
	case tooMany:
		resolved.MaxRoundsExceeded = true
	case d.Outcome == review.Revise:
		resolved.ReviseTarget = step.OnRevise
	}
	res.Events = append(res.Events, event(st, env, step.ID, resolved))

	switch d.Outcome {
	case review.Approve:
		closeGate(st, step)
		jumpOrEnd(st, env, step.OnApprove)
	case review.Revise:
		if tooMany {
			// The GateRecord stays in the active trace; the gate remains current.
			e := refusal(ErrTypeMaxRoundsExceeded, "Maximum rounds (%d) exceeded", env.Flow.MaxRounds)
			e.Round = st.Round
			res.Err = e
			return res, nil
		}
		closeGate(st, step)
		st.Rounds = append(st.Rounds, copyRecords(st.Records))
		st.ArchivedIterations = append(st.ArchivedIterations, st.Iterations)
		st.Iterations = map[string][]state.IterationEntry{}
		st.ActiveIteration = nil
		st.IterationBest = map[string]*state.IterationBest{}
		idx := stepIndex(env, step.OnRevise)
		clearFrom(st, env, idx, "")
		st.Records = []state.Record{}
		st.Round++
		st.RoundStartStepID = strPtr(step.OnRevise)
		st.CurrentIdx = idx
	case review.Kill:
		closeGate(st, step)
		st.TerminalStatus = strPtr(string(state.StatusKilled))
		if step.OnKill == "" || stepIndex(env, step.OnKill) < 0 {
			st.CurrentIdx = totalSteps(env)
			st.Status = state.StatusKilled
			st.ActiveChildFlowID = nil
			res.Events = append(res.Events, event(st, env, step.ID, FlowFinished{Status: string(state.StatusKilled)}))
			res.Outcome = killedPayload(st, env)
			return res, nil
		}
		// README, "Deliberate differences": run only the cleanup step, then end killed.
		i := stepIndex(env, step.OnKill)
		target := stepAt(env, i)
		delete(st.Attempts, target.ID)
		delete(st.DispatchedAt, target.ID)
		st.CurrentIdx = i
	}
	nr, err := currentDispatch(st, env)
	if err != nil {
		return transitionResult{}, err
	}
	return mergeResults(res, nr), nil
}

// GateDecision is the decision a gate_resolved event carries (outcome,
// rationale, reviewer, resolved_by, channel, round; DecidedAt is the
// event's time; a revise's target step is GateResolved.ReviseTarget). ok is
// false for another event, for a decision that left the gate waiting (a
// revise refused by max_rounds: the gate stays in its round), and for an
// event that does not carry the decision (an older log's): a reader that
// needs it then reads the flow.
func (e Event) GateDecision() (d review.Decision, ok bool) {
	x, isResolved := e.Data.(GateResolved)
	if !isResolved || e.Type != EventGateResolved {
		return review.Decision{}, false
	}
	if x.Outcome == "" || x.Channel == "" || x.MaxRoundsExceeded {
		return review.Decision{}, false
	}
	round := x.Round
	return review.Decision{
		ReviewID: review.ID(e.FlowID, e.StepID, round), FlowID: e.FlowID, StepID: e.StepID, Round: &round,
		Outcome: review.Outcome(x.Outcome), Rationale: x.Rationale, Reviewer: x.Reviewer,
		ResolvedBy: review.ResolvedBy(x.ResolvedBy), Channel: review.Channel(x.Channel), DecidedAt: e.Time,
	}, true
}

// GateNews reads a batch of events for a waiter at the gate stepID of
// flowID in round: the decision the gate_resolved event of that step and
// round carries (decided: no read of the flow is needed), or whether
// something else happened to the flow that only reading it can tell
// (reread: a revert, a kill, a decision of an older log without its
// fields). A revise refused by max_rounds is neither: the gate waits on in
// its round. Every waiter of a gate decision (the runner, MCP's
// stratum_wait_gate) reads its batches with GateNews, so a decision is read
// from the event that announces it and the flow only when events do not
// tell.
func GateNews(batch []Event, flowID, stepID string, round int) (d review.Decision, decided, reread bool) {
	for _, e := range batch {
		if e.FlowID != flowID {
			continue
		}
		if e.Type == EventGateResolved && e.StepID == stepID {
			if x, ok := e.Data.(GateResolved); ok && x.MaxRoundsExceeded && x.Round == round {
				continue
			}
			if d, ok := e.GateDecision(); ok && *d.Round == round {
				return d, true, false
			}
		}
		reread = true
	}
	return review.Decision{}, false, reread
}

// closeGate drops the pending gate of step.
func closeGate(st *state.FlowState, step *specs.Step) {
	delete(st.DispatchedAt, step.ID)
	if st.Gate != nil && st.Gate.StepID == step.ID {
		st.Gate = nil
	}
}

// checkTimeouts is stratum_check_timeouts with a persisted absolute deadline
// (st.Gate.Deadline, set when the gate of the round was first dispatched).
// On expiry it applies the gate's on_timeout (kill by default, approve,
// revise — a revise that is impossible, no on_revise or max_rounds reached,
// kills instead) with resolved_by system, channel timeout, rationale
// "timeout". A timeout kill with no cleanup step answers killed +
// reason:"timeout".
//
// A deadline that already fired (applied by the background sweep, another
// process or an earlier check) is reported, not hidden behind no_timeout:
// see firedTimeout.
func checkTimeouts(st *state.FlowState, env transitionEnv) (transitionResult, error) {
	if st.IsLibrary() {
		return libraryTimeouts(st, env)
	}
	res, err := applyExpiredTimeout(st, env)
	if err != nil {
		return res, err
	}
	if nt, ok := res.Outcome.(*notTimedOut); ok && nt.Remaining == nil {
		if fired, ok, err := firedTimeout(st, env); err != nil || ok {
			return fired, err
		}
	}
	return res, nil
}

// applyExpiredTimeout applies the current gate's deadline when it has
// passed, else answers no_timeout (the original's check). The sweep uses it
// alone: a deadline another process applied is not the sweep's to count.
func applyExpiredTimeout(st *state.FlowState, env transitionEnv) (transitionResult, error) {
	ensureMaps(st)
	if st.IsLibrary() {
		return libraryTimeouts(st, env)
	}
	noTimeout := func(msg string) (transitionResult, error) {
		return answer(&notTimedOut{Message: msg}), nil
	}
	if pastEnd(st, env) || isFinished(st) {
		return noTimeout("Flow is already complete")
	}
	step := currentStep(st, env)
	if !step.IsGate() {
		return noTimeout("Current step is not a gate step")
	}
	if st.Gate == nil || st.Gate.StepID != step.ID {
		if step.Fn == nil || step.Fn.Timeout <= 0 {
			return noTimeout("Gate has no timeout configured")
		}
		return noTimeout("Gate not yet dispatched")
	}
	if st.Gate.Deadline == nil {
		return noTimeout("Gate has no timeout configured")
	}
	if remaining := st.Gate.Deadline.Sub(env.Now); remaining > 0 {
		secs := remaining.Seconds()
		return answer(&notTimedOut{Remaining: &secs}), nil
	}
	return applyTimeout(st, env, step)
}

// firedTimeout answers a check made after a deadline fired elsewhere (a
// caller that waited at the gate and checks after a restart) with what the
// check that applied it answered, when the flow's last gate decision was a
// timeout (a gate record with channel timeout, resolved_by system):
//
//   - the timeout killed the flow and it ended (killed, past its end): the
//     killed payload with reason "timeout", its trace, and total_duration_ms
//     up to the flow's last record (not growing with the time of the check);
//   - no step was reported since the timeout (approve, revise, or a kill
//     whose cleanup step is running): the flow's current dispatch, exactly as
//     stratum_resume answers it — the step after the gate (or the flow's
//     completion), the on_revise target, the on_kill cleanup step.
//
// Otherwise (no timeout decided the flow's last gate, or the flow moved on
// since) ok is false and the check answers no_timeout as before.
func firedTimeout(st *state.FlowState, env transitionEnv) (res transitionResult, ok bool, err error) {
	rec, since := lastDecision(st)
	if rec == nil || rec.Channel != string(review.ChannelTimeout) || rec.ResolvedBy != string(review.System) {
		return transitionResult{}, false, nil
	}
	if st.Status == state.StatusKilled && pastEnd(st, env) && rec.Outcome == string(review.Kill) {
		c := killedPayload(st, env)
		c.Reason = "timeout"
		if end := lastRecordAt(st); !end.IsZero() {
			c.TotalDurationMS = durationMS(st.FlowStart, end)
		}
		return answer(c), true, nil
	}
	if since || isFinished(st) && !pastEnd(st, env) {
		return transitionResult{}, false, nil
	}
	res, err = resumeFlow(st, env)
	if err != nil {
		return transitionResult{}, false, err
	}
	if c, ok := res.Outcome.(*Completion); ok {
		if end := lastRecordAt(st); !end.IsZero() {
			c.TotalDurationMS = durationMS(st.FlowStart, end)
		}
	}
	return res, true, nil
}

// lastDecision returns the flow's last gate record (the current round's
// records first, then the archived rounds, newest first; a reverted record
// does not count) and whether a step was reported after it (skip and policy
// records, written while computing the next dispatch, do not count).
func lastDecision(st *state.FlowState) (rec *state.Record, stepSince bool) {
	rounds := append([][]state.Record{}, st.Rounds...)
	rounds = append(rounds, st.Records)
	for r := len(rounds) - 1; r >= 0; r-- {
		for i := len(rounds[r]) - 1; i >= 0; i-- {
			if rounds[r][i].Reverted {
				continue // undone by a revert
			}
			switch rounds[r][i].Type {
			case state.RecordGate:
				return &rounds[r][i], stepSince
			case state.RecordStep:
				stepSince = true
			}
		}
	}
	return nil, stepSince
}

// lastRecordAt is when the flow's last record was written (zero when none
// carries a time).
func lastRecordAt(st *state.FlowState) time.Time {
	for r := len(st.Rounds); r >= 0; r-- {
		recs := st.Records
		if r < len(st.Rounds) {
			recs = st.Rounds[r]
		}
		if n := len(recs); n > 0 {
			return recs[n-1].At
		}
	}
	return time.Time{}
}

// applyTimeout resolves an expired gate with its on_timeout outcome.
func applyTimeout(st *state.FlowState, env transitionEnv, step *specs.Step) (transitionResult, error) {
	outcome := review.Outcome(orStr(st.Gate.OnTimeout, string(review.Kill)))
	if !outcome.Valid() {
		outcome = review.Kill
	}
	if outcome == review.Revise && (step.OnRevise == "" || (env.Flow != nil && env.Flow.MaxRounds > 0 && st.Round >= env.Flow.MaxRounds)) {
		outcome = review.Kill
	}
	round := st.Round
	res, err := resolveGate(st, env, step, review.Decision{
		FlowID: st.FlowID, StepID: step.ID, Round: &round, Outcome: outcome, Rationale: "timeout",
		Reviewer: "system", ResolvedBy: review.System, Channel: review.ChannelTimeout, DecidedAt: env.Now,
	})
	if err != nil {
		return res, err
	}
	if c, ok := res.Outcome.(*Completion); ok && c.Status == state.StatusKilled {
		c.Reason = "timeout"
	}
	return res, nil
}
