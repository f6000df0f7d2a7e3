package tui

import (
	"context"
	"time"

	"github.com/stratum-go/stratum/review"
)

// sinkWait bounds how long Emit waits for a console that is busy.
const sinkWait = 100 * time.Millisecond

// Sink is the console's review.Sink: runs started from the console (or any
// in-process caller) offer their gates here, and the console opens the
// decision dialog at once (with its grace period). The decision itself goes
// through the store like any other, so a gate the console misses (Emit
// timed out) still reaches the Gates pane through the event log.
type Sink struct {
	ch chan review.PendingReview
}

var _ review.Sink = (*Sink)(nil)

// NewSink returns a Sink; pass Reviews to Options.Reviews.
func NewSink() *Sink { return &Sink{ch: make(chan review.PendingReview, 16)} }

// Emit offers r to the console. It waits at most 100 ms and never fails
// because the console is busy; it returns ctx's error if ctx ends first.
func (s *Sink) Emit(ctx context.Context, r review.PendingReview) error {
	t := time.NewTimer(sinkWait)
	defer t.Stop()
	select {
	case s.ch <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Reviews is the channel the model reads offered gates from.
func (s *Sink) Reviews() <-chan review.PendingReview { return s.ch }
