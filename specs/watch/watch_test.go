package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/specs"
)

// These tests run against the real file system and fsnotify. Waits for an
// update are generous (CI may be two busy cores); waits for the absence of an
// update are a few debounce periods.

const (
	fsDebounce  = 50 * time.Millisecond
	waitTimeout = 10 * time.Second
)

// recv reads a watcher's updates and checks that generations strictly increase.
type recv struct {
	t    *testing.T
	w    *Watcher
	last uint64
}

func startWatcher(t *testing.T, dirs []string, opts Options) *recv {
	t.Helper()
	if opts.Parse == nil {
		opts.Parse = testParse
	}
	if opts.Debounce == 0 {
		opts.Debounce = fsDebounce
	}
	w, err := New(dirs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &recv{t: t, w: w}
}

func (r *recv) take(u Update) Update {
	r.t.Helper()
	if u.Gen <= r.last {
		r.t.Fatalf("gen %d of %s is not after %d", u.Gen, u.Path, r.last)
	}
	r.last = u.Gen
	return u
}

// next returns the next update, failing the test after waitTimeout.
func (r *recv) next() Update {
	r.t.Helper()
	select {
	case u, ok := <-r.w.Updates():
		if !ok {
			r.t.Fatal("Updates closed")
		}
		return r.take(u)
	case <-time.After(waitTimeout):
		r.t.Fatal("timed out waiting for an update")
	}
	panic("unreachable")
}

// until returns the first update of path that satisfies ok. Earlier updates
// of the same path are skipped: on a loaded machine a write can be split
// across two debounce windows (e.g. create, then content), and reporting the
// intermediate state is correct. An update for another path fails the test.
func (r *recv) until(path string, ok func(Update) bool) Update {
	r.t.Helper()
	for {
		u := r.next()
		if u.Path != path {
			r.t.Fatalf("unexpected update for %s (waiting for %s): %+v", u.Path, path, u)
		}
		if ok(u) {
			return u
		}
		r.t.Logf("intermediate update: %+v", u)
	}
}

func hasContent(s string) func(Update) bool {
	return func(u Update) bool { return !u.Removed && content(u) == s }
}

func isRemoved(u Update) bool { return u.Removed && u.Spec == nil }

// quiet fails if an update arrives within d.
func (r *recv) quiet(d time.Duration) {
	r.t.Helper()
	select {
	case u, ok := <-r.w.Updates():
		if ok {
			r.t.Fatalf("unexpected update: %+v", u)
		}
	case <-time.After(d):
	}
}

func (r *recv) initial(n int) []Update {
	r.t.Helper()
	var us []Update
	for range n {
		us = append(us, r.next())
	}
	return us
}

func TestWatchInitialScan(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.stratum.yaml"), "b0")
	writeFile(t, filepath.Join(dir, "sub", "a.stratum.yaml"), "a0")
	writeFile(t, filepath.Join(dir, "bad.stratum.yaml"), "invalid")
	writeFile(t, filepath.Join(dir, "other.yaml"), "x")
	writeFile(t, filepath.Join(dir, ".git", "c.stratum.yaml"), "c0")
	r := startWatcher(t, []string{dir, dir}, Options{Recursive: true}) // duplicate dir is harmless

	want := []string{
		filepath.Join(dir, "b.stratum.yaml"),
		filepath.Join(dir, "bad.stratum.yaml"),
		filepath.Join(dir, "sub", "a.stratum.yaml"),
	}
	files := r.w.Files()
	if len(files) != len(want) {
		t.Fatalf("Files() = %+v, want %v", files, want)
	}
	for i, u := range r.initial(len(want)) {
		if u.Path != want[i] || files[i].Path != want[i] || files[i].Gen != u.Gen {
			t.Errorf("update %d = %s gen %d, Files()[%d] = %s gen %d; want %s", i, u.Path, u.Gen, i, files[i].Path, files[i].Gen, want[i])
		}
	}
	if bad := files[1]; bad.Spec != nil || !bad.Diags.HasErrors() {
		t.Errorf("invalid spec: %+v", bad)
	}
	r.quiet(4 * fsDebounce)
}

func TestWatchCreateWriteDelete(t *testing.T) {
	dir := t.TempDir()
	r := startWatcher(t, []string{dir}, Options{})
	a := filepath.Join(dir, "a.stratum.yaml")

	writeFile(t, a, "v1") // create
	r.until(a, hasContent("v1"))
	writeFile(t, a, "v2") // write
	r.until(a, hasContent("v2"))
	writeFile(t, a, "invalid now")
	r.until(a, func(u Update) bool { return u.Spec == nil && u.Diags.HasErrors() && !u.Removed })
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if u := r.next(); u.Path != a || !isRemoved(u) {
		t.Fatalf("delete: %+v", u)
	}
	if files := r.w.Files(); len(files) != 0 {
		t.Errorf("Files() after delete = %+v", files)
	}
	r.quiet(4 * fsDebounce)
}

func TestWatchRenameOver(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.stratum.yaml")
	writeFile(t, a, "v1")
	r := startWatcher(t, []string{dir}, Options{})
	r.initial(1)

	// An editor's atomic save, twice: the second save proves the watch survived
	// the first.
	for _, v := range []string{"v2", "v3"} {
		tmp := filepath.Join(dir, "a.stratum.yaml.tmp123")
		writeFile(t, tmp, v)
		if err := os.Rename(tmp, a); err != nil {
			t.Fatal(err)
		}
		if u := r.next(); u.Path != a || u.Removed || content(u) != v {
			t.Fatalf("rename-over with %s: %+v", v, u)
		}
	}
	// Renamed away: removed; the new name is not a spec.
	if err := os.Rename(a, filepath.Join(dir, "a.yaml.bak")); err != nil {
		t.Fatal(err)
	}
	if u := r.next(); u.Path != a || !u.Removed {
		t.Fatalf("rename away: %+v", u)
	}
	// Renamed to another spec name: the new one appears.
	writeFile(t, a, "v4")
	r.until(a, hasContent("v4"))
	b := filepath.Join(dir, "b.stratum.yaml")
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	got := map[string]Update{}
	for range 2 {
		u := r.next()
		got[u.Path] = u
	}
	if u := got[a]; !u.Removed {
		t.Errorf("old name after rename: %+v", u)
	}
	if u := got[b]; u.Removed || content(u) != "v4" {
		t.Errorf("new name after rename: %+v", u)
	}
	r.quiet(4 * fsDebounce)
}

func TestWatchIgnoresNonMatchingFiles(t *testing.T) {
	dir := t.TempDir()
	r := startWatcher(t, []string{dir}, Options{Recursive: true})
	for _, name := range []string{
		"notes.txt", "flow.yaml", "x.stratum.yml", "x.stratum.yaml.swp", ".x.stratum.yaml",
		".git/y.stratum.yaml", "node_modules/z.stratum.yaml", ".cache/w.stratum.yaml",
	} {
		writeFile(t, filepath.Join(dir, name), "ignored")
	}
	sentinel := filepath.Join(dir, "zz.stratum.yaml")
	writeFile(t, sentinel, "s")
	r.until(sentinel, hasContent("s")) // fails on an update for any other path
	r.quiet(4 * fsDebounce)
	if files := r.w.Files(); len(files) != 1 {
		t.Errorf("Files() = %+v", files)
	}
}

func TestWatchNewSubdirectory(t *testing.T) {
	dir := t.TempDir()
	r := startWatcher(t, []string{dir}, Options{Recursive: true})
	// Created together with its parent directories, before any watch on them.
	c := filepath.Join(dir, "sub", "deeper", "c.stratum.yaml")
	writeFile(t, c, "c1")
	r.until(c, hasContent("c1"))
	// The new directory is watched now.
	writeFile(t, c, "c2")
	r.until(c, hasContent("c2"))
	// Removing the directory removes its files.
	if err := os.RemoveAll(filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	if u := r.next(); u.Path != c || !u.Removed {
		t.Fatalf("removed subdirectory: %+v", u)
	}
	r.quiet(4 * fsDebounce)
}

func TestWatchBurstCoalesced(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.stratum.yaml")
	writeFile(t, a, "v0")
	const debounce = 300 * time.Millisecond
	r := startWatcher(t, []string{dir}, Options{Debounce: debounce})
	r.initial(1)
	const writes = 40
	for i := 1; i <= writes; i++ {
		writeFile(t, a, fmt.Sprint("v", i))
	}
	// Normally exactly one update. A starved test process (the write loop
	// descheduled for longer than the debounce) may split the burst once or
	// twice; without debouncing there would be about one update per write.
	// The exact count is asserted deterministically in
	// TestLoopDebouncesBurstIntoOneUpdate.
	n := 0
	r.until(a, func(u Update) bool { n++; return content(u) == fmt.Sprint("v", writes) })
	if n > 3 {
		t.Errorf("a burst of %d writes gave %d updates, want 1", writes, n)
	} else if n > 1 {
		t.Logf("burst split into %d updates (loaded machine?)", n)
	}
	r.quiet(3 * debounce)
}

func TestWatchGenStrictlyIncreasing(t *testing.T) {
	dir := t.TempDir()
	r := startWatcher(t, []string{dir}, Options{})
	// Many paths and repeated identical saves: every update gets a new gen
	// (recv.take checks the order).
	for round := range 3 {
		for i := range 5 {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("f%d.stratum.yaml", i)), "same")
		}
		seen := map[string]bool{}
		for len(seen) < 5 {
			u := r.next()
			seen[u.Path] = true
		}
		if round == 0 && r.last < 5 {
			t.Fatalf("last gen %d after 5 updates", r.last)
		}
	}
}

