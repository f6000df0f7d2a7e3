package e2e

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// ReadSources reads every Go source, go.mod and go.sum of the module from
// within a test. Tests that build the stratum binary in a subprocess call it,
// so that `go test`'s result cache (which records the files a test process
// opens) notices when the binary would change; without it a cached pass could
// hide a regression in main.go or in a package the test binary does not link.
func ReadSources(t testing.TB) {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("e2e: cannot locate the module root")
	}
	root := filepath.Join(filepath.Dir(self), "..", "..")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || n[0] == '.') {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(p) == ".go" || d.Name() == "go.mod" || d.Name() == "go.sum" {
			_, err := os.ReadFile(p)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
