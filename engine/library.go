package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
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

// ReviewStatus is where a library review is.
type ReviewStatus string

const (
	ReviewOpen      ReviewStatus = "open"
	ReviewApproved  ReviewStatus = "approved"  // decided with a value
	ReviewRejected  ReviewStatus = "rejected"  // declined by a reviewer
	ReviewTimedOut  ReviewStatus = "timed_out" // its deadline passed (Decision.Value is OnTimeout, if any)
	ReviewWithdrawn ReviewStatus = "withdrawn" // the program stopped waiting (its context ended, the flow finished)
)

// LibraryState is what a library flow adds to its FlowState.
type LibraryState struct {
	// Calls counts the calls recorded (each is also a step record and a
	// trace record).
	Calls int `json:"calls"`
	// Reviews are every review the flow opened, in order.
	Reviews []*LibraryReview `json:"reviews,omitempty"`
	// Output and Error are how Flow.Run ended.
	Output any    `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// LibraryReview is one review (stratum.AwaitHuman) of a library flow: a gate
// whose step id is ID ("review-1", "review-2", … in the flow).
type LibraryReview struct {
	ID        string            `json:"id"`
	Question  string            `json:"question"`
	Trigger   string            `json:"trigger,omitempty"`
	Artifacts map[string]any    `json:"artifacts,omitempty"`
	Options   []json.RawMessage `json:"options,omitempty"`
	// Schema is the JSON Schema of the value's Go type.
	Schema   map[string]any `json:"schema,omitempty"`
	Approver string         `json:"approver,omitempty"` // any | human
	OpenedAt time.Time      `json:"opened_at"`
	// Deadline is absolute (wall clock), so every process enforces the same
	// one and a restart does not move it.
	Deadline *time.Time `json:"deadline,omitempty"`
	// OnTimeout is the value a timeout decides (nil: a timeout decides
	// nothing; the program gets a timeout error).
	OnTimeout json.RawMessage `json:"on_timeout,omitempty"`
	Status    ReviewStatus    `json:"status"`
	Decision  *ReviewDecision `json:"decision,omitempty"`
}

// ReviewDecision is how a library review was closed.
type ReviewDecision struct {
	Value      json.RawMessage `json:"value,omitempty"`
	Option     int             `json:"option,omitempty"` // 1-based, when an option was picked
	Reviewer   string          `json:"reviewer,omitempty"`
	Rationale  string          `json:"rationale,omitempty"`
	ResolvedBy string          `json:"resolved_by,omitempty"`
	Channel    string          `json:"channel,omitempty"`
	DecidedAt  time.Time       `json:"decided_at"`
}

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
	Trace      *TraceRecord
	Data       map[string]any // extra trace-event data (violations, error …)
}

// IsLibrary reports whether st is a flow a Go program drives.
func (st *FlowState) IsLibrary() bool { return st != nil && st.Library != nil }

func (l *LibraryState) clone() *LibraryState {
	if l == nil {
		return nil
	}
	c := *l
	c.Output = cloneValue(l.Output)
	if l.Reviews != nil {
		c.Reviews = make([]*LibraryReview, len(l.Reviews))
		for i, r := range l.Reviews {
			c.Reviews[i] = r.Clone()
		}
	}
	return &c
}

// Clone returns a deep copy of the review.
func (r *LibraryReview) Clone() *LibraryReview {
	if r == nil {
		return nil
	}
	c := *r
	c.Artifacts = cloneObject(r.Artifacts)
	c.Options = cloneRaws(r.Options)
	c.Schema = cloneObject(r.Schema)
	c.Deadline = cloneTime(r.Deadline)
	c.OnTimeout = cloneRaw(r.OnTimeout)
	if r.Decision != nil {
		d := *r.Decision
		d.Value = cloneRaw(r.Decision.Value)
		c.Decision = &d
	}
	return &c
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// Review returns the review with that step id (nil when none).
func (l *LibraryState) Review(id string) *LibraryReview {
	if l == nil {
		return nil
	}
	for _, r := range l.Reviews {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// openReviews are the reviews still waiting, oldest first.
func (l *LibraryState) openReviews() []*LibraryReview {
	var out []*LibraryReview
	for _, r := range l.Reviews {
		if r.Status == ReviewOpen {
			out = append(out, r)
		}
	}
	return out
}

// Gate is the review as the pending-gate index holds it.
func (r *LibraryReview) Gate() *PendingGate {
	g := &PendingGate{StepID: r.ID, DispatchedAt: r.OpenedAt, Deadline: cloneTime(r.Deadline), Approver: r.Approver}
	if r.Deadline != nil {
		g.OnTimeout = string(review.Kill)
		if r.OnTimeout != nil {
			g.OnTimeout = string(review.Approve)
		}
	}
	return g
}

// syncLibraryGate keeps a library flow's Status and Gate in line with its
// reviews: awaiting_gate while one is open, running otherwise (a finished
// flow keeps its status). Gate, what the pending-gate index and the
// deadline sweeps read, is the open review whose deadline comes first
// (else the oldest), so a sweep that sleeps until the next deadline wakes
// for the right one.
func syncLibraryGate(st *FlowState) {
	if st.Status.Finished() {
		st.Gate = nil
		return
	}
	open := st.Library.openReviews()
	if len(open) == 0 {
		st.Gate = nil
		st.Status = StatusRunning
		return
	}
	first := open[0]
	for _, r := range open[1:] {
		if r.Deadline != nil && (first.Deadline == nil || r.Deadline.Before(*first.Deadline)) {
			first = r
		}
	}
	st.Gate = first.Gate()
	st.Status = StatusAwaitingGate
}

// CheckReviewValue is the one rule for the value of a library review's
// decision: option (1-based; 0 = none) picks one of the review's options;
// otherwise value must be one of the options (when it has any) and fit its
// type's schema. It returns the value to record (the option's bytes for an
// option) and the option number (found for a value equal to an option).
func CheckReviewValue(r *LibraryReview, option int, value json.RawMessage) (json.RawMessage, int, error) {
	n := len(r.Options)
	if option != 0 && len(value) > 0 {
		return nil, 0, fmt.Errorf("give either an option or a value, not both")
	}
	if option != 0 {
		if n == 0 {
			return nil, 0, fmt.Errorf("review '%s' has no options: give a value (JSON) instead", r.ID)
		}
		if option < 1 || option > n {
			return nil, 0, fmt.Errorf("option %d is out of range: review '%s' has options 1–%d", option, r.ID, n)
		}
		return cloneRaw(r.Options[option-1]), option, nil
	}
	if len(value) == 0 {
		if n > 0 {
			return nil, 0, fmt.Errorf("review '%s' needs a value: pick an option (1–%d)", r.ID, n)
		}
		return nil, 0, fmt.Errorf("review '%s' needs a value (JSON)", r.ID)
	}
	var v any
	if err := json.Unmarshal(value, &v); err != nil {
		return nil, 0, fmt.Errorf("value is not valid JSON: %v", err)
	}
	if n > 0 {
		want, _ := specs.CanonicalJSON(v)
		for i, o := range r.Options {
			var ov any
			if json.Unmarshal(o, &ov) != nil {
				continue
			}
			if got, _ := specs.CanonicalJSON(ov); string(got) == string(want) {
				return cloneRaw(o), i + 1, nil
			}
		}
		return nil, 0, fmt.Errorf("value %s is not one of the options of review '%s': pick one (1–%d)", clip(string(value), 80), r.ID, n)
	}
	if r.Schema != nil {
		sch, err := specs.NewSchema(r.Schema)
		if err != nil {
			return nil, 0, fmt.Errorf("review '%s': %v", r.ID, err)
		}
		if problems := sch.Validate(v); len(problems) > 0 {
			return nil, 0, fmt.Errorf("value does not fit the type of review '%s': %s", r.ID, strings.Join(problems, "; "))
		}
	}
	return cloneRaw(value), 0, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// libraryRefusal answers a spec transition on a library flow.
func libraryRefusal(st *FlowState) *Error {
	return refusal(ErrTypeLibraryFlow,
		"Flow '%s' is run by a Go program (driver library): it has no spec steps to report, resume or revert; "+
			"only its reviews can be decided (`stratum tui`, `stratum gate approve|reject`, stratum_gate_resolve)", st.FlowID)
}

// resolveLibraryReview applies a decision to one review of a library flow
// (GateResolve's branch for such flows): approve records a value (an option
// or a value that fits), kill rejects the review, revise is refused.
func resolveLibraryReview(st *FlowState, env transitionEnv, d review.Decision) (transitionResult, error) {
	if st.Status.Finished() {
		return refused(refusal(ErrTypeFlowComplete, "Flow is already complete")), nil
	}
	stepID := d.StepID
	r := st.Library.Review(stepID)
	if r == nil {
		var open []string
		for _, o := range st.Library.openReviews() {
			open = append(open, o.ID)
		}
		return refused(refusal(ErrTypeWrongStep, "Flow '%s' has no review '%s' (open reviews: %s)", st.FlowID, stepID, orStr(strings.Join(open, ", "), "none"))), nil
	}
	if r.Status != ReviewOpen {
		e := refusal(ErrTypeReviewClosed, "Review '%s' of flow '%s' is already closed (%s)", r.ID, st.FlowID, r.Status)
		if r.Decision != nil && r.Decision.Reviewer != "" {
			e.Message += " by " + r.Decision.Reviewer
		}
		return refused(e), nil
	}
	if !d.ResolvedBy.Valid() {
		return refused(refusal(ErrTypeInvalidResolvedBy, "resolved_by must be one of ['agent', 'human', 'system'], got '%s'", d.ResolvedBy)), nil
	}
	if r.Approver == string(review.HumanApprover) && d.Channel == review.ChannelMCP {
		return refused(refusal(ErrTypeGateRequiresHuman,
			"Review '%s' requires a human decision (approver: human) and cannot be resolved through MCP; "+
				"decide it in `stratum tui` or with `stratum gate`", r.ID)), nil
	}
	if d.Outcome == review.Revise {
		return refused(refusal(ErrTypeInvalidOutcome,
			"Review '%s' is a review of a Go program: approve it with a value (--option N or --value JSON) or reject it; it cannot be revised", r.ID)), nil
	}
	if !d.Outcome.Valid() {
		return refused(refusal(ErrTypeInvalidOutcome, "outcome must be one of ['approve', 'kill', 'revise'], got '%s'", d.Outcome)), nil
	}
	if err := r.Decide(d, env.Now); err != nil {
		return refused(refusal(ErrTypeInvalidReviewValue, "%s; the review stays open", err.Error())), nil
	}
	return closeLibraryReview(st, env, r, string(d.Outcome)), nil
}

// Decide closes an open review with d: approve records the value (an
// option or a value, CheckReviewValue), kill rejects it. It is the one
// rule of a decision, for reviews in the store (GateResolve) and for those
// a program keeps in memory (no store); the caller checks the review is
// open and the channel may decide. An error leaves r as it was.
func (r *LibraryReview) Decide(d review.Decision, now time.Time) error {
	dec := &ReviewDecision{Reviewer: d.Reviewer, Rationale: d.Rationale, ResolvedBy: string(d.ResolvedBy),
		Channel: string(d.Channel), DecidedAt: orTime(d.DecidedAt, now)}
	switch d.Outcome {
	case review.Approve:
		v, opt, err := CheckReviewValue(r, d.Option, d.Value)
		if err != nil {
			return err
		}
		dec.Value, dec.Option = v, opt
		r.Status = ReviewApproved
	case review.Kill:
		if d.Option != 0 || len(d.Value) > 0 {
			return fmt.Errorf("a rejection carries no value")
		}
		r.Status = ReviewRejected
	default:
		return fmt.Errorf("a review is approved with a value or rejected, not %s", d.Outcome)
	}
	r.Decision = dec
	return nil
}

// Expire times the review out if it is open and its deadline is not after
// now: it decides its OnTimeout value when it has one (channel timeout,
// resolved_by system, reviewer auto, rationale "timeout"). It reports
// whether it did, and the outcome recorded (approve with a value, kill
// without).
func (r *LibraryReview) Expire(now time.Time) (outcome review.Outcome, ok bool) {
	if r.Status != ReviewOpen || r.Deadline == nil || r.Deadline.After(now) {
		return "", false
	}
	r.Status = ReviewTimedOut
	r.Decision = &ReviewDecision{Value: cloneRaw(r.OnTimeout), Reviewer: "auto", Rationale: "timeout",
		ResolvedBy: string(review.System), Channel: string(review.ChannelTimeout), DecidedAt: now}
	if r.OnTimeout != nil {
		return review.Approve, true
	}
	return review.Kill, true
}

func orTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}

// closeLibraryReview records a review's end: a gate record, the gate index,
// a gate_resolved event (with the value).
func closeLibraryReview(st *FlowState, env transitionEnv, r *LibraryReview, outcome string) transitionResult {
	d := r.Decision
	rec := newRecord(st, env, RecordGate, r.ID)
	rec.Outcome = outcome
	rec.Rationale = d.Rationale
	rec.ResolvedBy = d.ResolvedBy
	rec.Channel = d.Channel
	rec.Reviewer = d.Reviewer
	rec.DurationMS = durationMS(r.OpenedAt, env.Now)
	st.Records = append(st.Records, rec)
	syncLibraryGate(st)
	// The decided value and the review's status are in the state
	// (LibraryReview); the event carries the decision's typed fields.
	data := EventData{Outcome: string(outcome), ResolvedBy: string(d.ResolvedBy), Channel: string(d.Channel),
		Reviewer: d.Reviewer, Rationale: d.Rationale}
	return transitionResult{
		Outcome: &ReviewClosed{FlowID: st.FlowID, Review: r.Clone()},
		Events:  []Event{event(st, env, EventGateResolved, r.ID, data)},
	}
}

// libraryTimeouts applies every passed deadline of a library flow's open
// reviews: the review times out, deciding its OnTimeout value when it has
// one (channel timeout, resolved_by system, reviewer auto, rationale
// "timeout").
func libraryTimeouts(st *FlowState, env transitionEnv) (transitionResult, error) {
	var res transitionResult
	for _, r := range st.Library.openReviews() {
		if outcome, ok := r.Expire(env.Now); ok {
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
	Review *LibraryReview
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
