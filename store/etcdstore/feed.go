package etcdstore

import (
	"context"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
)

// The feed: the tail of the event log as one etcd watch delivers it, kept in
// memory, so neither a Watch woken by a commit nor a read of the recent log
// (the engine's gap reads) reads etcd. (Schema 6 and before read all of p/,
// which cost etcd a step for every event ever moved out of it since the
// cluster last compacted: with a few processes appending, every commit
// woke every watcher into one, and a transition's cost grew with the
// history; schema 7 reads the log after a cursor from etcd's history,
// logtail.go, which costs what was committed since.)
//
// One etcd watch per Store, started by the first Watch and kept until Close,
// covers [meta/gen, the end of p/): the puts of p/ (every appended event, its
// sequence number from its key's mod revision), meta/last_append (every
// appending commit) and meta/gen (every flow deletion). From the revision it
// started at (from), the feed holds every event committed, up to the
// revision of the last response (upTo), at most feedKeep of them. A flow
// deletion (meta/gen) clears it and starts it again after the deletion: a
// deleted flow's events are not in the log any more, and the feed cannot
// tell which they are. A watch cancelled (compaction, no leader) starts again
// from the revision after upTo, or, when that was compacted, from now, with
// nothing held.

// feedKeep is how many events the feed holds at least (at most twice as
// many).
const feedKeep = 4096

// feedWait bounds how long a read waits for the feed to reach its snapshot
// (it normally has: the watch delivers a commit as it applies).
const feedWait = 100 * time.Millisecond

// feedMisses counts the reads of the recent log the feed could not answer
// (tests: how often the log was read instead).
var feedMisses atomic.Int64

type feed struct {
	mu sync.Mutex
	// running: the watch runs; from, upTo: the feed holds every event of
	// the revisions in [from, upTo]; evs, in sequence order.
	running  bool
	from     int64
	upTo     int64
	evs      []engine.Event
	changed  chan struct{} // closed and replaced when the feed moves on
	restarts int           // (tests) how often the watch started again
}

// feedStart starts the Store's feed if it is not running yet, at revision
// at (0: the next one).
func (s *Store) feedStart(at int64) {
	f := &s.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running || s.closing.Err() != nil {
		return
	}
	f.running = true
	f.from, f.upTo = math.MaxInt64, 0 // nothing held yet
	f.changed = make(chan struct{})
	go s.feedRun(at)
}

