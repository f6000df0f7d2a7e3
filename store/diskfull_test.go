package store_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestDiskFull: on a file system with no space left, a write fails with an
// error that names the store and says the disk is full (ErrDiskFull; it
// said only "meta 0 copy: write …/.stratum-check-NNN.db: no space left on
// device"), writes nothing, and the store works again once space is freed.
// It needs a real full file system: a 4 MiB tmpfs, mounted when the test
// may (root, mount permitted), else skipped.
func TestDiskFull(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	// Lazily: the store may still hold the file open (KeepOpen).
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	path := filepath.Join(dir, "stratum.db")
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func(id string) error {
		st := storetest.NewState(id, state.StatusRunning)
		st.Inputs["big"] = strings.Repeat("x", 256<<10)
		return s.Update(ctx, func(tx engine.Tx) error { return storetest.Put(tx, st) })
	}
	if err := put("before"); err != nil {
		t.Fatal(err)
	}
	// Fill the rest of the file system.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	_ = f.Close()
	for i := range 3 { // every later writer gets the same clear error
		err := put("during")
		if !errors.Is(err, store.ErrDiskFull) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "the disk is full") {
			t.Fatalf("write %d on a full disk: %v", i, err)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := put("after"); err != nil {
		t.Fatalf("after freeing space: %v", err)
	}
	var ids []string
	if err := s.View(ctx, func(tx engine.Tx) error {
		sums, err := tx.List(engine.ListFilter{})
		for _, sum := range sums {
			ids = append(ids, sum.FlowID)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "after,before" && strings.Join(ids, ",") != "before,after" {
		t.Fatalf("flows %v, want before and after", ids)
	}
}
