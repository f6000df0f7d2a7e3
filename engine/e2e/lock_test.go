package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/store"
)

// Nothing expensive under the lock (DESIGN.md §5, issue 14): a transition
// evaluates its expressions and parses its spec on a snapshot, outside the
// store's write transaction, so another process is never locked out for
// the duration of that work. These tests run the stratum binary against a
// store that this process reads and writes through its own handle, and
// measure the longest time one of those reads or writes waited.

// lockProbe reads (a listing, as `stratum query flows`) and writes (a cache
// entry) the store at path, through its own handle, back to back until
// stop is closed, and records the longest wait of each.
type lockProbe struct {
	maxRead, maxWrite time.Duration
	n                 int
	err               error
	done              chan struct{}
}

func probeLock(t *testing.T, path string, stop <-chan struct{}) *lockProbe {
	t.Helper()
	s, err := store.Open(path, store.Options{LockTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	p := &lockProbe{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		ctx := context.Background()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			if err := s.View(ctx, func(tx engine.Tx) error {
				_, err := tx.List(engine.ListFilter{Limit: 10})
				return err
			}); err != nil {
				p.err = err
				return
			}
			p.maxRead = max(p.maxRead, time.Since(t0))
			t0 = time.Now()
			if err := s.Update(ctx, func(tx engine.Tx) error {
				return tx.CachePut("probe", []byte(fmt.Sprint(i)))
			}); err != nil {
				p.err = err
				return
			}
			p.maxWrite = max(p.maxWrite, time.Since(t0))
			p.n++
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return p
}

func (p *lockProbe) wait(t *testing.T) {
	t.Helper()
	<-p.done
	if p.err != nil {
		t.Fatalf("probe: %v", p.err)
	}
	if p.n == 0 {
		t.Fatal("the probe made no round")
	}
}

// lockEnv is a work directory with its own STRATUM_HOME.
type lockEnv struct {
	t   *testing.T
	dir string
	env []string
}

func newLockEnv(t *testing.T) *lockEnv {
	ReadSources(t)
	dir := t.TempDir()
	return &lockEnv{t: t, dir: dir, env: append(os.Environ(), "STRATUM_HOME="+filepath.Join(dir, ".stratum"), "NO_COLOR=1", "GITHUB_ACTIONS=")}
}

func (e *lockEnv) dbPath() string { return filepath.Join(e.dir, ".stratum", store.FileName) }

func (e *lockEnv) cmd(args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(binDir, "stratum"), args...)
	c.Dir, c.Env = e.dir, e.env
	return c
}

func (e *lockEnv) write(name string, data []byte) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// plan plans the spec's flow main and returns its id.
func (e *lockEnv) plan(spec string) string {
	e.t.Helper()
	out, err := e.cmd("plan", spec, "--flow", "main").Output()
	if err != nil {
		e.t.Fatalf("plan: %v\n%s", err, out)
	}
	var r struct {
		FlowID string `json:"flow_id"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.FlowID == "" {
		e.t.Fatalf("plan answered %.300s (%v)", out, err)
	}
	return r.FlowID
}

func (e *lockEnv) get(flowID string) *state.FlowState {
	e.t.Helper()
	s, err := store.Open(e.dbPath(), store.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	var st *state.FlowState
	if err := s.View(context.Background(), func(tx engine.Tx) (err error) {
		st, err = tx.Get(flowID)
		return err
	}); err != nil {
		e.t.Fatal(err)
	}
	return st
}

// ensureCount ensures, each close to the evaluation budget (upper() of
// non-ASCII text, the slowest operation per unit of work, on 6 MB strings).
const ensureCount = 6

func expensiveEnsureSpec() string {
	const one = "result.a.upper() == result.b.upper() and result.a.upper() == result.b.upper() and result.a.upper() == result.b.upper() and result.a.upper() == result.b.upper()"
	var b strings.Builder
	b.WriteString("version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n      - id: w\n        intent: \"work\"\n        ensure:\n")
	for i := 0; i < ensureCount; i++ {
		fmt.Fprintf(&b, "          - \"%s\"\n", one)
	}
	b.WriteString("      - id: next\n        intent: \"next\"\n        depends_on: [w]\n")
	return b.String()
}

func expensiveResult(t *testing.T) []byte {
	a := strings.Repeat("é", 3<<20)
	b, err := json.Marshal(map[string]any{"a": a, "b": a})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEnsureOutsideLock: while `stratum step-done` evaluates ensures that
// take seconds (each within its budget), another process reads and writes
// the store without waiting for them; SIGINT stops such an evaluation at
// once and writes nothing.
func TestEnsureOutsideLock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	e := newLockEnv(t)
	spec := e.write("ensure.stratum.yaml", []byte(expensiveEnsureSpec()))
	result := e.write("result.json", expensiveResult(t))

	// 1. The evaluation runs to its end while the probe reads and writes.
	flow := e.plan(spec)
	stop := make(chan struct{})
	probe := probeLock(t, e.dbPath(), stop)
	start := time.Now()
	out, err := e.cmd("step-done", flow, "w", "--result-file", result).CombinedOutput()
	took := time.Since(start)
	close(stop)
	probe.wait(t)
	if err != nil {
		t.Fatalf("step-done: %v\n%.500s", err, out)
	}
	if !bytes.Contains(out, []byte(`"step_id": "next"`)) && !bytes.Contains(out, []byte(`"step_id":"next"`)) {
		t.Fatalf("step-done answered %.500s, want the dispatch of next", out)
	}
	t.Logf("step-done with %d expensive ensures took %v; the longest wait of another process: read %v, write %v (%d rounds)",
		ensureCount, took.Round(time.Millisecond), probe.maxRead.Round(time.Millisecond), probe.maxWrite.Round(time.Millisecond), probe.n)
	if took < time.Second {
		t.Fatalf("step-done took only %v: the ensures are not expensive enough to measure anything", took)
	}
	if limit := took / 3; probe.maxRead > limit || probe.maxWrite > limit {
		t.Errorf("another process waited up to %v (read) / %v (write) while step-done ran %v: the evaluation held the lock",
			probe.maxRead, probe.maxWrite, took)
	}

	// 2. SIGINT in the middle of the evaluation.
	flow = e.plan(spec)
	before := e.get(flow)
	c := e.cmd("step-done", flow, "w", "--result-file", result)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// A fifth of the way in: well after start-up (tens of ms), well
	// before the end even when this run is much faster than the first
	// (a loaded machine varies by a factor of two or three).
	time.Sleep(took / 5)
	sent := time.Now()
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = c.Wait()
	stopped := time.Since(sent)
	t.Logf("SIGINT %v into step-done: exited after %v: %v\nstdout: %.300s\nstderr: %.300s", (took / 5).Round(time.Millisecond), stopped.Round(time.Millisecond), err, stdout.String(), stderr.String())
	if err == nil {
		t.Errorf("step-done interrupted by SIGINT exited 0")
	}
	if stopped > took/5 {
		t.Errorf("step-done took %v to stop after SIGINT (the whole evaluation takes about %v)", stopped, took)
	}
	if !strings.Contains(stderr.String(), "cancel") {
		t.Errorf("stderr does not say the transition was cancelled: %q", stderr.String())
	}
	after := e.get(flow)
	if after.Version != before.Version || after.Attempts["w"] != 0 {
		t.Errorf("the interrupted step-done wrote: version %d → %d, attempts of w %d", before.Version, after.Version, after.Attempts["w"])
	}
}

// largeSpec is a spec of several MB (issue 14: 7.9 MB) whose flow main has
// steps s1…s<n>; the rest are flows nobody runs.
func largeSpec(n int) []byte {
	var b bytes.Buffer
	b.WriteString("version: \"0.2\"\nflows:\n  main:\n    input: {}\n    steps:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - id: s%d\n        intent: \"step %d\"\n", i, i)
		if i > 1 {
			fmt.Fprintf(&b, "        depends_on: [s%d]\n", i-1)
		}
	}
	pad := strings.Repeat("lorem ipsum dolor sit amet ", 10)
	for f := 0; b.Len() < 7900<<10; f++ {
		fmt.Fprintf(&b, "  pad%d:\n    input: {}\n    steps:\n", f)
		for i := 0; i < 8; i++ {
			fmt.Fprintf(&b, "      - id: p%d\n        intent: \"%s %d\"\n        ensure: [\"result.x == %d\"]\n", i, pad, i, i)
			if i > 0 {
				fmt.Fprintf(&b, "        depends_on: [p%d]\n", i-1)
			}
		}
	}
	return b.Bytes()
}

// TestLargeSpecOutsideLock: transitions of a flow with a 7.9 MB spec, each
// a new `stratum step-done` process (so each parses the spec), never make
// another process wait for the parse.
func TestLargeSpecOutsideLock(t *testing.T) {
	e := newLockEnv(t)
	const steps = 5
	src := largeSpec(steps)
	t0 := time.Now()
	if sp, ds := specs.Parse("large.stratum.yaml", src, exprlang.Compile); sp == nil || ds.HasErrors() {
		t.Fatalf("the large spec does not parse: %v", ds.Error())
	}
	parse := time.Since(t0)
	spec := e.write("large.stratum.yaml", src)
	flow := e.plan(spec)

	stop := make(chan struct{})
	probe := probeLock(t, e.dbPath(), stop)
	start := time.Now()
	for i := 1; i <= steps; i++ {
		out, err := e.cmd("step-done", flow, fmt.Sprintf("s%d", i), "--result", `{"ok": true}`).CombinedOutput()
		if err != nil {
			t.Fatalf("step-done s%d: %v\n%.500s", i, err, out)
		}
	}
	took := time.Since(start)
	close(stop)
	probe.wait(t)
	if st := e.get(flow); st.Status != state.StatusComplete {
		t.Fatalf("flow is %s, want complete", st.Status)
	}
	t.Logf("%d step-done on a %.1f MB spec (parse %v in this process) took %v; the longest wait of another process: read %v, write %v (%d rounds)",
		steps, float64(len(src))/(1<<20), parse.Round(time.Millisecond), took.Round(time.Millisecond),
		probe.maxRead.Round(time.Millisecond), probe.maxWrite.Round(time.Millisecond), probe.n)
	if limit := parse * 3 / 4; probe.maxRead > limit || probe.maxWrite > limit {
		t.Errorf("another process waited up to %v (read) / %v (write); parsing the spec takes %v: it ran under the lock",
			probe.maxRead, probe.maxWrite, parse)
	}
}
