package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs"
)

// FileName is the name of the store file inside the state directory
// ($STRATUM_HOME, default ~/.stratum: config.Home).
const FileName = "stratum.db"

// DefaultLockTimeout is how long a transaction waits for the file lock
// (held by other processes) before it fails with engine.ErrLocked.
const DefaultLockTimeout = 10 * time.Second

// Options configure a Store. The zero value is usable.
type Options struct {
	// LockTimeout bounds how long one Update or View waits for the file lock
	// while other processes hold it; past it the call fails with an error
	// wrapping engine.ErrLocked. Zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// Now is the clock for FlowState.CreatedAt/UpdatedAt and Event.Time.
	// Nil means time.Now.
	Now func() time.Time
	// FileMode is the permission of a newly created store file; zero means 0600.
	FileMode os.FileMode
	// WatchPoll is how long Watch waits for a file-system event on the
	// store file before it re-reads the log anyway (the fallback); zero
	// means DefaultWatchPoll.
	WatchPoll time.Duration
	// KeepOpen is how long the file stays open (unlocked) after an Update,
	// so the next Update of this process skips opening and mapping it
	// again when no other process wrote meanwhile (see "Sharing the file"
	// in the package doc). Zero means DefaultKeepOpen; negative means the
	// file is closed after every transaction.
	KeepOpen time.Duration
	// WatchGap is the least time between two checks (reads) of one Watch:
	// a burst of commits (an agent reporting steps back to back) costs a
	// check per WatchGap, not one per commit, while a commit after a quiet
	// spell is seen at once. Zero means DefaultWatchGap; negative means no
	// gap.
	WatchGap time.Duration
	// ParseSpec parses a stored spec where the store needs one: the 3→4
	// migration, which gives each flow at a gate its gate's review in its
	// summary. The stratum command sets it (exprlang.ParseSpec, of package
	// specs/exprlang); without it (a Go program, which links no spec
	// parser) those summaries keep no review, and the engine reads the
	// gate's state instead, as for a flow whose spec no longer parses.
	ParseSpec func(file string, src []byte) (*specs.Spec, specs.Diagnostics)
}

// DefaultKeepOpen is how long an Update leaves the file open, unlocked, for
// the next one (Options.KeepOpen).
const DefaultKeepOpen = time.Second

// Store is the bbolt-backed engine.Store. It is safe for concurrent use by
// many goroutines and many processes. It holds the file's lock only inside
// a call: each View opens the file, takes the shared lock, runs one
// transaction and closes the file; each Update takes the exclusive lock,
// runs one transaction and releases the lock, keeping the file open for
// the next Update for Options.KeepOpen (reused only if no other process
// wrote meanwhile). An idle process never blocks the others.
type Store struct {
	path   string
	opts   Options
	schema schema
	// mu serialises this process's own transactions before they compete for
	// the file lock, so goroutines of one process queue instead of polling.
	mu sync.RWMutex
	// faults counts faults/panics caught inside bbolt (see guard).
	faults atomic.Int64
	// ready is set once Open has validated and migrated the file; from then
	// on every transaction re-checks the schema version, so a process left
	// running when a newer stratum migrated the file stops touching it.
	ready atomic.Bool
	// kept is the handle of the last Update, unlocked, kept for the next
	// Update while nobody else writes (keep, acquireKept); nil when none.
	// It and keptTimer are guarded by mu held for writing, like every
	// write transaction.
	kept      *handle
	keptTimer *time.Timer
	// verified is the generation of the file this process last verified
	// or committed (verify.go), guarded like kept.
	verified generation
	// mark is <path>.verified, kept open by the process that writes it
	// (markCommitted), guarded by mu held for writing.
	mark *os.File
	// pageChecks counts the page checks verifyBeforeWrite ran (tests).
	pageChecks atomic.Int64
	// fileStats counts the fstat calls of handle.stat (tests).
	fileStats atomic.Int64
	// logs caches flows' flowlog entries (flowlog.go).
	logs logCache
	// specHashes caches the hashes of spec texts (specs.go).
	specHashes specHashes
	// own is what this process's watchers know of its commits (watch_own.go).
	own ownCommits
}

var _ engine.Store = (*Store)(nil)

// Open opens (creating it and its directory if absent) the store at path,
// validates it and runs pending migrations. A corrupt or foreign file, or one
// written by a newer stratum, yields a *FileError naming the file, and the
// file is left byte-for-byte untouched. An empty (0-byte) file is initialised.
func Open(path string, opts Options) (*Store, error) {
	return openWith(path, opts, currentSchema)
}

