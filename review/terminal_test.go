package review

import (
	"os"
	"testing"
)

// TestIsTerminal: a character device that is no terminal (/dev/null), a
// pipe and a regular file are not terminals (a pty is, in engine/stratum's
// console tests).
func TestIsTerminal(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for i, f := range []*os.File{devnull, r, w, file, nil} {
		if IsTerminal(f) {
			t.Errorf("file %d (/dev/null, a pipe's two ends, a file, nil) is taken for a terminal", i)
		}
	}
}
