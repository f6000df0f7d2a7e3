package state

import "time"

// FlowSummary is what lists show without decoding whole states. engine.Summarize
// computes it; engine.Tx.Put persists it next to the state.
type FlowSummary struct {
	FlowID       string       `json:"flow_id"`
	FlowName     string       `json:"flow_name"`
	Status       FlowStatus   `json:"status"`
	CurrentStep  string       `json:"current_step_id,omitempty"`
	StepNumber   int          `json:"step_number"`
	TotalSteps   int          `json:"total_steps"`
	Round        int          `json:"round"`
	Driver       string       `json:"driver,omitempty"`
	ParentFlowID string       `json:"parent_flow_id,omitempty"`
	Gate         *PendingGate `json:"gate,omitempty"`
	// Owner is the runner's lease (nil when none), so listings can tell a
	// flow driven by a live runner (ExpiresAt ahead) from an abandoned one.
	Owner *Lease `json:"owner,omitempty"`
	// Review is what the gate the flow waits at asks its reviewer (the
	// gate step in the flow's spec), so gate lists need no state: nil when
	// Gate is nil, or when the spec did not parse or lacks the gate step
	// when the summary was computed. engine.Query.GateReviews reads the state of
	// a gate whose summary lacks it.
	Review    *GateReview `json:"review,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	Version   int64       `json:"version"`
}

// GateReview is what a flow's pending gate asks its reviewer, as
// engine.Summarize derives it from the gate step: the question (the gate
// function's intent, or "Approve step 'S' of flow 'F'?") and whether the
// gate accepts revise (its step has on_revise; approve and kill always).
type GateReview struct {
	Question string `json:"question"`
	Revise   bool   `json:"revise,omitempty"`
}

// Prunable reports whether Store.GC may delete the flow summarised by sum
// at cutoff: it has finished (complete, killed, failed, budget_exhausted)
// and has not changed since cutoff. Running flows and flows waiting at a
// gate are never prunable.
func (sum *FlowSummary) Prunable(cutoff time.Time) bool {
	return sum.Status.Finished() && sum.UpdatedAt.Before(cutoff)
}

// Stalled reports whether nothing drives the flow summarised by sum any
// more: it is still running or awaiting a gate, a runner drove it
// (Driver "runner"), and the runner's lease is gone (released when the
// runner exited — exit 1, exit 4 at a gate, Ctrl-C) or expired at now
// (killed). `stratum run --resume ID` continues such a flow. A Go
// program's flow (Driver "library") holds a lease the same way, renewed
// while the program runs; it is stalled once the program died, and never
// resumed. Flows driven by an agent over MCP hold no lease, so they are
// never reported stalled.
func (sum *FlowSummary) Stalled(now time.Time) bool {
	if !sum.Status.Active() || sum.Driver != DriverRunner && sum.Driver != DriverLibrary {
		return false
	}
	return sum.Owner == nil || !sum.Owner.ExpiresAt.After(now)
}

// ListCursor is a position in a flow listing's order (engine.Tx.List:
// newest CreatedAt first, ties by FlowID descending): a flow's creation
// time and id (FlowSummary.Cursor). The flow it names need not exist any
// more.
type ListCursor struct {
	CreatedAt time.Time
	FlowID    string
}

// IsZero reports whether c is the start of the listing.
func (c ListCursor) IsZero() bool { return c.FlowID == "" && c.CreatedAt.IsZero() }

// Precedes reports whether c comes before the flow created at created
// with id id in the listing order (newest first, ties by id descending):
// whether a page read after c may hold that flow.
func (c ListCursor) Precedes(created time.Time, id string) bool {
	if c.IsZero() {
		return true
	}
	if !created.Equal(c.CreatedAt) {
		return created.Before(c.CreatedAt)
	}
	return id < c.FlowID
}

// Cursor is the summary's position in the listing order, to resume after it.
func (s *FlowSummary) Cursor() ListCursor {
	return ListCursor{CreatedAt: s.CreatedAt, FlowID: s.FlowID}
}

// GatesDue picks from pending (waiting gates' summaries) the gates whose
// deadline is at or before now, and the earliest deadline after now (nil:
// none). A store without a deadline index answers engine.Tx.GatesDue with
// it over its pending gates: correct, but it decodes every one.
func GatesDue(pending []FlowSummary, now time.Time) (due []FlowSummary, next *time.Time) {
	for _, p := range pending {
		if p.Gate == nil || p.Gate.Deadline == nil {
			continue
		}
		d := *p.Gate.Deadline
		if !d.After(now) {
			due = append(due, p)
		} else if next == nil || d.Before(*next) {
			next = &d
		}
	}
	return due, next
}
