package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/stratum-go/stratum/specs"
)

// DefaultDebounce is the debounce used when Options.Debounce is zero.
const DefaultDebounce = 100 * time.Millisecond

// updatesBuffer is the capacity of the Updates channel. Anything beyond it
// waits in the per-path coalescing outbox.
const updatesBuffer = 16

// ErrNotDir is returned (wrapped) by New when a path to watch is not a directory.
var ErrNotDir = errors.New("not a directory")

// ErrNoDirs is returned by New when it is given no directory to watch.
var ErrNoDirs = errors.New("watch: no directories to watch")

// ParseFunc parses and validates the spec at path. It must report problems
// as diagnostics rather than panic; a nil Spec or error-severity diagnostics
// mean the spec is invalid.
type ParseFunc func(path string) (*specs.Spec, specs.Diagnostics)

// Options configure a Watcher. The zero value is usable: 100 ms debounce, the
// default parser, and only the given directories themselves (not their
// subdirectories) watched. DefaultOptions returns the recommended settings.
type Options struct {
	// Debounce is how long a path must be quiet after its last event before
	// it is re-validated; zero or negative means DefaultDebounce (100 ms).
	// A path that keeps changing is re-validated at least every 10×Debounce.
	Debounce time.Duration
	// Parse parses and validates one spec file; nil means the default parser
	// (specs.ParseFile with exprlang.Compile).
	Parse ParseFunc
	// Recursive also watches subdirectories, skipping ".git", "node_modules"
	// and hidden directories; directories created later are watched as they
	// appear. DefaultOptions sets it; the zero Options does not.
	Recursive bool
}

// DefaultOptions returns the recommended options: 100 ms debounce, the
// default parser, recursive.
func DefaultOptions() Options {
	return Options{Debounce: DefaultDebounce, Recursive: true}
}

// Update is the state of one spec file after a change (or at the initial
// scan).
type Update struct {
	// Path is the absolute, cleaned path of a *.stratum.yaml file.
	Path string
	// Gen is strictly increasing across all updates of one Watcher, in
	// delivery order: a consumer can drop any result older than one it has.
	Gen uint64
	// Spec is the parsed spec; nil when the file is invalid (Diags has an
	// error) or was removed.
	Spec *specs.Spec
	// Diags are the parser's diagnostics (warnings may accompany a valid Spec).
	Diags specs.Diagnostics
	// Removed reports that the file is gone (deleted, or renamed away and not
	// back within the debounce window).
	Removed bool
}

// source is where the loop gets its events and how it adds watches; New
// wires it to fsnotify, tests to fakes.
type source struct {
	events <-chan fsnotify.Event
	errors <-chan error
	add    func(dir string) error
	close  func() error
}

// Watcher watches directories of specs and reports every change on Updates.
// Create one with New and stop it with Close.
type Watcher struct {
	opts  Options
	roots []string
	src   source
	out   chan Update

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	// Owned by the run goroutine (and by New before it starts).
	deb *debouncer
	box *outbox
	gen uint64

	// mu guards state, which only the run goroutine (or New) writes; the
	// writer may read it without the lock.
	mu    sync.Mutex
	state map[string]Update
}

// New starts watching dirs. It returns an error when a directory does not
// exist, is not a directory or cannot be watched. Before it returns, every
// existing spec file has been parsed: Files reports them, and Updates delivers
// one Update per file (sorted by path) before any change.
func New(dirs []string, opts Options) (*Watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	w, err := newWatcher(dirs, opts, source{
		events: fsw.Events,
		errors: fsw.Errors,
		add:    fsw.Add,
		close:  fsw.Close,
	})
	if err != nil {
		_ = fsw.Close()
		return nil, err
	}
	return w, nil
}

func newWatcher(dirs []string, opts Options, src source) (*Watcher, error) {
	if len(dirs) == 0 {
		return nil, ErrNoDirs
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Parse == nil {
		opts.Parse = defaultParse
	}
	w := &Watcher{
		opts:  opts,
		src:   src,
		out:   make(chan Update, updatesBuffer),
		deb:   newDebouncer(opts.Debounce),
		box:   newOutbox(),
		state: make(map[string]Update),
	}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("watch: %s: %w", d, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("watch: %s: %w", d, ErrNotDir)
		}
		if err := src.add(abs); err != nil {
			return nil, fmt.Errorf("watch: %s: %w", d, err)
		}
		if !slices.Contains(w.roots, abs) {
			w.roots = append(w.roots, abs)
		}
	}
	found := make(map[string]bool)
	for _, r := range w.roots {
		for _, p := range w.walk(r) {
			found[p] = true
		}
	}
	for _, p := range slices.Sorted(maps.Keys(found)) {
		w.refresh(p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer close(w.out)
		w.run(ctx)
	}()
	return w, nil
}

// Updates delivers the initial scan (one Update per existing file) and then
// every change. It is closed after Close.
func (w *Watcher) Updates() <-chan Update { return w.out }

// Files returns the latest state of every known spec file, sorted by path
// (removed files are not listed). It may be ahead of what Updates has
// delivered so far; compare Gen.
func (w *Watcher) Files() []Update {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Update, 0, len(w.state))
	for _, u := range w.state {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Update) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Close stops the watcher: it cancels the loop, closes the fsnotify watcher
// and waits for the loop to return; pending changes are dropped and Updates is
// closed. Close is idempotent and returns the same result every time.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		w.cancel()
		w.closeErr = w.src.close()
		w.wg.Wait()
	})
	return w.closeErr
}