func openWith(path string, opts Options, sc schema) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("store: %w: empty path", ErrInvalid)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: resolve %s: %w", path, err)
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FileMode == 0 {
		opts.FileMode = 0o600
	}
	if opts.WatchPoll <= 0 {
		opts.WatchPoll = DefaultWatchPoll
	}
	if opts.KeepOpen == 0 {
		opts.KeepOpen = DefaultKeepOpen
	}
	if opts.WatchGap == 0 {
		opts.WatchGap = DefaultWatchGap
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: create directory for %s: %w", abs, err)
	}
	if err := danglingSymlink(abs); err != nil {
		return nil, err
	}
	s := &Store{path: abs, opts: opts, schema: sc}
	if err := s.prepare(context.Background()); err != nil {
		return nil, err
	}
	s.ready.Store(true)
	return s, nil
}

// Path is the absolute path of the store file.
func (s *Store) Path() string { return s.path }

func (s *Store) now() time.Time { return s.opts.Now().UTC().Round(0) }

// Update runs fn in one write transaction: all its writes commit together
// (durably, fsync'd) when fn returns nil, and none of them when it returns an
// error or panics. The file lock is held only for the duration of the call.
// fn must not call the Store itself (that would wait for its own lock).
func (s *Store) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	var t *tx
	err := s.run(ctx, modeWrite, func(btx *bolt.Tx) error {
		t = &tx{s: s, btx: btx}
		defer func() { t.done = true }()
		if err := fn(t); err != nil {
			return err
		}
		if !t.wrote {
			return errNothingWritten
		}
		s.own.begin(t)
		return nil
	})
	if err == nil && t != nil && t.wrote {
		s.logs.put(t.logs) // committed
	}
	return err
}

// errNothingWritten tells run to roll back an Update that wrote nothing
// (a lost gate race, an unchanged transition): same outcome, no fsync.
var errNothingWritten = errors.New("nothing written")

// View runs fn in one read-only transaction, consistent for its duration.
// Writes inside fn fail with ErrReadOnlyTx. Keep fn short: while it runs,
// writers in other processes wait.
func (s *Store) View(ctx context.Context, fn func(tx engine.Tx) error) error {
	var t *tx
	err := s.run(ctx, modeRead, func(btx *bolt.Tx) error {
		t = &tx{s: s, btx: btx}
		defer func() { t.done = true }()
		return fn(t)
	})
	if err == nil && t != nil {
		s.logs.put(t.logs)
	}
	return err
}

type txMode int

const (
	modeRead   txMode = iota // shared lock, read-only transaction
	modeWrite                // exclusive lock, write transaction; never creates the file
	modeCreate               // like modeWrite, but may create/initialise the file (Open only)
)

