package watch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/stratum-go/stratum/specs"
)

// testParse is a real (if tiny) parser: it reads the file, reports a read
// error or an "invalid" prefix as an error diagnostic, and otherwise returns a
// Spec whose Source is the content, so tests can tell which version they got.
func testParse(path string) (*specs.Spec, specs.Diagnostics) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, specs.Diagnostics{{File: path, Severity: specs.SeverityError, Code: "read", Message: err.Error()}}
	}
	if bytes.HasPrefix(b, []byte("invalid")) {
		return &specs.Spec{File: path, Source: b}, specs.Diagnostics{{File: path, Line: 1, Column: 1, Severity: specs.SeverityError, Code: "bad", Message: "invalid spec"}}
	}
	return &specs.Spec{File: path, Source: b}, nil
}

// fakeSource feeds the loop by hand, inside a synctest bubble.
type fakeSource struct {
	events chan fsnotify.Event
	errs   chan error

	mu     sync.Mutex
	added  []string
	closes int
}

func newFakeSource() *fakeSource {
	return &fakeSource{events: make(chan fsnotify.Event), errs: make(chan error)}
}

func (f *fakeSource) source() source {
	return source{
		events: f.events,
		errors: f.errs,
		add: func(dir string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.added = append(f.added, dir)
			return nil
		},
		close: func() error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.closes++
			return nil
		},
	}
}

func (f *fakeSource) watched(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.added, dir)
}

// drain returns every update the loop can deliver without time passing.
// It must run inside a synctest bubble: after each receive it lets the loop
// refill the channel from its outbox.
func drain(t *testing.T, w *Watcher) []Update {
	t.Helper()
	var out []Update
	for {
		synctest.Wait()
		select {
		case u, ok := <-w.Updates():
			if !ok {
				return out
			}
			out = append(out, u)
		default:
			return out
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func checkGens(t *testing.T, last *uint64, us []Update) {
	t.Helper()
	for _, u := range us {
		if u.Gen <= *last {
			t.Fatalf("gen %d of %s is not after %d", u.Gen, u.Path, *last)
		}
		*last = u.Gen
	}
}

func content(u Update) string {
	if u.Spec == nil {
		return ""
	}
	return string(u.Spec.Source)
}

// loopTest runs f in a synctest bubble with a watcher on a fresh directory fed
// by a fake source. synctest.Test also fails if the loop goroutine leaks.
func loopTest(t *testing.T, setup func(dir string), opts Options, f func(t *testing.T, dir string, w *Watcher, src *fakeSource)) {
	dir := t.TempDir()
	if setup != nil {
		setup(dir)
	}
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource()
		if opts.Parse == nil {
			opts.Parse = testParse
		}
		w, err := newWatcher([]string{dir}, opts, src.source())
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		f(t, dir, w, src)
	})
}

func TestLoopDebouncesBurstIntoOneUpdate(t *testing.T) {
	loopTest(t, nil, Options{}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		a := filepath.Join(dir, "a.stratum.yaml")
		for i, gap := range []time.Duration{0, 50, 40} { // events at 0, 50, 90 ms
			time.Sleep(gap * time.Millisecond)
			writeFile(t, a, fmt.Sprint("v", i))
			src.events <- fsnotify.Event{Name: a, Op: fsnotify.Write}
		}
		time.Sleep(99 * time.Millisecond)
		synctest.Wait()
		if got := drain(t, w); len(got) != 0 {
			t.Fatalf("update before the quiet period ended: %+v", got)
		}
		time.Sleep(1 * time.Millisecond)
		synctest.Wait()
		got := drain(t, w)
		if len(got) != 1 || got[0].Path != a || content(got[0]) != "v2" || got[0].Gen != 1 {
			t.Fatalf("got %+v, want one update of %s with v2, gen 1", got, a)
		}
	})
}

