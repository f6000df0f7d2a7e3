package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/stratum-go/stratum/engine"
)

// Errors of the store, beside the engine's own (engine.ErrNotFound,
// engine.ErrLocked, engine.ErrConflict), which the store reports where the
// engine's port defines them. Test them with errors.Is.
var (
	// ErrCorrupt: the file is not a readable bbolt database (random bytes, a
	// truncated file, a damaged page), or its stratum records cannot be
	// decoded. The file is never modified once this is detected. One flow's
	// undecodable state or summary is also an *engine.DamagedError
	// (engine.ErrDamaged) naming the flow: the rest of the file is used.
	ErrCorrupt = errors.New("store file is corrupt")

	// ErrForeign: the file is a valid bbolt database that belongs to some
	// other program (it has buckets but no stratum meta). It is left alone.
	ErrForeign = errors.New("file is not a stratum store")

	// ErrNewerSchema: the file was written by a newer stratum whose schema
	// version this binary does not know. It is left alone. It is the
	// engine's port error engine.ErrNewerStore (the same value), so front
	// ends that never import store can tell it apart.
	ErrNewerSchema = engine.ErrNewerStore

	// ErrMissing: the store file disappeared after Open (deleted or moved by
	// someone else). Transactions never recreate it silently.
	ErrMissing = errors.New("store file is missing")

	// ErrReadOnlyTx: a write (Put, Delete, Append, CachePut) inside View.
	ErrReadOnlyTx = errors.New("write in a read-only transaction")

	// ErrTxDone: a Tx was used after its Update or View returned.
	ErrTxDone = errors.New("transaction has already finished")

	// ErrInvalid: a caller passed something the store cannot hold (a nil
	// state, an empty or oversized flow id, an empty cache key).
	ErrInvalid = errors.New("invalid argument")

	// ErrDiskFull: the file system of the store (or of the page check's
	// copy) has no space left. The transaction wrote nothing; free space
	// and retry.
	ErrDiskFull = errors.New("the disk is full")
)

// diskFull turns an error caused by a full file system (ENOSPC, wherever
// it arose: a commit, the page check's copy, the verified-generation
// record) into a *FileError of kind ErrDiskFull naming the store: a writer
// reported only "meta 0 copy: write …/.stratum-check-NNN.db: no space left
// on device".
func (s *Store) diskFull(err error) error {
	if err == nil || !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrDiskFull) {
		return err
	}
	return &FileError{Path: s.path, Kind: ErrDiskFull, Detail: "no space left on device",
		Hint: "nothing was written; free space on its file system (df " + filepath.Dir(s.path) + ") and retry", Cause: err}
}

// FileError is returned when the store file itself is unusable: corrupt,
// foreign, from a newer schema, missing, or on a full disk. It names the
// file and says what the user can do about it. errors.Is(err, ErrCorrupt)
// (or ErrForeign, ErrNewerSchema, ErrMissing, ErrDiskFull) tells the kinds
// apart; Cause, when set, is the
// underlying error (from bbolt or the OS), kept for diagnostics.
type FileError struct {
	Path   string // the store file
	Kind   error  // ErrCorrupt, ErrForeign, ErrNewerSchema, ErrMissing or ErrDiskFull
	Detail string // what exactly is wrong
	Hint   string // what to do about it
	Cause  error  // underlying error, may be nil
}

func (e *FileError) Error() string {
	msg := fmt.Sprintf("store %s: %v", e.Path, e.Kind)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Unwrap exposes both the kind and the cause to errors.Is / errors.As.
func (e *FileError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

// corruptError returns a *FileError of kind ErrCorrupt.
func corruptError(path, detail string, cause error) error {
	return &FileError{
		Path:   path,
		Kind:   ErrCorrupt,
		Detail: detail,
		Hint: "the file was left untouched; move it aside (or restore a backup, " +
			path + ".bak-v<N>, if there is one) and stratum will create a new store, " +
			"or point STRATUM_HOME elsewhere",
		Cause: cause,
	}
}

// damagedRecord is the error for one flow record (what: "state" or
// "summary") that cannot be decoded: an *engine.DamagedError (the rest of
// the store is usable) wrapping a *FileError of kind ErrCorrupt.
func damagedRecord(path, flowID, what string, cause error) error {
	return &engine.DamagedError{FlowID: flowID, Err: &FileError{
		Path:   path,
		Kind:   ErrCorrupt,
		Detail: "cannot decode its " + what,
		Hint:   "every other flow is usable; `stratum gc --damaged` moves the record to the quarantine bucket",
		Cause:  cause,
	}}
}

// danglingSymlink returns a *FileError of kind ErrMissing when path is a
// symbolic link whose target does not exist (nil otherwise). Opening through
// it would create a store wherever the link points, or fail with a
// misleading "deleted or moved" error, so it is refused with the target named.
func danglingSymlink(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	target, err := os.Readlink(path)
	if err != nil {
		return nil
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(path), target)
	}
	return &FileError{
		Path:   path,
		Kind:   ErrMissing,
		Detail: fmt.Sprintf("the store path is a symlink to %s, which does not exist", target),
		Hint: "restore the file it points to, or remove the symlink and stratum will create a new store, " +
			"or point STRATUM_HOME elsewhere",
		Cause: fs.ErrNotExist,
	}
}