// run opens the file, takes the lock, runs fn in one transaction, commits
// (when writable and fn succeeded) and closes the file.
func (s *Store) run(ctx context.Context, mode txMode, fn func(*bolt.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer func() { err = s.diskFull(err) }()
	writable := mode != modeRead
	// A read while a handle is kept (this process wrote within KeepOpen)
	// reuses it under the shared lock, like an Update under the exclusive
	// one: no open, mapping or unmapping. Reads of a process that does not
	// write run concurrently on handles of their own.
	useKept := mode == modeWrite
	if writable {
		s.mu.Lock()
		defer s.mu.Unlock()
	} else if s.mu.RLock(); s.kept == nil {
		defer s.mu.RUnlock()
	} else {
		s.mu.RUnlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		useKept = true
	}
	var h *handle
	if useKept {
		h, useKept, err = s.acquireKept(ctx, mode)
	} else {
		h, err = s.acquire(ctx, func() (*handle, error) { return s.tryOpen(mode) })
	}
	if err != nil {
		return err
	}
	faultsBefore := s.faults.Load()
	var btx *bolt.Tx
	finished := false
	// keepable: the handle may be kept for the next Update (keep) — not
	// after a failed commit or a check that found the file changed.
	keepable := false
	defer func() {
		// Runs on success, error and panic alike: roll back what was not
		// committed, then release the lock. After a fault bbolt's internal
		// locks may be held, so the handle is abandoned, not closed.
		if s.faults.Load() != faultsBefore {
			h.abandon()
			return
		}
		if btx != nil && !finished {
			if !safe(func() { _ = btx.Rollback() }) {
				h.abandon()
				return
			}
		}
		if useKept && (err == nil || keepable) && s.keep(h) {
			return
		}
		if cerr := h.close(); cerr != nil && err == nil {
			err = fmt.Errorf("store %s: close: %w", s.path, cerr)
		}
	}()
	if btx, err = s.begin(h, writable); err != nil {
		return err // a transaction begun is rolled back by the deferred func
	}
	keepable = true
	if err := fn(btx); err != nil {
		if errors.Is(err, errNothingWritten) {
			return nil // the deferred rollback ends the transaction
		}
		return err
	}
	if !writable {
		return nil
	}
	finished = true
	keepable = false
	txid := uint64(btx.ID())
	if err := s.guard(btx.Commit); err != nil {
		// bbolt rolls back on a failed commit.
		s.verified = generation{}
		s.own.end(generation{}, nil)
		return s.mapErr("commit", err)
	}
	s.markCommitted(h, txid)
	return nil
}

// begin begins a transaction on h and checks the file before fn runs:
// its size, before a write that it is the file this process verified, and
// once the store is ready its schema version. A transaction that began is
// returned with a failed check's error (the caller rolls it back); nil
// when it did not begin.
func (s *Store) begin(h *handle, writable bool) (*bolt.Tx, error) {
	var btx *bolt.Tx
	if err := s.guard(func() error {
		var berr error
		btx, berr = h.db.Begin(writable)
		return berr
	}); err != nil {
		return nil, s.mapErr("begin transaction", err)
	}
	if err := s.checkSize(h, btx); err != nil {
		return btx, err
	}
	if writable {
		if err := s.verifyBeforeWrite(h, btx); err != nil {
			return btx, err
		}
	}
	if s.ready.Load() {
		if err := s.checkVersion(btx); err != nil {
			return btx, err
		}
	}
	return btx, nil
}

// mapErr turns bbolt and OS errors into the store's own.
func (s *Store) mapErr(op string, err error) error {
	var fe *FileError
	switch {
	case errors.As(err, &fe):
		return err
	case errors.Is(err, fs.ErrNotExist):
		if derr := danglingSymlink(s.path); derr != nil {
			return derr
		}
		return &FileError{Path: s.path, Kind: ErrMissing, Detail: op,
			Hint: "it was deleted or moved while stratum was using it; restart to create a new store", Cause: err}
	case errors.Is(err, berrors.ErrInvalid):
		return corruptError(s.path, "not a bbolt database: both meta pages are invalid", err)
	case errors.Is(err, berrors.ErrChecksum):
		return corruptError(s.path, "meta page checksum mismatch", err)
	case errors.Is(err, berrors.ErrVersionMismatch):
		return corruptError(s.path, "unsupported bbolt file format version", err)
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("store %s: %w", s.path, engine.ErrLocked)
	case strings.Contains(err.Error(), "file size too small"):
		// bbolt's (unexported) error for a file shorter than its two meta
		// pages: a truncated store, corrupt like any other.
		detail := "truncated: the file is too small to hold a bbolt database"
		if fi, serr := os.Stat(s.path); serr == nil {
			detail = fmt.Sprintf("truncated: the file is %d bytes, too small to hold a bbolt database", fi.Size())
		}
		return corruptError(s.path, detail, err)
	}
	return fmt.Errorf("store %s: %s: %w", s.path, op, err)
}

// faultError is what guard returns when bbolt panicked or faulted.
type faultError struct{ v any }

func (e faultError) Error() string { return fmt.Sprintf("bbolt fault: %v", e.v) }

// guard runs op, which touches the memory-mapped file, turning memory faults
// (a truncated file mapped past its end) and bbolt's internal panics (damaged
// pages) into ErrCorrupt instead of crashing the process.
func (s *Store) guard(op func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			s.faults.Add(1)
			err = corruptError(s.path, fmt.Sprintf("reading the file failed: %v", v), faultError{v})
		}
	}()
	return op()
}

// safe runs f, reporting false if it panicked or faulted.
func safe(f func()) (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	f()
	return true
}

// checkSize rejects a file shorter than the pages its meta page claims (a
// truncated copy), before anything reads past the end of the mapping.
func (s *Store) checkSize(h *handle, btx *bolt.Tx) error {
	if h.file == nil {
		return nil
	}
	fi, err := h.stat()
	if err != nil {
		return fmt.Errorf("store %s: stat: %w", s.path, err)
	}
	if need := btx.Size(); need > fi.Size() {
		return corruptError(s.path, fmt.Sprintf("truncated: the file is %d bytes but its pages need %d",
			fi.Size(), need), nil)
	}
	return nil
}

// checkVersion refuses a file whose schema version changed since Open (a
// newer stratum migrated it, or it was replaced).
func (s *Store) checkVersion(btx *bolt.Tx) error {
	return s.guard(func() error {
		meta := btx.Bucket(bucketMeta)
		if meta == nil {
			return corruptError(s.path, "bucket \"meta\" is missing", nil)
		}
		raw := meta.Get(keySchemaVersion)
		if string(raw) == strconv.Itoa(s.schema.version) {
			return nil
		}
		v, err := strconv.Atoi(string(raw))
		if err != nil {
			return corruptError(s.path, fmt.Sprintf("meta/schema_version is %q", raw), err)
		}
		if v > s.schema.version {
			return &FileError{Path: s.path, Kind: ErrNewerSchema,
				Detail: fmt.Sprintf("a newer stratum migrated it to schema version %d while this one (version %d) was running", v, s.schema.version),
				Hint:   "restart with the newer stratum; this process will not touch the file"}
		}
		return corruptError(s.path, fmt.Sprintf("schema version went back to %d", v), nil)
	})
}
