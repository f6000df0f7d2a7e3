package state

import (
	"encoding/json"
	"time"
)

// The stored shape of a flow a Go program drives through the library
// (engine/stratum): FlowState.Library, its calls count, its reviews and how
// it ended. The rules of a review (its value, its decision, its deadline)
// are the engine's (engine/library.go).

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

// IsLibrary reports whether st is a flow a Go program drives.
func (st *FlowState) IsLibrary() bool { return st != nil && st.Library != nil }

func (l *LibraryState) clone() *LibraryState {
	if l == nil {
		return nil
	}
	c := *l
	c.Output = CloneValue(l.Output)
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
	c.Artifacts = CloneObject(r.Artifacts)
	c.Options = CloneRaws(r.Options)
	c.Schema = CloneObject(r.Schema)
	c.Deadline = cloneTime(r.Deadline)
	c.OnTimeout = CloneRaw(r.OnTimeout)
	if r.Decision != nil {
		d := *r.Decision
		d.Value = CloneRaw(r.Decision.Value)
		c.Decision = &d
	}
	return &c
}

// CloneRaw copies a raw JSON value (nil for nil).
func CloneRaw(b json.RawMessage) json.RawMessage {
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

// OpenReviews are the reviews still waiting, oldest first.
func (l *LibraryState) OpenReviews() []*LibraryReview {
	var out []*LibraryReview
	for _, r := range l.Reviews {
		if r.Status == ReviewOpen {
			out = append(out, r)
		}
	}
	return out
}
