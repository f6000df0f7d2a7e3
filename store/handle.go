package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/stratum-go/stratum/engine"
)

// A transaction opens the database file (tryOpen, acquire: the lock with
// its timeout and backoff), runs, and closes it — or, after an Update,
// keeps it open (unlocked) for Options.KeepOpen, so this process's next
// Update skips opening and mapping it again (keep, acquireKept) when no
// other process wrote meanwhile (unchanged).

// handle is one open of the database file for one transaction.
type handle struct {
	db   *bolt.DB
	file *os.File // the descriptor bbolt opened, kept to release the lock if bbolt faults
	// txid and size are the file's last committed transaction and its
	// size when the handle was unlocked and kept (keep): a kept handle is
	// reused only if both are unchanged, i.e. no other process wrote.
	txid uint64
	size int64
	// locked is the file's status read once under the lock (stat): the
	// file does not change while the lock is held until this process
	// commits, so the checks of one transaction share one fstat. Cleared
	// by a commit and when the lock is released.
	locked os.FileInfo
	stats  *atomic.Int64 // Store.fileStats
}

// stat is the status of h's file under the lock held now (locked), read
// at most once per lock and commit.
func (h *handle) stat() (os.FileInfo, error) {
	if h.locked != nil {
		return h.locked, nil
	}
	h.stats.Add(1)
	fi, err := h.file.Stat()
	if err == nil {
		h.locked = fi
	}
	return fi, err
}

// committedTxid is the id of the file's last committed transaction as the
// handle sees it (bbolt's meta page).
func (s *Store) committedTxid(h *handle) (uint64, error) {
	var id uint64
	err := s.guard(func() error {
		rtx, err := h.db.Begin(false)
		if err != nil {
			return err
		}
		id = uint64(rtx.ID())
		return rtx.Rollback()
	})
	return id, err
}

// keep unlocks h and keeps it open for the next Update, reporting whether
// it did (else the caller closes h). Called with mu held for writing, after
// the transaction ended.
func (s *Store) keep(h *handle) bool {
	if !canKeepOpen || s.opts.KeepOpen < 0 || h.file == nil || !s.ready.Load() {
		return false
	}
	id, err := s.committedTxid(h)
	if err != nil {
		return false
	}
	fi, err := h.stat()
	if err != nil {
		return false
	}
	h.txid, h.size = id, fi.Size()
	h.locked = nil
	unlockFile(h.file)
	s.kept = h
	if s.keptTimer == nil {
		s.keptTimer = time.AfterFunc(s.opts.KeepOpen, s.closeKept)
	} else {
		s.keptTimer.Reset(s.opts.KeepOpen)
	}
	return true
}

// closeKept closes the kept handle once the process stopped writing.
func (s *Store) closeKept() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kept != nil {
		_ = s.kept.close()
		s.kept = nil
	}
}

// acquireKept locks the handle kept by the last Update — exclusively for
// a write, shared for a read — and returns it if nobody else wrote the file
// since (same file, same last transaction, same size). Otherwise it opens
// the file as acquire does, and reports whether that handle may be kept
// afterwards (a write's; a read opens the file read-only and closes it).
// Called with mu held for writing.
func (s *Store) acquireKept(ctx context.Context, mode txMode) (*handle, bool, error) {
	h := s.kept
	s.kept = nil
	if h != nil {
		locked, err := s.acquire(ctx, func() (*handle, error) {
			if lockFile(h.file, mode != modeRead) {
				return h, nil
			}
			return nil, berrors.ErrTimeout
		})
		if err != nil {
			_ = h.close()
			return nil, false, err
		}
		if s.unchanged(locked) {
			return locked, true, nil
		}
		_ = h.close()
	}
	open, err := s.acquire(ctx, func() (*handle, error) { return s.tryOpen(mode) })
	return open, mode == modeWrite, err
}

// unchanged reports whether the locked handle h still sees the file as it
// left it: the path names the same file, of the same size, whose last
// committed transaction is the one h committed or saw last. Then no other
// process committed (every commit bumps the transaction id), and bbolt's
// in-memory state of h (free-page list, mapping) is exact. The size is
// checked first, so a file truncated meanwhile is never read through the
// old mapping.
func (s *Store) unchanged(h *handle) bool {
	h.locked = nil
	fi, err := h.stat()
	if err != nil || fi.Size() != h.size {
		return false
	}
	pi, err := os.Stat(s.path)
	if err != nil || !os.SameFile(fi, pi) {
		return false
	}
	id, err := s.committedTxid(h)
	return err == nil && id == h.txid
}

func (h *handle) close() error {
	var err error
	if !safe(func() { err = h.db.Close() }) {
		h.abandon()
		return nil
	}
	return err
}

// abandon releases the lock and the descriptor when bbolt itself faulted
// and its handle can no longer be closed normally (its mapping is leaked).
func (h *handle) abandon() {
	if h.file != nil {
		unlockFile(h.file)
		_ = h.file.Close()
	}
}

// acquire calls try (one attempt to open or lock the file, failing with
// bbolt's ErrTimeout while other processes hold the lock), retrying with
// jittered exponential backoff up to Options.LockTimeout.
func (s *Store) acquire(ctx context.Context, try func() (*handle, error)) (*handle, error) {
	deadline := time.Now().Add(s.opts.LockTimeout)
	wait := 100 * time.Microsecond
	const maxWait = 4 * time.Millisecond
	for {
		h, err := try()
		if err == nil {
			return h, nil
		}
		if !errors.Is(err, berrors.ErrTimeout) {
			return nil, err
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return nil, fmt.Errorf("store %s: %w (waited %v; another stratum process is holding it)",
				s.path, engine.ErrLocked, s.opts.LockTimeout)
		}
		// Full jitter in [wait/2, wait*3/2).
		d := wait/2 + time.Duration(rand.Int64N(int64(wait)))
		if d > remaining {
			d = remaining
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		if wait < maxWait {
			wait *= 2
		}
	}
}

// tryOpen makes one attempt to open and lock the file.
func (s *Store) tryOpen(mode txMode) (*handle, error) {
	h := &handle{stats: &s.fileStats}
	opts := &bolt.Options{
		// bbolt polls the lock every 50 ms until Timeout; a timeout below
		// that means exactly one non-blocking try. acquire does the waiting.
		Timeout:      time.Nanosecond,
		ReadOnly:     mode == modeRead,
		NoStatistics: true,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			if name == s.path && mode != modeCreate {
				flag &^= os.O_CREATE // a vanished store is an error, not a new empty one
			}
			f, err := os.OpenFile(name, flag, perm)
			if name == s.path && err == nil {
				h.file = f
			}
			return f, err
		},
	}
	err := s.guard(func() error {
		var oerr error
		h.db, oerr = bolt.Open(s.path, s.opts.FileMode, opts)
		return oerr
	})
	if err != nil {
		if h.db == nil && h.file != nil && errors.Is(err, ErrCorrupt) {
			h.abandon() // bbolt faulted half-way through Open
		}
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, err
		}
		return nil, s.mapErr("open", err)
	}
	return h, nil
}
