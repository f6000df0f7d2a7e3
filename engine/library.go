package engine

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine/internal/libreview"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// This file is the store side of the Go library (engine/stratum): a flow
// driven by a Go program rather than a spec. Such a flow has no spec
// (RawSpec is empty, Driver is DriverLibrary, Library is set); its calls are
// trace entries (a step record and a trace event each, like an infer step of
// the runner) and its reviews are gates — several may be open at once, each
// listed on its own (one row per review in `stratum query gates` and the
// TUI's Gates pane). The program keeps a lease on the flow alive, like the
// runner, so a flow whose program died shows as stalled. Nothing but the
// program writes its calls; a review is decided through GateResolve from any
// front end (the TUI, `stratum gate`, MCP, the program itself), first
// decision wins. Spec transitions (step_done, resume, revert …) refuse a
// library flow with error_type library_flow.

// ReviewRequest is what the program asks when it opens a review.
type ReviewRequest struct {
	Question  string
	Trigger   string
	Artifacts map[string]any
	Options   []json.RawMessage
	Schema    map[string]any
	Approver  string
	Timeout   time.Duration // 0: none
	OnTimeout json.RawMessage
}

// LibraryCall is one call of a library flow (a typed LLM function or a
// traced plain function), recorded as a step record, a trace record and a
// trace event — what an infer step of the runner leaves.
type LibraryCall struct {
	Function   string
	Attempts   int
	DurationMS int64
	Tokens     int64
	CostUSD    *float64
	CacheHit   bool
	Trace      *state.TraceRecord
	Data       map[string]any // extra trace-event data (violations, error …)
}

// syncLibraryGate keeps a library flow's Status and Gate in line with its
// reviews: awaiting_gate while one is open, running otherwise (a finished
// flow keeps its status). Gate, what the pending-gate index and the
// deadline sweeps read, is the open review whose deadline comes first
// (else the oldest), so a sweep that sleeps until the next deadline wakes
// for the right one.
func syncLibraryGate(st *state.FlowState) {
	if st.Status.Finished() {
		st.Gate = nil
		return
	}
	open := st.Library.OpenReviews()
	if len(open) == 0 {
		st.Gate = nil
		st.Status = state.StatusRunning
		return
	}
	first := open[0]
	for _, r := range open[1:] {
		if r.Deadline != nil && (first.Deadline == nil || r.Deadline.Before(*first.Deadline)) {
			first = r
		}
	}
	st.Gate = libreview.Gate(first)
	st.Status = state.StatusAwaitingGate
}

// CheckReviewValue is the rule for the value of a library review's
// decision (libreview.CheckValue): option (1-based; 0 = none) picks one of
// the review's options; otherwise value must be one of the options (when
// it has any) and fit its type's schema. It returns the value to record
// and the option number. The TUI checks a value typed into its dialog
// with it before it decides.
func CheckReviewValue(r *state.LibraryReview, option int, value json.RawMessage) (json.RawMessage, int, error) {
	return libreview.CheckValue(r, option, value)
}

// libraryRefusal answers a spec transition on a library flow.
func libraryRefusal(st *state.FlowState, cmd string) *Error {
	return refusal(ErrTypeLibraryFlow,
		"Flow '%s' is run by a Go program (driver library): it has no spec steps to report, resume or revert; "+
			"only its reviews can be decided (`%s tui`, `%s gate approve|reject`, stratum_gate_resolve)", st.FlowID, cmd, cmd)
}

// resolveLibraryReview applies a decision to one review of a library flow
// (GateResolve's branch for such flows): approve records a value (an option
// or a value that fits), kill rejects the review, revise is refused.
func resolveLibraryReview(st *state.FlowState, env transitionEnv, d review.Decision) (transitionResult, error) {
	if st.Status.Finished() {
		return refused(refusal(ErrTypeFlowComplete, "Flow is already complete")), nil
	}
	stepID := d.StepID
	r := st.Library.Review(stepID)
	if r == nil {
		var open []string
		for _, o := range st.Library.OpenReviews() {
			open = append(open, o.ID)
		}
		return refused(refusal(ErrTypeWrongStep, "Flow '%s' has no review '%s' (open reviews: %s)", st.FlowID, stepID, orStr(strings.Join(open, ", "), "none"))), nil
	}
	if r.Status != state.ReviewOpen {
		e := refusal(ErrTypeReviewClosed, "Review '%s' of flow '%s' is already closed (%s)", r.ID, st.FlowID, r.Status)
		if r.Decision != nil && r.Decision.Reviewer != "" {
			e.Message += " by " + r.Decision.Reviewer
		}
		return refused(e), nil
	}
	if stalledAt(st, env.Now) {
		// Its program is gone: nothing would ever read the decision.
		e := refusal(ErrTypeFlowStalled,
			"Flow '%s' is stalled: the Go program that opened review '%s' has exited (its lease expired%s), so nothing would act on a decision; "+
				"nothing was recorded. End the flow with `%s kill %s --reason TEXT` (or :kill in `%s tui`); run the program again for a new flow",
			st.FlowID, r.ID, leaseEnd(st), env.cmd(), st.FlowID, env.cmd())
		e.FlowID = st.FlowID
		return refused(e), nil
	}
	if !d.ResolvedBy.Valid() {
		return refused(refusal(ErrTypeInvalidResolvedBy, "resolved_by must be one of ['agent', 'human', 'system'], got '%s'", d.ResolvedBy)), nil
	}
	if err := review.Approver(r.Approver).CheckChannel(d.Channel, "Review '"+r.ID+"'"); err != nil {
		return refused(refusal(ErrTypeGateRequiresHuman, "%s", err.Error())), nil
	}
	if d.Outcome == review.Revise {
		return refused(refusal(ErrTypeInvalidOutcome,
			"Review '%s' is a review of a Go program: approve it with a value (--option N or --value JSON) or reject it; it cannot be revised", r.ID)), nil
	}
	if !d.Outcome.Valid() {
		return refused(refusal(ErrTypeInvalidOutcome, "outcome must be one of ['approve', 'kill', 'revise'], got '%s'", d.Outcome)), nil
	}
	if err := libreview.Decide(r, d, env.Now); err != nil {
		return refused(refusal(ErrTypeInvalidReviewValue, "%s; the review stays open", err.Error())), nil
	}
	return closeLibraryReview(st, env, r, string(d.Outcome)), nil
}