// feedRun keeps the etcd watch of the feed until the Store closes.
func (s *Store) feedRun(start int64) {
	ctx := s.closing
	if start != 0 {
		s.feed.reset(start)
	}
	for ctx.Err() == nil {
		if start == 0 {
			c, cancel := context.WithTimeout(ctx, s.timeout)
			r, err := s.cli.Get(c, s.key(lastAppendKey), clientv3.WithKeysOnly())
			cancel()
			if err != nil {
				sleepCtx(ctx, watchRetry)
				continue
			}
			start = r.Header.Revision + 1
			s.feed.reset(start)
		}
		c, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		ch := s.cli.Watch(c, s.key("meta/gen"), clientv3.WithRange(prefixEnd(s.key("p/"))),
			clientv3.WithFilterDelete(), clientv3.WithRev(start))
		for resp := range ch {
			if resp.CompactRevision != 0 {
				start = 0 // what followed upTo is gone: start from now
				break
			}
			if resp.Canceled || resp.Err() != nil {
				break
			}
			s.feedApply(resp)
		}
		cancel()
		s.feed.mu.Lock()
		s.feed.restarts++
		if start != 0 {
			start = s.feed.upTo + 1
		}
		s.feed.mu.Unlock()
		sleepCtx(ctx, watchRetry/5)
	}
	s.feed.mu.Lock()
	s.feed.running = false
	s.feed.mu.Unlock()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// reset empties the feed: it holds the events from revision from on.
func (f *feed) reset(from int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.from, f.upTo, f.evs = from, from-1, nil
	f.notify()
}

func (f *feed) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// feedApply adds what one watch response delivered.
func (s *Store) feedApply(resp clientv3.WatchResponse) {
	gen, pend := s.key("meta/gen"), s.key("p/")
	var add []engine.Event
	deleted := int64(0)
	for _, ev := range resp.Events {
		k := string(ev.Kv.Key)
		switch {
		case k == gen:
			deleted = max(deleted, ev.Kv.ModRevision)
		case len(k) > len(pend) && k[:len(pend)] == pend:
			evs, err := pendingEvents(kv{key: k, val: ev.Kv.Value, mod: ev.Kv.ModRevision})
			if err != nil {
				continue // a damaged key: reads of the log report it
			}
			add = append(add, evs...)
		}
	}
	f := &s.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	if deleted != 0 {
		f.from, f.evs = deleted+1, nil
		var kept []engine.Event
		for _, e := range add {
			if int64(e.Seq>>seqShift) > deleted {
				kept = append(kept, e)
			}
		}
		add = kept
	}
	sort.Slice(add, func(i, j int) bool { return add[i].Seq < add[j].Seq })
	f.evs = append(f.evs, add...)
	if n := len(f.evs) - feedKeep; len(f.evs) > 2*feedKeep {
		// Trimmed by halves: a copy every feedKeep events, not every one.
		f.evs = append([]engine.Event(nil), f.evs[n:]...)
		// The first revision held may have lost events: from the next.
		f.from = int64(f.evs[0].Seq>>seqShift) + 1
	}
	f.upTo = max(f.upTo, resp.Header.Revision)
	f.notify()
}

// since returns the events after seq after up to revision rev (at most
// limit; 0: all; rev 0: all it holds), if the feed holds them all: the
// first revision that may hold one is not below from, and the feed
// reached rev, waiting for it at most wait. ok is false when it does not
// hold them.
func (f *feed) since(ctx context.Context, after uint64, rev int64, limit int, wait time.Duration) (evs []engine.Event, ok bool) {
	deadline := time.Now().Add(wait)
	f.mu.Lock()
	if rev <= 0 {
		rev = f.upTo
	}
	for f.running && f.upTo < rev && time.Now().Before(deadline) {
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
		case <-ctx.Done():
		}
		f.mu.Lock()
		if ctx.Err() != nil {
			break
		}
	}
	defer f.mu.Unlock()
	// The first revision that may hold an event after `after`.
	need := int64(after >> seqShift)
	if after&(1<<seqShift-1) == 1<<seqShift-1 {
		need++
	}
	if !f.running || f.upTo < rev || need < f.from {
		return nil, false
	}
	i := sort.Search(len(f.evs), func(i int) bool { return f.evs[i].Seq > after })
	for _, e := range f.evs[i:] {
		if int64(e.Seq>>seqShift) > rev || (limit > 0 && len(evs) >= limit) {
			break
		}
		evs = append(evs, e)
	}
	return evs, true
}

// wake is a channel closed when the feed next moves on.
func (f *feed) wake() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// eventsFromFeed is Events from the feed, when it runs and holds what the
// read needs: the snapshot is pinned by reading meta/last_append (the
// revision of the last appending commit, which the feed must have reached:
// no event is committed after it up to the snapshot) and meta/gen (no flow
// deleted since the feed started to hold events). ok is false otherwise,
// and the log is read.
func (t *tx) eventsFromFeed(after uint64, limit int) ([]engine.Event, bool, error) {
	f := &t.s.feed
	f.mu.Lock()
	running := f.running
	f.mu.Unlock()
	if !running || t.write {
		return nil, false, nil
	}
	gen, last, ok, err := t.marks()
	if err != nil || !ok {
		return nil, false, err // not the keys expected: read the log
	}
	f.mu.Lock()
	from := f.from
	f.mu.Unlock()
	if gen >= from || last == 0 {
		return nil, false, nil
	}
	evs, ok := f.since(t.ctx, after, last, limit, feedWait)
	if !ok {
		feedMisses.Add(1)
	}
	return evs, ok, nil
}
