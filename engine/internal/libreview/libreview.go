package libreview

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Gate is the review as the pending-gate index holds it.
func Gate(r *state.LibraryReview) *state.PendingGate {
	g := &state.PendingGate{StepID: r.ID, DispatchedAt: r.OpenedAt, Deadline: state.ClonePtr(r.Deadline), Approver: r.Approver}
	if r.Deadline != nil {
		g.OnTimeout = string(review.Kill)
		if r.OnTimeout != nil {
			g.OnTimeout = string(review.Approve)
		}
	}
	return g
}

// CheckOpen is the rule of a review as it opens: its approver is "any"
// or "human"; a human review has no value on timeout (a deadline would
// decide, as the system, what only a person may decide: the spec
// validator's policy-human); a value on timeout is one of the options, or
// fits the review's type, as a reviewer's value must (CheckValue).
func CheckOpen(r *state.LibraryReview) error {
	switch review.Approver(r.Approver) {
	case review.AnyApprover, review.HumanApprover:
	default:
		return fmt.Errorf("approver must be 'any' or 'human', got '%s'", r.Approver)
	}
	if r.OnTimeout == nil {
		return nil
	}
	if r.Approver == string(review.HumanApprover) {
		return fmt.Errorf("review %q has approver human and a value on timeout, which would decide at the deadline, as the system, "+
			"a review only a person may decide (policy-human): drop the value on timeout (a timeout is then an error) or use approver any",
			clip(r.Question, 80))
	}
	if _, _, err := CheckValue(r, 0, r.OnTimeout); err != nil {
		return fmt.Errorf("the value on timeout does not fit the review: %v", err)
	}
	return nil
}

// CheckValue is the one rule for the value of a library review's
// decision: option (1-based; 0 = none) picks one of the review's options;
// otherwise value must be one of the options (when it has any) and fit its
// type's schema. It returns the value to record (the option's bytes for an
// option) and the option number (found for a value equal to an option).
func CheckValue(r *state.LibraryReview, option int, value json.RawMessage) (json.RawMessage, int, error) {
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
		return state.CloneRaw(r.Options[option-1]), option, nil
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
				return state.CloneRaw(o), i + 1, nil
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
	return state.CloneRaw(value), 0, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Decide closes an open review with d: approve records the value (an
// option or a value, CheckValue), kill rejects it. It is the one
// rule of a decision, for reviews in the store (GateResolve) and for those
// a program keeps in memory (no store); the caller checks the review is
// open and the channel may decide. An error leaves r as it was.
func Decide(r *state.LibraryReview, d review.Decision, now time.Time) error {
	dec := &state.ReviewDecision{Reviewer: d.Reviewer, Rationale: d.Rationale, ResolvedBy: string(d.ResolvedBy),
		Channel: string(d.Channel), DecidedAt: orTime(d.DecidedAt, now)}
	switch d.Outcome {
	case review.Approve:
		v, opt, err := CheckValue(r, d.Option, d.Value)
		if err != nil {
			return err
		}
		dec.Value, dec.Option = v, opt
		r.Status = state.ReviewApproved
	case review.Kill:
		if d.Option != 0 || len(d.Value) > 0 {
			return fmt.Errorf("a rejection carries no value")
		}
		r.Status = state.ReviewRejected
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
func Expire(r *state.LibraryReview, now time.Time) (outcome review.Outcome, ok bool) {
	if r.Status != state.ReviewOpen || r.Deadline == nil || r.Deadline.After(now) {
		return "", false
	}
	r.Status = state.ReviewTimedOut
	r.Decision = &state.ReviewDecision{Value: state.CloneRaw(r.OnTimeout), Reviewer: "auto", Rationale: "timeout",
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
