package store

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/stratum-go/stratum/engine"
)

// DefaultWatchPoll is how long Watch waits for a file-system event on the
// store file before it re-reads the log anyway: the fallback for when
// fsnotify is unavailable (or out of inotify instances), network file
// systems, or a missed event.
const DefaultWatchPoll = 2 * time.Second

// DefaultWatchGap is the default of Options.WatchGap.
const DefaultWatchGap = 10 * time.Millisecond

// watchBatch bounds how many events one read of a Watch returns.
const watchBatch = 1000

// Watch delivers every batch of committed events with a sequence number
// above after, in order, until ctx ends (then the channel is closed). It
// follows the log by sequence number: woken by fsnotify events on the store
// file and its <path>.verified record (it watches the file's directory,
// filtered by name, so a file replaced by rename is seen too), by this
// process's own commits, and, failing those, every Options.WatchPoll. Every
// process that commits writes the file, so commits of other handles and
// processes wake it like this one's.
//
// This process's own commits cost no read: the watcher learns of them in
// memory (ownCommits), and a wake-up that finds the file as this process's
// last commit left it, with nothing after what was delivered, reads
// nothing. A wake-up after a quiet spell is handled at once, then at most
// one per Options.WatchGap. A read that fails (the file stayed locked past LockTimeout, say)
// is retried at the next wake-up. A consumer that does not take a batch
// holds the watcher where it is: nothing is lost, later reads start after
// the last event delivered.
func (s *Store) Watch(ctx context.Context, after uint64) (<-chan []engine.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := s.newWaker()
	out := make(chan []engine.Event)
	go func() {
		defer close(out)
		defer w.close()
		var lastCheck time.Time
		poll := true // the first pass reads, as after the fallback poll
		for {
			// Leading edge at once, then at most one check per gap: the
			// wake-ups of a burst (several per commit) collapse into the
			// check after it.
			if gap := s.opts.WatchGap - time.Since(lastCheck); gap > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(gap):
				}
			}
			// The file events queued now happened before the check below,
			// which sees what they did (a commit of this process's own
			// fires several, the last before its end): no wake-up for them.
			w.drain()
			own, bell := s.own.last()
			if own.inFlight {
				// The file events of a commit of this process come while
				// it commits: its end tells what it wrote.
				select {
				case <-ctx.Done():
					return
				case <-bell:
				}
				continue
			}
			lastCheck = time.Now()
			var (
				evs     []engine.Event
				current bool
				ok      bool
			)
			if !poll {
				evs, current = own.since(after, s.path, s.markPath())
			}
			switch {
			case current && len(evs) > 0:
				select {
				case out <- evs:
					after = evs[len(evs)-1].Seq
				case <-ctx.Done():
					return
				}
			case !current:
				if after, ok = s.readLog(ctx, after, out); !ok {
					return
				}
			}
			if poll, ok = w.wait(ctx, bell); !ok {
				return
			}
		}
	}()
	return out, nil
}

// readLog sends every event after after to out, in batches of up to
// watchBatch, and returns the last sequence sent; ok is false when ctx
// ended. A failed read ends it early (retried at the next wake-up).
func (s *Store) readLog(ctx context.Context, after uint64, out chan<- []engine.Event) (last uint64, ok bool) {
	s.own.reads.Add(1)
	for {
		// Read after the wake-up, so nothing committed before it is left
		// for a wake-up that already happened.
		var evs []engine.Event
		err := s.View(ctx, func(tx engine.Tx) error {
			var err error
			evs, err = tx.Events(after, watchBatch)
			return err
		})
		if err != nil || len(evs) == 0 {
			return after, true
		}
		select {
		case out <- evs:
			after = evs[len(evs)-1].Seq
		case <-ctx.Done():
			return after, false
		}
		if len(evs) < watchBatch {
			return after, true
		}
	}
}

// waker tells a watcher when the store file may have changed.
type waker struct {
	fs    *fsnotify.Watcher // nil: poll only
	names [2]string         // the base names of the store file and its record
	poll  time.Duration
}

// newWaker starts watching the store's directory. It is created before the
// first read, so a commit between that read and the first wait still wakes
// it.
func (s *Store) newWaker() *waker {
	w := &waker{names: [2]string{filepath.Base(s.path), filepath.Base(s.markPath())}, poll: s.opts.WatchPoll}
	if fw, err := fsnotify.NewWatcher(); err == nil {
		if err := fw.Add(filepath.Dir(s.path)); err == nil {
			w.fs = fw
		} else {
			_ = fw.Close()
		}
	}
	return w
}

func (w *waker) close() {
	if w.fs != nil {
		_ = w.fs.Close()
	}
}

// wait blocks until the store file or its record changed (or may have: an
// fsnotify error, such as a queue overflow, counts), this process committed
// (bell closed), or the poll interval passed; poll reports the last two
// cases but the commit (the watcher then reads whatever it finds), and ok
// is false when ctx ended. Events already queued behind the one that woke
// it are drained, so a commit's several writes cost one wake-up.
func (w *waker) wait(ctx context.Context, bell <-chan struct{}) (poll, ok bool) {
	t := time.NewTimer(w.poll)
	defer t.Stop()
	var (
		events <-chan fsnotify.Event
		errs   <-chan error
	)
	if w.fs != nil {
		events, errs = w.fs.Events, w.fs.Errors
	}
	for {
		select {
		case <-ctx.Done():
			return false, false
		case <-bell:
			return false, true
		case <-t.C:
			return true, true
		case <-errs:
			w.drain()
			return true, true
		case ev, ok := <-events:
			if !ok {
				events, errs = nil, nil // the watcher failed: poll only
				continue
			}
			if w.relevant(ev) {
				w.drain()
				return false, true
			}
		}
	}
}

func (w *waker) relevant(ev fsnotify.Event) bool {
	name := filepath.Base(ev.Name)
	return (name == w.names[0] || name == w.names[1]) && ev.Has(fsnotify.Write|fsnotify.Create|fsnotify.Rename)
}

// drain discards the file-system events already queued.
func (w *waker) drain() {
	if w.fs == nil {
		return
	}
	for {
		select {
		case _, ok := <-w.fs.Events:
			if !ok {
				return
			}
		case <-w.fs.Errors:
		default:
			return
		}
	}
}
