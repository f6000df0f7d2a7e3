//go:build unix

package watch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stratum-go/stratum/specs"
)

// A FIFO named like a spec must not hang the watcher (opening it would block
// until a writer appears).
func TestLoopFIFOIsNotOpened(t *testing.T) {
	setup := func(dir string) {
		if err := syscall.Mkfifo(filepath.Join(dir, "pipe.stratum.yaml"), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	parse := func(path string) (*specs.Spec, specs.Diagnostics) {
		if _, err := os.ReadFile(path); err != nil { // would block on a FIFO
			t.Errorf("read: %v", err)
		}
		return nil, nil
	}
	loopTest(t, setup, Options{Parse: parse}, func(t *testing.T, dir string, w *Watcher, src *fakeSource) {
		synctest.Wait()
		got := drain(t, w)
		if len(got) != 1 || got[0].Spec != nil || len(got[0].Diags) != 1 || got[0].Diags[0].Code != CodeNotRegularFile {
			t.Fatalf("got %+v, want one not-regular-file diagnostic", got)
		}
	})
}
