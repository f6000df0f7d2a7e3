package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestKeptHandleSeesOtherWriters: two Stores on one file (as two processes
// would be) alternate Updates while each keeps its handle open between
// them; neither loses the other's writes, and the file stays consistent —
// a handle whose file another writer committed to is reopened, not reused.
func TestKeptHandleSeesOtherWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	a, err := Open(path, Options{KeepOpen: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, Options{KeepOpen: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := 0; i < n; i++ {
		for w, s := range []*Store{a, b} {
			if err := transition(s, "shared", w, i); err != nil {
				t.Fatal(err)
			}
			// Flows created on one side only: allocations that would collide
			// if a stale free-page list were reused.
			storePut(t, s, storetest.NewState(fmt.Sprintf("w%d-%03d", w, i), state.StatusRunning))
		}
	}
	for _, s := range []*Store{a, b} {
		st := storeGet(t, s, "shared")
		if st.Attempts["n"] != 2*n || st.Attempts["w0"] != n || st.Attempts["w1"] != n {
			t.Fatalf("counters %v, want n=%d, w0=w1=%d", st.Attempts, 2*n, n)
		}
		if got := len(storeList(t, s, engine.ListFilter{})); got != 2*n+1 {
			t.Fatalf("%d flows, want %d", got, 2*n+1)
		}
		if err := s.Check(bg); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeptHandleFileReplaced: a store file replaced (by rename) while a
// handle is kept is opened afresh: the Update goes into the new file.
func TestKeptHandleFileReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s, err := Open(path, Options{KeepOpen: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	storePut(t, s, storetest.NewState("before", state.StatusRunning))
	other := filepath.Join(dir, "other.db")
	if _, err := Open(other, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	storePut(t, s, storetest.NewState("after", state.StatusRunning))
	if got := sortedIDs(storeList(t, s, engine.ListFilter{})); len(got) != 1 || got[0] != "after" {
		t.Fatalf("flows in the replaced file: %v, want [after]", got)
	}
	if err := s.Check(bg); err != nil {
		t.Fatal(err)
	}
}

// TestKeptHandleClosedWhenIdle: after KeepOpen without Updates the file is
// closed again.
func TestKeptHandleClosedWhenIdle(t *testing.T) {
	s := newTestStore(t, Options{KeepOpen: 20 * time.Millisecond})
	storePut(t, s, storetest.NewState("f", state.StatusRunning))
	kept := func() bool {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return s.kept != nil
	}
	if !kept() {
		t.Fatal("no handle kept after an Update")
	}
	deadline := time.Now().Add(5 * time.Second)
	for kept() {
		if time.Now().After(deadline) {
			t.Fatal("the kept handle was not closed after KeepOpen")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestKeptHandleReads: reads of a process that keeps a handle reuse it (no
// open of the file), and still see what another process committed since —
// the kept handle is then not reused but the file opened afresh.
func TestKeptHandleReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	a, err := Open(path, Options{KeepOpen: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, Options{KeepOpen: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	storePut(t, a, storetest.NewState("mine", state.StatusRunning))
	a.mu.Lock()
	kept := a.kept
	a.mu.Unlock()
	if kept == nil {
		t.Fatal("no handle kept after an Update")
	}
	if st := storeGet(t, a, "mine"); st.FlowID != "mine" {
		t.Fatalf("read %+v", st)
	}
	a.mu.Lock()
	reused := a.kept == kept
	a.mu.Unlock()
	if !reused {
		t.Fatal("a read did not reuse (and keep) the handle of the last Update")
	}
	for i := 0; i < 20; i++ {
		storePut(t, b, storetest.NewState(fmt.Sprintf("theirs-%02d", i), state.StatusRunning))
		if got := len(storeList(t, a, engine.ListFilter{})); got != i+2 {
			t.Fatalf("after the other store's write %d, a read lists %d flows, want %d", i, got, i+2)
		}
		if st := storeGet(t, a, fmt.Sprintf("theirs-%02d", i)); st == nil {
			t.Fatalf("the other store's flow %d is not seen", i)
		}
	}
	if err := a.Check(bg); err != nil {
		t.Fatal(err)
	}
}
