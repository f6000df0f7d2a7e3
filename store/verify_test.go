package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/storetest"
)

// pristineStore writes a store of 300 flows with events at path through a
// Store that keeps nothing open, and returns its bytes.
func pristineStore(t *testing.T, path string) []byte {
	t.Helper()
	s, err := Open(path, Options{KeepOpen: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(bg, func(tx engine.Tx) error {
		for i := 0; i < 300; i++ {
			st := storetest.NewState(fmt.Sprintf("f%03d", i), state.StatusRunning)
			if err := storetest.Put(tx, st); err != nil {
				return err
			}
			if err := tx.Append(engine.Event{FlowID: st.FlowID, Type: engine.EventFlowCreated}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// boltProblems runs bbolt's own consistency check on the file at path (in
// a child process, CheckFilePages: on a damaged page the check can fault)
// and returns what it reports; a file bbolt cannot open, or a check that
// dies, counts as damaged.
func boltProblems(t *testing.T, path string) (problems []string) {
	t.Helper()
	found, err := CheckFilePages(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range found {
		problems = append(problems, p.Error())
	}
	return problems
}

// writeOne is the first write of a fresh process: Open, then one Put.
func writeOne(path string) error {
	s, err := Open(path, Options{KeepOpen: -1})
	if err != nil {
		return err
	}
	return s.Update(bg, func(tx engine.Tx) error {
		return storetest.Put(tx, storetest.NewState("new", state.StatusRunning))
	})
}

// TestWriteRefusesDamagedPages: bytes flipped in (or a whole page zeroed
// of) a store file while no stratum process runs. Whenever bbolt's check
// finds the damage, the next process's first write refuses with the
// corrupt-file error and leaves the file byte-identical.
func TestWriteRefusesDamagedPages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	pristine := pristineStore(t, path)
	pages := len(pristine) / 4096
	damaged, refused := 0, 0
	for trial := 0; trial < 60; trial++ {
		data := bytes.Clone(pristine)
		rng := rand.New(rand.NewPCG(uint64(trial), 14))
		p := 2 + rng.IntN(pages-2)
		if trial%2 == 0 {
			clear(data[p*4096 : (p+1)*4096]) // a zeroed page
		} else {
			for n := 0; n < 8; n++ { // a few flipped bytes
				data[p*4096+rng.IntN(4096)] ^= byte(1 + rng.IntN(255))
			}
		}
		// In place, as a program scribbling over the file would.
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if len(boltProblems(t, path)) == 0 {
			continue
		}
		damaged++
		err := writeOne(path)
		after, rerr := os.ReadFile(path)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if !bytes.Equal(after, data) {
			t.Fatalf("trial %d (page %d): the write changed the damaged file (err %v)", trial, p, err)
		}
		var fe *FileError
		if err == nil || !errors.Is(err, ErrCorrupt) || !errors.As(err, &fe) ||
			!strings.Contains(err.Error(), "is corrupt") || !strings.Contains(err.Error(), "the file was left untouched") {
			t.Fatalf("trial %d (page %d): first write over a damaged file = %v, want the corrupt-file error", trial, p, err)
		}
		refused++
	}
	t.Logf("%d of 60 trials damaged the file as bbolt's check sees it; every first write refused", damaged)
	if damaged < 20 {
		t.Fatalf("only %d trials damaged the file", damaged)
	}
}

// TestVerifiedGeneration: a file as a stratum commit left it is not
// checked again by the next process; a file changed by anything else is.
func TestVerifiedGeneration(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	pristineStore(t, path)
	put := func(id string) *Store {
		t.Helper()
		s, err := Open(path, Options{KeepOpen: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(bg, func(tx engine.Tx) error {
			return storetest.Put(tx, storetest.NewState(id, state.StatusRunning))
		}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := put("a"); s.pageChecks.Load() != 0 {
		t.Fatalf("a process writing after a stratum commit checked the pages %d times", s.pageChecks.Load())
	}
	// The same bytes written back by another program: its change time moved.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := put("b")
	if s.pageChecks.Load() != 1 {
		t.Fatalf("a write after another program wrote the file checked the pages %d times, want 1", s.pageChecks.Load())
	}
	if err := s.Update(bg, func(tx engine.Tx) error {
		return storetest.Put(tx, storetest.NewState("c", state.StatusRunning))
	}); err != nil || s.pageChecks.Load() != 1 {
		t.Fatalf("second write: %v, %d checks, want one in all", err, s.pageChecks.Load())
	}
	// A file replaced by a copy (new inode) is checked.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if s := put("d"); s.pageChecks.Load() != 1 {
		t.Fatalf("a write to a replaced file checked the pages %d times, want 1", s.pageChecks.Load())
	}
}