// closeLibraryReview records a review's end: a gate record, the gate index,
// a gate_resolved event (with the value).
func closeLibraryReview(st *state.FlowState, env transitionEnv, r *state.LibraryReview, outcome string) transitionResult {
	d := r.Decision
	rec := newRecord(st, env, state.RecordGate, r.ID)
	rec.Outcome = outcome
	rec.Rationale = d.Rationale
	rec.ResolvedBy = d.ResolvedBy
	rec.Channel = d.Channel
	rec.Reviewer = d.Reviewer
	rec.DurationMS = durationMS(r.OpenedAt, env.Now)
	st.Records = append(st.Records, rec)
	syncLibraryGate(st)
	// The event carries the whole decision, the value and the review's
	// status included, so the program waiting on it need not read the
	// flow (ReviewNews).
	data := GateResolved{Outcome: string(outcome), ResolvedBy: string(d.ResolvedBy), Channel: string(d.Channel),
		Reviewer: d.Reviewer, Rationale: d.Rationale, ReviewStatus: string(r.Status), Option: d.Option, Value: state.CloneRaw(d.Value)}
	return transitionResult{
		Outcome: &ReviewClosed{FlowID: st.FlowID, Review: r.Clone()},
		Events:  []Event{event(st, env, r.ID, data)},
	}
}

// ReviewNews reads a batch of events for a Go program waiting on its
// review reviewID of flow flowID, as GateNews does for a spec's gate: the
// review's status and decision as the review's gate_resolved event
// carries them (d non-nil: no read of the flow is needed; DecidedAt is the
// event's time), or whether something happened that only reading the
// flow can tell (reread: the flow finished, or an older build logged the
// decision without its status and value). Other events are neither.
func ReviewNews(batch []Event, flowID, reviewID string) (status state.ReviewStatus, d *state.ReviewDecision, reread bool) {
	for _, e := range batch {
		if e.FlowID != flowID {
			continue
		}
		switch p := e.Data.(type) {
		case GateResolved:
			if e.StepID != reviewID {
				continue
			}
			if p.ReviewStatus == "" {
				reread = true
				continue
			}
			return state.ReviewStatus(p.ReviewStatus), &state.ReviewDecision{Value: state.CloneRaw(p.Value), Option: p.Option,
				Reviewer: p.Reviewer, Rationale: p.Rationale, ResolvedBy: p.ResolvedBy, Channel: p.Channel, DecidedAt: e.Time}, false
		case FlowFinished:
			reread = true
		}
	}
	return "", nil, reread
}

// leaseEnd is " at TIME" when st had a lease, for messages.
func leaseEnd(st *state.FlowState) string {
	if st.Owner == nil {
		return ""
	}
	return " at " + st.Owner.ExpiresAt.UTC().Format(time.RFC3339)
}

// libraryTimeouts applies every passed deadline of a library flow's open
// reviews: the review times out, deciding its OnTimeout value when it has
// one (channel timeout, resolved_by system, reviewer auto, rationale
// "timeout").
func libraryTimeouts(st *state.FlowState, env transitionEnv) (transitionResult, error) {
	var res transitionResult
	for _, r := range st.Library.OpenReviews() {
		if outcome, ok := libreview.Expire(r, env.Now); ok {
			res = mergeResults(res, closeLibraryReview(st, env, r, string(outcome)))
		}
	}
	if len(res.Events) == 0 {
		return transitionResult{Outcome: &notTimedOut{Message: "No review deadline has passed"}, Unchanged: true}, nil
	}
	return res, nil
}

// ReviewClosed is the answer to a decision on a library review (and to a
// timeout or withdrawal): the review as closed.
type ReviewClosed struct {
	FlowID string
	Review *state.LibraryReview
}

// WireStatus implements Outcome.
func (r *ReviewClosed) WireStatus() string { return "review_" + string(r.Review.Status) }

func (r *ReviewClosed) wire() Response {
	out := Response{"status": r.WireStatus(), "flow_id": r.FlowID, "step_id": r.Review.ID}
	if d := r.Review.Decision; d != nil {
		if d.Value != nil {
			out["value"] = d.Value
		}
		if d.Option > 0 {
			out["option"] = d.Option
		}
		out["reviewer"] = d.Reviewer
		out["channel"] = d.Channel
		out["rationale"] = d.Rationale
	}
	return out
}

// MarshalJSON renders the wire form.
func (r *ReviewClosed) MarshalJSON() ([]byte, error) { return json.Marshal(r.wire()) }
