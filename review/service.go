package review

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Errors of the request/decide service.
var (
	// ErrRationaleRequired: revise and kill need a rationale, except through
	// MCP (Python Stratum accepts an empty one there).
	ErrRationaleRequired = errors.New("a rationale is required to revise or kill a gate")
	// ErrPass is what a Handler returns when the review is not its to
	// decide: the next handler is asked.
	ErrPass = errors.New("not decided by this handler")
	// ErrDecidedElsewhere is what a Handler returns when the review was
	// decided by someone else (another process, the TUI) while it waited;
	// the Decision it returns is the recorded one, when known.
	ErrDecidedElsewhere = errors.New("decided elsewhere")
	// ErrNoReviewer: every handler passed — nobody here may decide.
	ErrNoReviewer = errors.New("nobody here may decide this gate")
)

// Check is the rule every channel shares: revise and kill need a
// rationale, except through MCP (Python Stratum accepts an empty one
// there). It is the one place this rule lives; the recorder applies it to
// every decision (the engine's gate resolution does, whoever calls it),
// Service.Decide applies it for any recorder, and a front end may call it
// to ask early, before anything is read. Whether the outcome and
// resolved_by are valid, and whether the gate is still waiting in that
// round, is the recorder's to say (the engine answers with Python Stratum's
// error types and messages).
func Check(d Decision) error {
	if d.Outcome != Approve && strings.TrimSpace(d.Rationale) == "" && d.Channel != ChannelMCP {
		return fmt.Errorf("%w (%s of gate %s)", ErrRationaleRequired, d.Outcome, d.StepID)
	}
	return nil
}

// Decider records a decision and answers what the flow does next (A is the
// recorder's answer type: the engine's outcome). Recording is
// first-writer-wins: a decision on a gate that moved on fails with an error
// matching ErrAlreadyDecided, one for another round ErrStaleRound; a
// decision Check refuses fails with an error matching
// ErrRationaleRequired.
type Decider[A any] interface {
	Decide(ctx context.Context, d Decision) (A, error)
}

// Handler is one way a pending review gets decided: a policy (--approve,
// --on-gate), a console prompt, a notice to a UI, a wait for a decision made
// elsewhere. Handle returns a decision to record, or ErrPass (ask the next
// handler), ErrDecidedElsewhere (already recorded by someone else), or
// another error (stop).
type Handler interface {
	Handle(ctx context.Context, r PendingReview) (Decision, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, r PendingReview) (Decision, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, r PendingReview) (Decision, error) { return f(ctx, r) }

// Service is the request/decide service of the gate protocol: the runner
// asks its handlers for a decision through it (Request) and records the
// decision through its Decider, Check applied.
type Service[A any] struct {
	decider  Decider[A]
	handlers []Handler
}

// NewService returns a service recording through d and asking handlers, in
// order, on Request.
func NewService[A any](d Decider[A], handlers ...Handler) *Service[A] {
	return &Service[A]{decider: d, handlers: handlers}
}

// Decide checks d (Check) and records it.
func (s *Service[A]) Decide(ctx context.Context, d Decision) (A, error) {
	if err := Check(d); err != nil {
		var zero A
		return zero, err
	}
	return s.decider.Decide(ctx, d)
}

// Request asks the handlers, in order, for a decision on r and records the
// first one. It returns the decision and the recorder's answer; with
// ErrDecidedElsewhere (wrapped) when a handler saw the review decided by
// someone else (the decision is then the recorded one, when known, and the
// answer is zero); ErrNoReviewer when every handler passed.
func (s *Service[A]) Request(ctx context.Context, r PendingReview) (Decision, A, error) {
	var zero A
	for _, h := range s.handlers {
		d, err := h.Handle(ctx, r)
		switch {
		case errors.Is(err, ErrPass):
			continue
		case err != nil:
			return d, zero, err
		}
		d.ReviewID, d.FlowID, d.StepID = r.ReviewID, r.FlowID, r.StepID
		if d.Round == nil {
			round := r.Round
			d.Round = &round
		}
		a, err := s.Decide(ctx, d)
		return d, a, err
	}
	return Decision{}, zero, ErrNoReviewer
}
