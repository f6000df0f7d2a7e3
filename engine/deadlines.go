package engine

import (
	"context"
	"fmt"
	"time"
)

// EnforceDeadlines applies expired gate deadlines (SweepTimeouts) until ctx
// ends, without polling: it sweeps at once, then sleeps until the earliest
// deadline of the gates pending in the store; a gate opened anywhere (in
// this process or another, learnt from Watch) with an earlier deadline
// brings the next sweep forward. A sweep that fails (a locked or unreadable
// store) is retried after retry; report is told of every sweep that applied
// deadlines or failed. It returns when ctx ends, or with the
// error of a Watch that cannot start.
func (s *Service) EnforceDeadlines(ctx context.Context, retry time.Duration, report func(applied int, err error)) error {
	if retry <= 0 {
		retry = 3 * time.Second
	}
	after, err := s.Query().LastSeq(ctx)
	if err != nil {
		return err
	}
	events, err := s.Watch(ctx, after)
	if err != nil {
		return err
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var next *time.Time // the earliest deadline known to be pending
	arm := func(at time.Time) {
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(max(at.Sub(s.now()), time.Millisecond))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case batch, ok := <-events:
			if !ok {
				return nil
			}
			// Only an opened gate can bring a deadline forward; a gate
			// decided or killed at most makes the timer fire for nothing.
			for _, ev := range batch {
				opened, ok := ev.Data.(GateOpened)
				if !ok {
					continue
				}
				if d := opened.Deadline; d != nil && (next == nil || d.Before(*next)) {
					next = d
					arm(*d)
				}
			}
			continue
		case <-timer.C:
		}
		n, earliest, err := s.sweepNext(ctx, retry)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			report(n, err)
			at := s.now().Add(retry)
			next = &at
			arm(at)
			continue
		case n > 0:
			report(n, nil)
		}
		next = earliest
		if next != nil {
			arm(*next)
		}
	}
}

// sweepNext runs one SweepTimeouts (a panic becomes an error: a sweeper in
// the background must not take its process down) and returns when to
// sweep next: the earliest deadline still pending afterwards, or retry from
// now for a gate still due (one its sweep could not apply, e.g. its spec no
// longer parses) — not at once, which would spin.
func (s *Service) sweepNext(ctx context.Context, retry time.Duration) (n int, next *time.Time, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	if n, err = s.SweepTimeouts(ctx); err != nil {
		return n, nil, err
	}
	err = s.Store.View(ctx, func(tx Tx) error {
		due, after, err := tx.GatesDue(s.now())
		due, err = s.listing(due, err)
		if err != nil {
			return err
		}
		next = after
		// A gate still due (its deadline not applied) is tried again after
		// retry.
		for _, p := range due {
			if p.Gate == nil || p.Gate.Deadline == nil {
				continue
			}
			if again := s.now().Add(retry); next == nil || again.Before(*next) {
				next = &again
			}
		}
		return nil
	})
	return n, next, err
}
