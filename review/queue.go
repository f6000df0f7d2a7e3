package review

import (
	"context"
	"time"
)

// Queue defaults.
const (
	DefaultQueueSize = 16
	DefaultQueueWait = 100 * time.Millisecond
)

// Queue is a Sink that hands each offered review to one reader (a UI)
// through a channel, Reviews. It is how an in-process run tells a console
// that a gate opened, so the console can open its decision dialog at once.
//
// Delivery is best effort and never holds a run up: Emit waits at most the
// queue's wait for room in the buffer, then drops the offer and returns nil.
// That is safe because an offer is only a hint: the review is persisted
// before any sink hears of it, and the decision goes through the store like
// any other, so a reader that misses an offer still finds the gate in the
// store (and through its event log).
type Queue struct {
	ch   chan PendingReview
	wait time.Duration
}

var _ Sink = (*Queue)(nil)

// NewQueue returns a Queue buffering size offers whose Emit waits at most
// wait for room (DefaultQueueSize and DefaultQueueWait when not positive).
func NewQueue(size int, wait time.Duration) *Queue {
	if size <= 0 {
		size = DefaultQueueSize
	}
	if wait <= 0 {
		wait = DefaultQueueWait
	}
	return &Queue{ch: make(chan PendingReview, size), wait: wait}
}

// Emit offers r to the reader. It returns nil once r is queued or the wait
// has passed (the offer is dropped), and ctx's error if ctx ends first.
func (q *Queue) Emit(ctx context.Context, r PendingReview) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(q.wait)
	defer t.Stop()
	select {
	case q.ch <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Reviews is the channel the reader receives offered reviews from. It is
// never closed.
func (q *Queue) Reviews() <-chan PendingReview { return q.ch }