// run is the single goroutine that owns the debouncer, the timer and the
// outbox. It returns when ctx is done or the event source is closed.
func (w *Watcher) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var (
		timerC <-chan time.Time
		armed  time.Time
	)
	for {
		var (
			sendC chan<- Update
			head  Update
		)
		if u, ok := w.box.head(); ok {
			sendC, head = w.out, u
		}
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.src.events:
			if !ok {
				return
			}
			w.handle(ev, time.Now())
		case _, ok := <-w.src.errors:
			if !ok {
				return
			}
			// Events may have been lost (e.g. a queue overflow): rescan.
			w.rescan(time.Now())
		case <-timerC:
			timerC = nil
			for _, p := range w.deb.due(time.Now()) {
				w.refresh(p)
			}
		case sendC <- head:
			w.box.pop()
		}
		// Re-arm the timer for the earliest pending deadline.
		next, ok := w.deb.next()
		switch {
		case !ok:
			if timerC != nil {
				timer.Stop()
				timerC = nil
			}
		case timerC == nil || !next.Equal(armed):
			timer.Reset(time.Until(next))
			timerC, armed = timer.C, next
		}
	}
}

// handle records one fsnotify event.
func (w *Watcher) handle(ev fsnotify.Event, now time.Time) {
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Write) &&
		!ev.Has(fsnotify.Rename) && !ev.Has(fsnotify.Remove) {
		return // Chmod only
	}
	name := filepath.Clean(ev.Name)
	if ev.Has(fsnotify.Create) && w.opts.Recursive {
		if fi, err := os.Lstat(name); err == nil && fi.IsDir() {
			if !specs.IsSkippedDir(filepath.Base(name)) {
				// Watch the new directory now and pick up whatever was
				// created in it before the watch was in place.
				for _, p := range w.walk(name) {
					w.deb.add(p, now)
				}
			}
			return
		}
	}
	if isSpecName(name) {
		w.deb.add(name, now)
	}
	if ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove) {
		// A directory went away: every known file under it may be gone.
		prefix := name + string(filepath.Separator)
		for p := range w.state {
			if strings.HasPrefix(p, prefix) {
				w.deb.add(p, now)
			}
		}
	}
}

// rescan re-adds every watch and marks every spec file, found or known, as
// pending.
func (w *Watcher) rescan(now time.Time) {
	for _, r := range w.roots {
		for _, p := range w.walk(r) {
			w.deb.add(p, now)
		}
	}
	for p := range w.state {
		w.deb.add(p, now)
	}
}

// walk adds a watch on dir (and, when recursive, on its subdirectories) and
// returns the spec files it finds. Errors on individual entries are skipped:
// a directory that vanished or cannot be read has nothing to report.
func (w *Watcher) walk(dir string) []string {
	var files []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && path != dir {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if path != dir && (!w.opts.Recursive || specs.IsSkippedDir(d.Name())) {
				return fs.SkipDir
			}
			// Best effort: a directory that cannot be watched (e.g. the
			// inotify limit) is still scanned. Adding a watch twice is a
			// no-op.
			_ = w.src.add(path)
			return nil
		}
		if isSpecName(path) {
			files = append(files, path)
		}
		return nil
	})
	return files
}

// refresh stats path and emits its new state: parsed when it exists, removed
// when it is known and gone, nothing when it never was known and is gone.
func (w *Watcher) refresh(path string) {
	fi, err := os.Stat(path)
	_, known := w.state[path]
	switch {
	case err == nil && fi.IsDir(), err != nil && isGone(err):
		if known {
			w.emit(Update{Path: path, Removed: true})
		}
		return
	case err == nil && !fi.Mode().IsRegular():
		// A FIFO or device would block or never end: never open it.
		w.emit(Update{Path: path, Diags: specs.Diagnostics{watchDiag(path, CodeNotRegularFile,
			fmt.Sprintf("not a regular file (%s)", fi.Mode().Type()))}})
		return
	}
	// Existing file, or a stat error the parser will report (e.g. permission).
	spec, diags := w.parse(path)
	if diags.HasErrors() {
		spec = nil
	}
	w.emit(Update{Path: path, Spec: spec, Diags: diags})
}

// parse calls the parser, turning a panic into a diagnostic.
func (w *Watcher) parse(path string) (spec *specs.Spec, diags specs.Diagnostics) {
	defer func() {
		if r := recover(); r != nil {
			spec = nil
			diags = specs.Diagnostics{watchDiag(path, CodeInternalError,
				fmt.Sprintf("internal error while parsing: %v", r))}
		}
	}()
	return w.opts.Parse(path)
}

// emit stamps u with the next generation, records it for Files and queues it.
func (w *Watcher) emit(u Update) {
	w.gen++
	u.Gen = w.gen
	w.mu.Lock()
	if u.Removed {
		delete(w.state, u.Path)
	} else {
		w.state[u.Path] = u
	}
	w.mu.Unlock()
	w.box.put(u)
}

// Diagnostic codes the watcher itself reports (the parser's codes are in
// package specs). Both have error severity and the ir_parse_error type.
const (
	// CodeNotRegularFile: the spec name is a FIFO, device or socket; it is
	// not opened.
	CodeNotRegularFile = "not-regular-file"
	// CodeInternalError: the parser panicked; the message has the panic value.
	CodeInternalError = "internal-error"
)

func watchDiag(path, code, msg string) specs.Diagnostic {
	return specs.Diagnostic{
		File: path, Severity: specs.SeverityError, Code: code,
		ErrorType: specs.ParseError, Path: "root", Message: msg,
	}
}

// isSpecName reports whether path names a spec file the watcher reports: a
// spec name (specs.IsSpecName) that is not hidden. Hidden names are left out
// because editors use them for lock and backup files next to the spec (Emacs
// writes ".#flow.stratum.yaml").
func isSpecName(path string) bool {
	base := filepath.Base(path)
	return specs.IsSpecName(base) && !strings.HasPrefix(base, ".")
}

// isGone reports whether a stat error means the file is not there.
func isGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
