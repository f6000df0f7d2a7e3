package etcdstore

import (
	"context"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// watchBatch bounds how many events one delivery carries.
const watchBatch = 1000

// watchPoll is how often a watcher re-reads the log when no push came (a
// watch stream that stalled silently); pushes normally arrive first.
const watchPoll = 5 * time.Second

// watchRetry is how long a watcher waits after a failed read.
const watchRetry = 500 * time.Millisecond

// Watch delivers the committed events after the sequence number after, in
// order, until ctx ends. It follows the Store's feed (feed.go: one etcd
// watch on the appends of every process on any machine, its events kept in
// memory), so a wake-up reads nothing from etcd; it reads the log (e/ and
// p/, at one snapshot) only for what the feed does not hold: events from
// before it started (a cursor further back, at the first read) or a flow
// deleted since. Nothing is skipped or repeated, and a slow consumer loses
// nothing.
func (s *Store) Watch(ctx context.Context, after uint64) (<-chan []engine.Event, error) {
	return s.watch(ctx, after, 0)
}

// watch is Watch whose feed, when it is not running yet, starts at
// revision from when it is not zero (the tests start it below a
// compaction).
func (s *Store) watch(ctx context.Context, after uint64, from int64) (<-chan []engine.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.feedStart(from)
	out := make(chan []engine.Event)
	go func() {
		defer close(out)
		// cursor: no event up to it is left to deliver (after, or the end
		// of a snapshot read that found nothing more).
		cursor := after
		for {
			wake := s.feed.wake()
			evs, ok := s.feed.since(ctx, cursor, 0, watchBatch, 0)
			if !ok {
				var rev int64
				s.watchReads.Add(1)
				err := s.View(ctx, func(etx engine.Tx) error {
					t := etx.(*tx)
					var err error
					evs, err = t.logEvents(cursor, watchBatch)
					rev = t.rev
					return err
				})
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					sleepCtx(ctx, watchRetry)
					continue
				}
				if len(evs) < watchBatch && rev > 0 {
					cursor = max(cursor, seqOf(rev, 1<<seqShift-1))
				}
			}
			if len(evs) > 0 {
				select {
				case out <- evs:
					after = evs[len(evs)-1].Seq
					cursor = max(cursor, after)
				case <-ctx.Done():
					return
				}
				continue
			}
			select {
			case <-wake:
			case <-time.After(watchPoll):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