func TestLoopContinuousWritesStillReported(t *testing.T) {
	loopTest(t, nil, Options{Debounce: 100 * time.Millisecond}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		a := filepath.Join(dir, "a.stratum.yaml")
		var got []Update
		for i := range 50 { // a write every 50 ms for 2.5 s
			writeFile(t, a, fmt.Sprint("v", i))
			src.events <- fsnotify.Event{Name: a, Op: fsnotify.Write}
			time.Sleep(50 * time.Millisecond)
			synctest.Wait()
			got = append(got, drain(t, w)...)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got = append(got, drain(t, w)...)
		// Capped at 10×Debounce: at 1 s and 2 s, then once after the writes stop.
		if len(got) != 3 {
			t.Fatalf("got %d updates, want 3: %+v", len(got), got)
		}
		if s := content(got[2]); s != "v49" {
			t.Errorf("last update has %q, want v49", s)
		}
		var last uint64
		checkGens(t, &last, got)
	})
}

func TestLoopSlowConsumerGetsNewestState(t *testing.T) {
	setup := func(dir string) {
		for _, n := range []string{"a", "b"} {
			_ = os.WriteFile(filepath.Join(dir, n+".stratum.yaml"), []byte("init"), 0o644)
		}
	}
	loopTest(t, setup, Options{}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		a, b := filepath.Join(dir, "a.stratum.yaml"), filepath.Join(dir, "b.stratum.yaml")
		// Nobody reads while 40 changes to a and one to b are reported.
		const n = 40
		for i := range n {
			writeFile(t, a, fmt.Sprint("v", i))
			src.events <- fsnotify.Event{Name: a, Op: fsnotify.Write}
			if i == n/2 {
				writeFile(t, b, "b1")
				src.events <- fsnotify.Event{Name: b, Op: fsnotify.Write}
			}
			time.Sleep(200 * time.Millisecond)
		}
		synctest.Wait()
		got := drain(t, w)
		var last uint64
		checkGens(t, &last, got)
		// The buffer holds the oldest updates; the outbox keeps only the newest
		// per path. Either way the newest state of every path is delivered last.
		// The two initial updates and the first 14 changes of a fill the
		// buffer; the outbox holds the newest b and the newest a.
		if len(got) != updatesBuffer+2 {
			t.Errorf("got %d updates, want %d (coalesced)", len(got), updatesBuffer+2)
		}
		newest := map[string]string{}
		for _, u := range got {
			newest[u.Path] = content(u)
		}
		if newest[a] != fmt.Sprint("v", n-1) || newest[b] != "b1" {
			t.Errorf("newest states = %v, want a=v%d b=b1", newest, n-1)
		}
		if got[len(got)-1].Path != a {
			t.Errorf("last delivered is %s, want %s", got[len(got)-1].Path, a)
		}
		// The watcher kept working and Files agrees with the last states.
		files := w.Files()
		if len(files) != 2 || content(files[0]) != fmt.Sprint("v", n-1) || content(files[1]) != "b1" {
			t.Errorf("Files() = %+v", files)
		}
	})
}

func TestLoopRemoveRenameAndReturn(t *testing.T) {
	setup := func(dir string) {
		_ = os.WriteFile(filepath.Join(dir, "a.stratum.yaml"), []byte("a0"), 0o644)
		_ = os.WriteFile(filepath.Join(dir, "b.stratum.yaml"), []byte("b0"), 0o644)
	}
	loopTest(t, setup, Options{}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		a, b := filepath.Join(dir, "a.stratum.yaml"), filepath.Join(dir, "b.stratum.yaml")
		synctest.Wait()
		var last uint64
		checkGens(t, &last, drain(t, w))

		// a is renamed away and back within the debounce window: a change.
		tmp := filepath.Join(dir, "a.bak")
		if err := os.Rename(a, tmp); err != nil {
			t.Fatal(err)
		}
		src.events <- fsnotify.Event{Name: a, Op: fsnotify.Rename}
		src.events <- fsnotify.Event{Name: tmp, Op: fsnotify.Create}
		time.Sleep(30 * time.Millisecond)
		if err := os.Rename(tmp, a); err != nil {
			t.Fatal(err)
		}
		src.events <- fsnotify.Event{Name: tmp, Op: fsnotify.Rename}
		src.events <- fsnotify.Event{Name: a, Op: fsnotify.Create}
		// b is removed.
		if err := os.Remove(b); err != nil {
			t.Fatal(err)
		}
		src.events <- fsnotify.Event{Name: b, Op: fsnotify.Remove}
		time.Sleep(time.Second)
		synctest.Wait()
		got := drain(t, w)
		checkGens(t, &last, got)
		if len(got) != 2 {
			t.Fatalf("got %+v, want 2 updates", got)
		}
		byPath := map[string]Update{got[0].Path: got[0], got[1].Path: got[1]}
		if u := byPath[a]; u.Removed || content(u) != "a0" {
			t.Errorf("a: %+v, want a change with a0", u)
		}
		if u := byPath[b]; !u.Removed || u.Spec != nil {
			t.Errorf("b: %+v, want removed", u)
		}
		if files := w.Files(); len(files) != 1 || files[0].Path != a {
			t.Errorf("Files() = %+v, want only a", files)
		}
		// A removal of something never known is not reported.
		src.events <- fsnotify.Event{Name: filepath.Join(dir, "ghost.stratum.yaml"), Op: fsnotify.Remove}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := drain(t, w); len(got) != 0 {
			t.Errorf("unknown removal reported: %+v", got)
		}
	})
}

