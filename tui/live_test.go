package tui

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"
	"github.com/stratum-go/stratum/store"
)

// This file's tests use the real bbolt store and the stratum binary. Only
// tests import the store: the console itself reads it through Source.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// stratumBinary builds the stratum command once per test run.
func stratumBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the stratum binary")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stratum-tui-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "stratum")
		cmd := exec.Command("go", "build", "-o", binPath, "..")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

type cli struct {
	t    *testing.T
	bin  string
	home string
	dir  string
}

func (c cli) run(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "STRATUM_HOME="+c.home)
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("stratum %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func jsonField(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, `"`+name+`": "`); ok {
			return strings.TrimSuffix(strings.TrimSuffix(v, ","), `"`)
		}
	}
	return ""
}

// gate prepares a flow waiting at its gate with the CLI, as an agent would.
func (c cli) gate() string {
	c.t.Helper()
	fid := jsonField(c.run("plan", "flow.stratum.yaml", "--input", "name=world"), "flow_id")
	if fid == "" {
		c.t.Fatal("plan gave no flow id")
	}
	c.run("step-done", fid, "build", "--result", `{"ok": false}`)
	c.run("step-done", fid, "build", "--result", `{"ok": true}`)
	return fid
}

func newCLI(t *testing.T) cli {
	dir := t.TempDir()
	spec, err := os.ReadFile(filepath.Join("testdata", "e2e", "flow.stratum.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "flow.stratum.yaml"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	return cli{t: t, bin: stratumBinary(t), home: filepath.Join(dir, "home"), dir: dir}
}

// TestCrossProcessDecision: gates opened and decided by other processes
// reach the model through Source.Watch (the store's change notification:
// fsnotify on the database file); a decided gate leaves the Gates pane. It
// logs the delay from the deciding process's exit to the redrawn frame.
func TestCrossProcessDecision(t *testing.T) {
	c := newCLI(t)
	c.gate() // creates the store
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec}
	// A long fallback poll: the wake-up must come from fsnotify.
	st, err := store.Open(filepath.Join(c.home, store.FileName), store.Options{WatchPoll: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	svc.Store = st
	src := ServiceSource(svc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	after, err := src.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, err := src.Watch(ctx, after)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(t, src, 80, 24)
	press(m, "3")
	if len(m.reviews) != 1 {
		t.Fatalf("want 1 gate at start, got %d", len(m.reviews))
	}
	// next applies event batches until cond holds on the rendered frame.
	next := func(cond func(frame string) bool) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case evs := <-events:
				drive(m, m.handleEngineEvents(evs))
				if cond(m.View()) {
					return
				}
			case <-timeout:
				t.Fatalf("timed out; frame:\n%s", m.View())
			}
		}
	}
	var lat []time.Duration
	for i := 0; i < 5; i++ {
		fid := c.gate()
		next(func(f string) bool { return strings.Contains(f, "2 waiting gates") })
		verb := []string{"approve", "reject"}[i%2]
		c.run("gate", verb, fid, "review", "--note", "from another process")
		decided := time.Now()
		next(func(f string) bool { return strings.Contains(f, "1 waiting gate ") })
		lat = append(lat, time.Since(decided))
		for _, r := range m.reviews {
			if r.FlowID == fid {
				t.Fatalf("gate of %s still listed after %s elsewhere", fid, verb)
			}
		}
	}
	slices.Sort(lat)
	t.Logf("decision in another process -> redrawn frame: min %v, median %v, max %v (n=%d)", lat[0], lat[len(lat)/2], lat[len(lat)-1], len(lat))
}

// TestTmuxEndToEnd runs testdata/e2e/tmux.sh: the console in a real
// terminal, a gate approved by keyboard, the store checked with the CLI.
func TestTmuxEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	bin := stratumBinary(t)
	cmd := exec.Command("bash", filepath.Join("testdata", "e2e", "tmux.sh"))
	cmd.Env = append(os.Environ(), "STRATUM="+bin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("tmux.sh: %v\n%s", err, out.String())
	}
	t.Log(strings.TrimSpace(out.String()))
}