func TestWatchClose(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	w, err := New([]string{dir}, Options{Debounce: 5 * time.Second, Parse: testParse, Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	// Leave a change pending in the debouncer.
	writeFile(t, filepath.Join(dir, "a.stratum.yaml"), "v1")
	time.Sleep(20 * time.Millisecond)

	done := make(chan error, 1)
	go func() { done <- w.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Close did not return")
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Updates is closed, and the pending change was dropped.
	select {
	case u, ok := <-w.Updates():
		if ok {
			t.Fatalf("update after Close: %+v", u)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Updates not closed after Close")
	}
	// No goroutine is left behind (ours or fsnotify's).
	deadline := time.Now().Add(waitTimeout)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("goroutines: %d before, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatchCloseWithUnreadUpdates(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 * updatesBuffer { // more than the buffer holds
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%02d.stratum.yaml", i)), "x")
	}
	w, err := New([]string{dir}, Options{Parse: testParse})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(w.Files()); n != 3*updatesBuffer {
		t.Fatalf("Files() has %d entries", n)
	}
	if err := w.Close(); err != nil { // must not block on the unread updates
		t.Fatal(err)
	}
	n := 0
	for u := range w.Updates() {
		if !strings.HasSuffix(u.Path, specs.SpecSuffix) {
			t.Errorf("bad update %+v", u)
		}
		n++
	}
	if n > updatesBuffer {
		t.Errorf("%d updates after Close, want at most the %d buffered", n, updatesBuffer)
	}
}
