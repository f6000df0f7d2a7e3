package etcdstore

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

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
// order, until ctx ends. It is woken by an etcd watch on the puts of p/
// (every append in any process on any machine) and reads the log from the last
// event it delivered, so nothing is skipped or repeated and a slow consumer
// loses nothing. A watch cancelled by the cluster (compaction, no leader)
// is re-established after a fresh read.
func (s *Store) Watch(ctx context.Context, after uint64) (<-chan []engine.Event, error) {
	return s.watch(ctx, after, 0)
}

// watch is Watch whose first etcd watch starts at revision from when it is
// not zero (the tests start it below a compaction).
func (s *Store) watch(ctx context.Context, after uint64, from int64) (<-chan []engine.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make(chan []engine.Event)
	go func() {
		defer close(out)
		var sub *subscription
		defer func() { sub.stop() }()
		for {
			// Read what follows `after` at some revision rev, then watch from
			// rev+1: nothing committed in between is missed.
			var evs []engine.Event
			var rev int64
			s.watchReads.Add(1)
			err := s.View(ctx, func(etx engine.Tx) error {
				t := etx.(*tx)
				var err error
				evs, err = t.Events(after, watchBatch)
				rev = t.rev
				return err
			})
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				select {
				case <-time.After(watchRetry):
					continue
				case <-ctx.Done():
					return
				}
			}
			if len(evs) > 0 {
				select {
				case out <- evs:
					after = evs[len(evs)-1].Seq
				case <-ctx.Done():
					return
				}
				continue
			}
			if sub == nil {
				if from == 0 {
					from = rev + 1
				}
				sub = s.subscribe(ctx, from)
				from = 0
			}
			select {
			case resp, ok := <-sub.ch:
				if !ok || resp.Canceled || resp.Err() != nil {
					// Compacted, no leader, or closed: start over from a
					// fresh read.
					sub.stop()
					sub = nil
					if !ok || resp.Err() != nil {
						select {
						case <-time.After(watchRetry / 5):
						case <-ctx.Done():
							return
						}
					}
				}
			case <-time.After(watchPoll):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// subscription is one etcd watch on the pending events p/ (every append).
type subscription struct {
	ch     clientv3.WatchChan
	cancel context.CancelFunc
}

// subscribe watches the puts of p/ from revision rev; the watch requires a
// leader, so a member cut off from the quorum cancels it instead of
// staying silent.
func (s *Store) subscribe(ctx context.Context, rev int64) *subscription {
	c, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	return &subscription{ch: s.cli.Watch(c, s.key("p/"), clientv3.WithPrefix(), clientv3.WithFilterDelete(), clientv3.WithRev(rev)), cancel: cancel}
}

func (w *subscription) stop() {
	if w != nil {
		w.cancel()
	}
}