func TestLoopDirectoryRemovedAndCreated(t *testing.T) {
	setup := func(dir string) {
		writeFile(t, filepath.Join(dir, "sub", "a.stratum.yaml"), "a0")
		writeFile(t, filepath.Join(dir, "sub", "deep", "b.stratum.yaml"), "b0")
	}
	loopTest(t, setup, Options{Recursive: true}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		synctest.Wait()
		if got := drain(t, w); len(got) != 2 {
			t.Fatalf("initial scan: %+v", got)
		}
		if !src.watched(filepath.Join(dir, "sub", "deep")) {
			t.Fatalf("subdirectory not watched: %v", src.added)
		}
		sub := filepath.Join(dir, "sub")
		if err := os.RemoveAll(sub); err != nil {
			t.Fatal(err)
		}
		src.events <- fsnotify.Event{Name: sub, Op: fsnotify.Remove}
		time.Sleep(time.Second)
		synctest.Wait()
		got := drain(t, w)
		if len(got) != 2 || !got[0].Removed || !got[1].Removed {
			t.Fatalf("after removing the directory: %+v, want two removals", got)
		}
		// A new directory tree: watched at once, and the files already in it found.
		nd := filepath.Join(dir, "new")
		writeFile(t, filepath.Join(nd, "x", "c.stratum.yaml"), "c0")
		writeFile(t, filepath.Join(nd, ".hidden", "d.stratum.yaml"), "d0")
		writeFile(t, filepath.Join(nd, "node_modules", "e.stratum.yaml"), "e0")
		src.events <- fsnotify.Event{Name: nd, Op: fsnotify.Create}
		time.Sleep(time.Second)
		synctest.Wait()
		got = drain(t, w)
		if len(got) != 1 || got[0].Path != filepath.Join(nd, "x", "c.stratum.yaml") || content(got[0]) != "c0" {
			t.Fatalf("after creating a directory: %+v", got)
		}
		if !src.watched(nd) || !src.watched(filepath.Join(nd, "x")) || src.watched(filepath.Join(nd, ".hidden")) || src.watched(filepath.Join(nd, "node_modules")) {
			t.Errorf("watches: %v", src.added)
		}
	})
}

func TestLoopNonRecursive(t *testing.T) {
	setup := func(dir string) {
		writeFile(t, filepath.Join(dir, "top.stratum.yaml"), "t")
		writeFile(t, filepath.Join(dir, "sub", "a.stratum.yaml"), "a0")
	}
	loopTest(t, setup, Options{Recursive: false}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		synctest.Wait()
		got := drain(t, w)
		if len(got) != 1 || filepath.Base(got[0].Path) != "top.stratum.yaml" {
			t.Fatalf("initial scan: %+v", got)
		}
		if src.watched(filepath.Join(dir, "sub")) {
			t.Errorf("subdirectory watched although not recursive")
		}
		nd := filepath.Join(dir, "new")
		writeFile(t, filepath.Join(nd, "c.stratum.yaml"), "c0")
		src.events <- fsnotify.Event{Name: nd, Op: fsnotify.Create}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := drain(t, w); len(got) != 0 {
			t.Errorf("new subdirectory reported although not recursive: %+v", got)
		}
	})
}

