package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

var update = flag.Bool("update", false, "rewrite the expected output in the scripts")

// binDir holds the stratum binary built by TestMain.
var binDir string

func TestMain(m *testing.M) {
	etcdtest.MemberMain() // BenchmarkTeamThroughput's members: this binary started again
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
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"fakeprovider": fakeProvider},
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
			env.Setenv("STRATUM_HOME", filepath.Join(env.WorkDir, ".stratum"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("GITHUB_ACTIONS", "")
			env.Setenv("EXAMPLES", filepath.Join(root, "specs", "examples"))
			env.Setenv("GOCOVERDIR", os.Getenv("GOCOVERDIR"))
			// `go run` in a script (run_advice.txtar) builds with this
			// machine's caches, not an empty one under $HOME.
			env.Setenv("REPO", root)
			env.Setenv("STRATUM_BIN", filepath.Join(binDir, filepath.Base(stratumExe())))
			for k, v := range goEnv() {
				env.Setenv(k, v)
			}
			return nil
		},
	})
}

// stratumExe is the binary TestMain built.
func stratumExe() string {
	if runtime.GOOS == "windows" {
		return "stratum.exe"
	}
	return "stratum"
}

// goEnv is the go command's environment a script's `go run` needs to reuse
// this machine's build and module caches.
var goEnv = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS", "GOTOOLCHAIN"} {
		if v, err := exec.Command("go", "env", k).Output(); err == nil {
			out[k] = strings.TrimSpace(string(v))
		}
	}
	return out
})

// scriptsOnEtcd are the scripts that TestScriptsEtcd runs again on etcd:
// every script that uses the store. store_errors.txtar is about a damaged
// bbolt file (nothing of it applies to etcd); validate.txtar and
// install.txtar never open the store.
var scriptsOnEtcd = []string{"flow_ids", "gate", "gate_human", "gate_rounds", "run", "run_replay", "run_resume", "stalled", "tui_deadline"}

// TestScriptsEtcd runs the scripts of every command that uses the store
// (run with --approve all and --resume after kill -9, plan/step-done/
// resume, gate, query, audit, gc, tui --plain) with STRATUM_STORE naming an
// embedded etcd member, each script on a prefix of its own.
func TestScriptsEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd member")
	}
	root := repoRoot(t)
	c := etcdtest.Start(t, 1)
	var files []string
	for _, name := range scriptsOnEtcd {
		files = append(files, filepath.Join(root, "testdata", "script", name+".txtar"))
	}
	var n atomic.Int64
	// The scripts run as parallel subtests, after this function returns:
	// once they are done, check that each wrote its flows to etcd.
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		for i := int64(1); i <= n.Load(); i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := cli.Get(ctx, fmt.Sprintf("/script-%d/\x00meta/seq", i)) // schema 2: /PREFIX/ and NUL
			cancel()
			if err != nil || len(r.Kvs) == 0 {
				t.Errorf("prefix script-%d: no event log in etcd (%v)", i, err)
			}
		}
		if n.Load() != int64(len(files)) {
			t.Errorf("%d scripts set up, want %d", n.Load(), len(files))
		}
	})
	testscript.Run(t, testscript.Params{
		Files:               files,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
			env.Setenv("STRATUM_HOME", filepath.Join(env.WorkDir, ".stratum"))
			env.Setenv("STRATUM_STORE", c.URL(fmt.Sprintf("script-%d", n.Add(1))))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("GITHUB_ACTIONS", "")
			env.Setenv("EXAMPLES", filepath.Join(root, "specs", "examples"))
			env.Setenv("GOCOVERDIR", os.Getenv("GOCOVERDIR"))
			return nil
		},
	})
}
