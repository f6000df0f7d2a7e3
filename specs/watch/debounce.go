package watch

import (
	"slices"
	"time"
)

// debouncer is the pure, per-path debounce state: it holds no timer and
// starts no goroutine. A path becomes due once it has been quiet for `quiet`
// since its last event, or `maxDelay` after its first event while events keep
// coming (so a file that is rewritten continuously is still re-validated).
type debouncer struct {
	quiet    time.Duration
	maxDelay time.Duration
	pending  map[string]pendingPath
}

type pendingPath struct {
	first, last time.Time
}

func newDebouncer(quiet time.Duration) *debouncer {
	return &debouncer{quiet: quiet, maxDelay: 10 * quiet, pending: make(map[string]pendingPath)}
}

// add records an event for path at now.
func (d *debouncer) add(path string, now time.Time) {
	p, ok := d.pending[path]
	if !ok {
		p.first = now
	}
	p.last = now
	d.pending[path] = p
}

func (d *debouncer) deadline(p pendingPath) time.Time {
	quiet := p.last.Add(d.quiet)
	if latest := p.first.Add(d.maxDelay); latest.Before(quiet) {
		return latest
	}
	return quiet
}

// next returns the earliest deadline of all pending paths; ok is false when
// nothing is pending.
func (d *debouncer) next() (t time.Time, ok bool) {
	for _, p := range d.pending {
		if dl := d.deadline(p); !ok || dl.Before(t) {
			t, ok = dl, true
		}
	}
	return t, ok
}

// due removes and returns, sorted, every path whose deadline is not after now.
func (d *debouncer) due(now time.Time) []string {
	var out []string
	for path, p := range d.pending {
		if !d.deadline(p).After(now) {
			out = append(out, path)
			delete(d.pending, path)
		}
	}
	slices.Sort(out)
	return out
}

// len is the number of pending paths.
func (d *debouncer) len() int { return len(d.pending) }

// outbox holds updates the consumer has not taken yet, at most one per path,
// in delivery order. Because a newer update for a path replaces the older one
// and moves to the back, the queue stays sorted by Gen.
type outbox struct {
	order  []string
	latest map[string]Update
}

func newOutbox() *outbox { return &outbox{latest: make(map[string]Update)} }

// put queues u, replacing (and dropping) an undelivered update for the same path.
func (o *outbox) put(u Update) {
	if _, ok := o.latest[u.Path]; ok {
		i := slices.Index(o.order, u.Path)
		o.order = slices.Delete(o.order, i, i+1)
	}
	o.order = append(o.order, u.Path)
	o.latest[u.Path] = u
}

// head returns the oldest queued update.
func (o *outbox) head() (Update, bool) {
	if len(o.order) == 0 {
		return Update{}, false
	}
	return o.latest[o.order[0]], true
}

// pop removes the oldest queued update.
func (o *outbox) pop() {
	if len(o.order) == 0 {
		return
	}
	delete(o.latest, o.order[0])
	o.order = slices.Delete(o.order, 0, 1)
}

// len is the number of queued updates.
func (o *outbox) len() int { return len(o.order) }