func TestLoopErrorTriggersRescan(t *testing.T) {
	setup := func(dir string) {
		writeFile(t, filepath.Join(dir, "a.stratum.yaml"), "a0")
		writeFile(t, filepath.Join(dir, "b.stratum.yaml"), "b0")
	}
	loopTest(t, setup, Options{Recursive: true}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		synctest.Wait()
		drain(t, w)
		// Changes whose events were lost.
		writeFile(t, filepath.Join(dir, "a.stratum.yaml"), "a1")
		if err := os.Remove(filepath.Join(dir, "b.stratum.yaml")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "sub", "c.stratum.yaml"), "c0")
		src.errs <- fsnotify.ErrEventOverflow
		time.Sleep(time.Second)
		synctest.Wait()
		got := drain(t, w)
		want := map[string]string{"a.stratum.yaml": "a1", "b.stratum.yaml": "removed", "c.stratum.yaml": "c0"}
		if len(got) != len(want) {
			t.Fatalf("got %+v, want %d updates", got, len(want))
		}
		for _, u := range got {
			s := content(u)
			if u.Removed {
				s = "removed"
			}
			if want[filepath.Base(u.Path)] != s {
				t.Errorf("%s: %q, want %q", u.Path, s, want[filepath.Base(u.Path)])
			}
		}
		if !src.watched(filepath.Join(dir, "sub")) {
			t.Errorf("rescan did not watch the new subdirectory")
		}
	})
}

func TestLoopInvalidSpecAndPanickingParser(t *testing.T) {
	setup := func(dir string) {
		writeFile(t, filepath.Join(dir, "bad.stratum.yaml"), "invalid: yes")
		writeFile(t, filepath.Join(dir, "boom.stratum.yaml"), "boom")
	}
	parse := func(path string) (*specs.Spec, specs.Diagnostics) {
		if filepath.Base(path) == "boom.stratum.yaml" {
			panic("parser bug")
		}
		return testParse(path)
	}
	loopTest(t, setup, Options{Parse: parse}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		synctest.Wait()
		got := drain(t, w)
		if len(got) != 2 {
			t.Fatalf("got %+v", got)
		}
		for _, u := range got {
			if u.Spec != nil || !u.Diags.HasErrors() || u.Removed {
				t.Errorf("%s: spec %v diags %v, want nil spec and an error", u.Path, u.Spec, u.Diags)
			}
		}
		if d := got[1].Diags[0]; d.Code != CodeInternalError || d.File != got[1].Path {
			t.Errorf("panic diagnostic = %+v", d)
		}
	})
}

func TestLoopCloseWithPendingEvents(t *testing.T) {
	loopTest(t, nil, Options{Debounce: time.Second}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		a := filepath.Join(dir, "a.stratum.yaml")
		writeFile(t, a, "a0")
		src.events <- fsnotify.Event{Name: a, Op: fsnotify.Create}
		time.Sleep(10 * time.Millisecond)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if src.closes != 1 {
			t.Errorf("source closed %d times, want 1", src.closes)
		}
		for u := range w.Updates() { // returns only because Updates is closed
			t.Errorf("update after Close: %+v", u)
		}
	})
}

func TestLoopStopsWhenSourceCloses(t *testing.T) {
	loopTest(t, nil, Options{}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		close(src.events)
		close(src.errs)
		for range w.Updates() {
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.stratum.yaml")
	writeFile(t, file, "x")
	tests := []struct {
		name string
		dirs []string
		want error
	}{
		{"no dirs", nil, ErrNoDirs},
		{"missing dir", []string{dir, filepath.Join(dir, "missing")}, os.ErrNotExist},
		{"file instead of dir", []string{file}, ErrNotDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := New(tt.dirs, Options{Parse: testParse})
			if err == nil {
				w.Close()
				t.Fatal("New succeeded")
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
