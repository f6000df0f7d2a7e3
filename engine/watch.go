package engine

import (
	"context"
	"sync"
)

// subscriberBuffer is how many published batches an in-process subscriber
// may fall behind before publications to it are dropped.
const subscriberBuffer = 64

// gapRead bounds how many events Watch reads from the log to fill a gap.
const gapRead = 1000

// broker fans the events of the transitions a Service commits out to the
// Service's watchers in this process. Publishing never blocks a
// transition: a subscriber whose buffer is full misses the batch, and
// Watch gets those events by sequence number from the store instead (see
// Watch). Subscribers share the published slices and must not modify them.
type broker struct {
	mu   sync.Mutex
	subs map[chan []Event]struct{}
}

func (b *broker) subscribe() chan []Event {
	ch := make(chan []Event, subscriberBuffer)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[chan []Event]struct{}{}
	}
	b.subs[ch] = struct{}{}
	return ch
}

func (b *broker) unsubscribe(ch chan []Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs, ch)
}

// publish offers evs to every subscriber without waiting.
func (b *broker) publish(evs []Event) {
	if len(evs) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- evs:
		default: // full: this subscriber recovers the batch from the log
		}
	}
}

// Watch delivers every committed event with a sequence number above after,
// in order and once, until ctx ends; then the channel is closed. It merges
// two sources by sequence number:
//
//   - the events of the transitions this Service commits, published
//     in-process as each commits (with the sequence numbers the store
//     assigned), so they arrive without a round trip through the store;
//   - the store's Watch, which sees every commit, other processes' too.
//
// A publication that continues the sequence — its first event follows the
// last one delivered, by the store's rule (Follows) — is delivered at once.
// One that leaves a gap — another process committed in between, or this
// watcher fell behind and the broker dropped publications for it — makes
// Watch read the gap from the log first. The store's Watch delivers every commit
// in any case (so nothing dropped is lost, even without a later
// publication); what it delivers that was already delivered is skipped.
// A consumer that does not read holds Watch back, never a transition.
func (s *Service) Watch(ctx context.Context, after uint64) (<-chan []Event, error) {
	ctx, cancel := context.WithCancel(ctx)
	local := s.events.subscribe()
	remote, err := s.Store.Watch(ctx, after)
	if err != nil {
		s.events.unsubscribe(local)
		cancel()
		return nil, err
	}
	out := make(chan []Event)
	go func() {
		defer close(out)
		defer cancel()
		defer s.events.unsubscribe(local)
		last := after
		for {
			var evs []Event
			select {
			case <-ctx.Done():
				return
			case batch, ok := <-remote:
				if !ok {
					return
				}
				evs = batch
			case batch := <-local:
				evs = batch
				if len(evs) > 0 && evs[0].Seq > last && !s.Store.Follows(last, evs[0].Seq) {
					// A gap: read it (and, usually, this batch) from the
					// log; if that fails, the store's Watch delivers it.
					evs, _ = s.Query().Events(ctx, last, gapRead)
				}
			}
			evs = newer(evs, last)
			if len(evs) == 0 {
				continue
			}
			last = evs[len(evs)-1].Seq
			select {
			case out <- evs:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// newer is the tail of evs (in sequence order) after seq.
func newer(evs []Event, seq uint64) []Event {
	for i, e := range evs {
		if e.Seq > seq {
			return evs[i:]
		}
	}
	return nil
}
