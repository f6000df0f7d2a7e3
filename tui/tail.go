package tui

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/stratum-go/stratum/engine"
)

// DefaultPollInterval is the Tailer's fallback poll when no file event
// arrives (fsnotify unavailable, network file systems, missed events).
const DefaultPollInterval = time.Second

// tailBatch bounds how many events one read returns.
const tailBatch = 2000

// Tailer follows the store's event log from a sequence number on. It is
// woken by fsnotify events on the database file (it watches the file's
// directory, so an atomic replace is seen too) and polls every Poll as a
// fallback.
type Tailer struct {
	Log EventLog
	// DBPath is the database file; "" disables fsnotify (poll only).
	DBPath string
	// Poll is the fallback interval (DefaultPollInterval when zero).
	Poll time.Duration
	// After is the last sequence number already seen.
	After uint64
}

// Run sends every new batch of events on out until ctx ends. Read errors are
// retried at the next wake-up (a store locked by a long writer is normal).
// It returns ctx's error.
func (t *Tailer) Run(ctx context.Context, out chan<- []engine.Event) error {
	poll := t.Poll
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	var fsEvents <-chan fsnotify.Event
	var fsErrors <-chan error
	if t.DBPath != "" {
		if w, err := fsnotify.NewWatcher(); err == nil {
			defer w.Close()
			if err := w.Add(filepath.Dir(t.DBPath)); err == nil {
				fsEvents, fsErrors = w.Events, w.Errors
			}
		}
	}
	base := filepath.Base(t.DBPath)
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		if err := t.drain(ctx, out); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-fsEvents:
			if !ok {
				fsEvents = nil
				continue
			}
			if filepath.Base(ev.Name) != base || !ev.Has(fsnotify.Write|fsnotify.Create|fsnotify.Rename) {
				// Not the database: wait again without a read.
				if err := t.waitMatching(ctx, fsEvents, fsErrors, ticker.C, base); err != nil {
					return err
				}
			}
		case <-fsErrors:
		case <-ticker.C:
		}
	}
}

// waitMatching waits for the next relevant wake-up.
func (t *Tailer) waitMatching(ctx context.Context, evs <-chan fsnotify.Event, errs <-chan error, tick <-chan time.Time, base string) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-evs:
			if !ok {
				return nil
			}
			if filepath.Base(ev.Name) == base && ev.Has(fsnotify.Write|fsnotify.Create|fsnotify.Rename) {
				return nil
			}
		case <-errs:
			return nil
		case <-tick:
			return nil
		}
	}
}

// drain reads and sends every event after t.After.
func (t *Tailer) drain(ctx context.Context, out chan<- []engine.Event) error {
	for {
		evs, err := t.Log.Events(ctx, t.After, tailBatch)
		if err != nil || len(evs) == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		}
		t.After = evs[len(evs)-1].Seq
		select {
		case out <- evs:
		case <-ctx.Done():
			return ctx.Err()
		}
		if len(evs) < tailBatch {
			return nil
		}
	}
}
