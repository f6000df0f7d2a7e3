package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the expected output in the scripts")

// binDir holds the stratum binary built by TestMain.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "stratum-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "stratum")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, "github.com/stratum-go/stratum")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building stratum:", err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// repoRoot is the module root, two levels up from this package.
func repoRoot(t testing.TB) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestScripts(t *testing.T) {
	root := repoRoot(t)
	ReadSources(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join(root, "testdata", "script"),
		RequireExplicitExec: true,
		UpdateScripts:       *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
			env.Setenv("STRATUM_HOME", filepath.Join(env.WorkDir, ".stratum"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("GITHUB_ACTIONS", "")
			env.Setenv("EXAMPLES", filepath.Join(root, "specs", "examples"))
			env.Setenv("GOCOVERDIR", os.Getenv("GOCOVERDIR"))
			return nil
		},
	})
}
