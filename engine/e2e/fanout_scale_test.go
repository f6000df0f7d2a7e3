package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store/etcdstore/etcdtest"
)

// These tests run fan-outs through the built binary as the other fan-out
// tests do: task ids that clean to the same branch name, many quick tasks
// at once on bbolt and on an embedded etcd member, 10,000 tasks, and
// Ctrl-C in each phase of a large fan-out.

// scaleRepo is a directory (a git repository when git is asked for) with
// one fan-out spec over the task graph in graph.json.
type scaleRepo struct {
	t         *testing.T
	dir, home string
	env       []string
}

// scaleSpec is a decompose step printing $GRAPH and a fan-out over it
// (fan is the step's remaining YAML: max_concurrent, isolation, run).
func scaleSpec(fan string) string {
	return `version: "0.3"
contracts:
  TaskGraph:
    tasks: {type: array}
flows:
  main:
    input: {}
    steps:
      - id: plan
        type: decompose
        intent: "split"
        output_contract: TaskGraph
        run: cat "$GRAPH"
      - id: fan
        type: parallel_dispatch
        source: "$.steps.plan.output.tasks"
        intent_template: "do {id}"
        depends_on: [plan]
` + fan
}

func newScaleRepo(t *testing.T, ids []string, fan string, withGit bool, extraEnv ...string) *scaleRepo {
	t.Helper()
	outside := t.TempDir()
	r := &scaleRepo{t: t, dir: t.TempDir(), home: filepath.Join(outside, "home")}
	tasks := make([]map[string]any, len(ids))
	for i, id := range ids {
		tasks[i] = map[string]any{"id": id}
	}
	graph, err := json.Marshal(map[string]any{"tasks": tasks})
	if err != nil {
		t.Fatal(err)
	}
	gp := filepath.Join(outside, "graph.json")
	if err := os.WriteFile(gp, graph, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "fan.stratum.yaml"), []byte(scaleSpec(fan)), 0o644); err != nil {
		t.Fatal(err)
	}
	r.env = append(os.Environ(), "STRATUM_HOME="+r.home, "GRAPH="+gp, "NO_COLOR=1", "GITHUB_ACTIONS=")
	r.env = append(r.env, extraEnv...)
	if withGit {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git not installed")
		}
		r.git("init", "-q")
		r.git("add", "-A")
		r.git("commit", "-q", "-m", "spec")
	}
	return r
}

func (r *scaleRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *scaleRepo) cmd(args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(binDir, "stratum"), args...)
	c.Dir, c.Env = r.dir, r.env
	return c
}

// runJSON runs `stratum run --json ARGS` to its end: exit code, the
// report's run block, stdout and stderr.
func (r *scaleRepo) runJSON(args ...string) (int, runBlock, string, string) {
	r.t.Helper()
	c := r.cmd(append([]string{"run", "--json"}, args...)...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	return code, parseReport(r.t, stdout.String(), stderr.String()), stdout.String(), stderr.String()
}

// runBlock is the run object of the --json report.
type runBlock struct {
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Message  string `json:"message"`
}

func parseReport(t *testing.T, stdout, stderr string) runBlock {
	t.Helper()
	var rep struct {
		FlowID string   `json:"flow_id"`
		Run    runBlock `json:"run"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Run.Status == "" {
		t.Fatalf("--json printed no report (%v):\nstdout: %q\nstderr:\n%s", err, stdout, tail(stderr, 2000))
	}
	return rep.Run
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// taskStates is the state of every recorded task of the flow.
func (r *scaleRepo) taskStates(flowID string) map[string]string {
	r.t.Helper()
	out, err := r.cmd("query", "flow", flowID).Output()
	if err != nil {
		r.t.Fatalf("query flow: %v", err)
	}
	var q struct {
		ParallelTasks map[string]struct {
			State string `json:"state"`
		} `json:"parallel_tasks"`
	}
	if err := json.Unmarshal(out, &q); err != nil {
		r.t.Fatalf("query flow: %v", err)
	}
	states := map[string]string{}
	for id, t := range q.ParallelTasks {
		states[id] = t.State
	}
	return states
}

// TestFanOutCollidingTaskIDs: task ids that clean to the same text ("x"
// and "-x", "a/b" and "a b") each get their own branch and worktree, so
// every task's work is merged — one at a time (max_concurrent 1: the second
// task no longer deletes the first one's branch) and all at once (no task
// removes another's worktree).
func TestFanOutCollidingTaskIDs(t *testing.T) {
	ids := []string{"x", "-x", "a/b", "a b"}
	for _, mc := range []int{1, 4} {
		t.Run(fmt.Sprintf("max_concurrent_%d", mc), func(t *testing.T) {
			r := newScaleRepo(t, ids, fmt.Sprintf(`        max_concurrent: %d
        run: |
          case "$STRATUM_TASK_ID" in
            x) f=x.txt ;; -x) f=minus-x.txt ;; a/b) f=a-slash-b.txt ;; "a b") f=a-space-b.txt ;;
            *) echo "unexpected task $STRATUM_TASK_ID" >&2; exit 3 ;;
          esac
          sleep 0.2
          echo "$STRATUM_TASK_ID" > "$f"
          echo '{}'
`, mc), true)
			code, run, _, stderr := r.runJSON("fan.stratum.yaml")
			if code != 0 || run.Status != "complete" {
				t.Fatalf("run: exit %d, %+v\n%s", code, run, stderr)
			}
			for id, f := range map[string]string{"x": "x.txt", "-x": "minus-x.txt", "a/b": "a-slash-b.txt", "a b": "a-space-b.txt"} {
				b, err := os.ReadFile(filepath.Join(r.dir, f))
				if err != nil || strings.TrimSpace(string(b)) != id {
					t.Errorf("task %q: %s after the merge: %q %v\n%s", id, f, b, err, stderr)
				}
			}
			if merges := r.git("log", "--merges", "--format=%s"); strings.Count(merges, "stratum: merge task") != len(ids) {
				t.Errorf("merges:\n%s", merges)
			}
			if br := r.git("branch", "--list", "stratum/*"); br != "" {
				t.Errorf("task branches left: %s", br)
			}
			if wts := r.git("worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
				t.Errorf("worktrees left:\n%s", wts)
			}
		})
	}
}

func manyIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%05d", i)
	}
	return ids
}

// quickFan is a fan-out of instant tasks.
const quickFan = `        max_concurrent: 8
        isolation: none
        run: |
          echo '{}'
`

// TestFanOutQuickTasksNoSelfConflict: 50 instant tasks at max_concurrent 8
// record their states concurrently; the run's own writes never conflict
// with each other ("changed by another writer"), on bbolt and on etcd,
// run after run.
func TestFanOutQuickTasksNoSelfConflict(t *testing.T) {
	check := func(t *testing.T, r *scaleRepo, runs int) {
		t.Helper()
		for i := 0; i < runs; i++ {
			code, run, stdout, stderr := r.runJSON("fan.stratum.yaml")
			if code != 0 || run.Status != "complete" {
				t.Fatalf("run %d: exit %d, %+v\n%s", i+1, code, run, tail(stderr, 3000))
			}
			var rep struct {
				FlowID string `json:"flow_id"`
			}
			_ = json.Unmarshal([]byte(stdout), &rep)
			states := r.taskStates(rep.FlowID)
			n := 0
			for _, s := range states {
				if s == "complete" {
					n++
				}
			}
			if n != 50 {
				t.Fatalf("run %d: %d of 50 tasks recorded complete: %v", i+1, n, states)
			}
		}
	}
	t.Run("bbolt", func(t *testing.T) {
		check(t, newScaleRepo(t, manyIDs(50), quickFan, false), 5)
	})
	t.Run("etcd", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts an etcd member")
		}
		c := etcdtest.Start(t, 1)
		check(t, newScaleRepo(t, manyIDs(50), quickFan, false, "STRATUM_STORE="+c.URL("fanout")), 3)
	})
}

// lines streams a process's stderr lines, each stamped with its arrival.
type lines struct {
	ch   chan stampedLine
	seen bytes.Buffer
}

type stampedLine struct {
	text string
	at   time.Time
}

func streamLines(t *testing.T, c *exec.Cmd) *lines {
	t.Helper()
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	l := &lines{ch: make(chan stampedLine, 1024)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l.ch <- stampedLine{sc.Text(), time.Now()}
		}
		close(l.ch)
	}()
	return l
}

// until reads lines until one matches re (ok false when the stream ended
// or the deadline passed first).
func (l *lines) until(re *regexp.Regexp, deadline time.Time) (stampedLine, bool) {
	for {
		select {
		case ln, ok := <-l.ch:
			if !ok {
				return stampedLine{}, false
			}
			l.seen.WriteString(ln.text + "\n")
			if re.MatchString(ln.text) {
				return ln, true
			}
		case <-time.After(time.Until(deadline)):
			return stampedLine{}, false
		}
	}
}

// drain reads the rest of the stream.
func (l *lines) drain() {
	for ln := range l.ch {
		l.seen.WriteString(ln.text + "\n")
	}
}

// TestFanOutTenThousandTasks: a fan-out of 10,000 instant tasks starts its
// first task within seconds (the pending tasks are recorded in one write,
// not one whole-flow rewrite each) and completes; the figures are logged.
func TestFanOutTenThousandTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 task processes")
	}
	r := newScaleRepo(t, manyIDs(10000), quickFan, false)
	c := r.cmd("run", "--json", "fan.stratum.yaml")
	var stdout bytes.Buffer
	c.Stdout = &stdout
	l := streamLines(t, c)
	start := time.Now()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(10*time.Minute, func() { _ = c.Process.Kill() })
	defer kill.Stop()
	fan, ok := l.until(regexp.MustCompile(`fan — 10000 tasks`), start.Add(60*time.Second))
	if !ok {
		_ = c.Process.Kill()
		t.Fatalf("the fan-out did not begin:\n%s", tail(l.seen.String(), 2000))
	}
	first, ok := l.until(regexp.MustCompile(`fan task t\d+ running`), fan.at.Add(15*time.Second))
	if !ok {
		_ = c.Process.Kill()
		t.Fatalf("no task started within 15 s of the fan-out's start:\n%s", tail(l.seen.String(), 2000))
	}
	l.drain()
	err := c.Wait()
	total := time.Since(start)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, tail(l.seen.String(), 3000))
	}
	if run := parseReport(t, stdout.String(), l.seen.String()); run.Status != "complete" {
		t.Fatalf("run: %+v", run)
	}
	if n := len(regexp.MustCompile(`fan task t\d+ complete`).FindAllStringIndex(l.seen.String(), -1)); n != 10000 {
		t.Errorf("%d tasks reported complete, want 10000", n)
	}
	t.Logf("10,000 tasks, max_concurrent 8: first task started %s after the fan-out began (%s after the process started); whole run %s",
		first.at.Sub(fan.at).Round(time.Millisecond), first.at.Sub(start).Round(time.Millisecond), total.Round(time.Millisecond))
}

// TestFanOutInterruptEveryPhase sends SIGINT to `stratum run --json` while
// a 3,000-task fan-out records its pending tasks, then (resumed) while it
// dispatches: each time the run exits 130 promptly and prints its report;
// a last resume finishes every task.
func TestFanOutInterruptEveryPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of task processes")
	}
	r := newScaleRepo(t, manyIDs(3000), quickFan, false)
	idRe := regexp.MustCompile(`(?:running|resuming) flow main \(([0-9a-f-]+)\)`)
	interrupt := func(args []string, when *regexp.Regexp) string {
		t.Helper()
		c := r.cmd(append([]string{"run", "--json"}, args...)...)
		var stdout bytes.Buffer
		c.Stdout = &stdout
		l := streamLines(t, c)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		kill := time.AfterFunc(5*time.Minute, func() { _ = c.Process.Kill() })
		defer kill.Stop()
		id, ok := l.until(idRe, time.Now().Add(60*time.Second))
		if !ok {
			t.Fatalf("no flow id:\n%s", l.seen.String())
		}
		if _, ok := l.until(when, time.Now().Add(60*time.Second)); !ok {
			t.Fatalf("never saw %s:\n%s", when, tail(l.seen.String(), 2000))
		}
		if err := c.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		exited := make(chan error, 1)
		go func() { l.drain(); exited <- c.Wait() }()
		var err error
		select {
		case err = <-exited:
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			<-exited
			t.Fatalf("still running 10 s after SIGINT:\n%s", tail(l.seen.String(), 2000))
		}
		took := time.Since(sent)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("interrupted run: %v, want exit 130\n%s", err, tail(l.seen.String(), 2000))
		}
		if run := parseReport(t, stdout.String(), l.seen.String()); run.Status != "interrupted" || run.ExitCode != 130 {
			t.Fatalf("report of the interrupted run: %+v", run)
		}
		t.Logf("exited %s after SIGINT (%s)", took.Round(time.Millisecond), when)
		return idRe.FindStringSubmatch(id.text)[1]
	}
	// While the pending tasks are recorded: right as the fan-out begins.
	flowID := interrupt([]string{"fan.stratum.yaml"}, regexp.MustCompile(`fan — 3000 tasks`))
	// While tasks are dispatched.
	if again := interrupt([]string{"--resume", flowID}, regexp.MustCompile(`fan task t\d+ complete`)); again != flowID {
		t.Fatalf("resumed %s, want %s", again, flowID)
	}
	code, run, _, stderr := r.runJSON("--resume", flowID)
	if code != 0 || run.Status != "complete" {
		t.Fatalf("last resume: exit %d, %+v\n%s", code, run, tail(stderr, 2000))
	}
	states := r.taskStates(flowID)
	for _, id := range manyIDs(3000) {
		if states[id] != "complete" {
			t.Fatalf("task %s recorded %q after the resume", id, states[id])
		}
	}
}

// TestFanOutJSONOnFailure: a fan-out whose tasks fail ends the run with
// exit 1 and the --json report on stdout.
func TestFanOutJSONOnFailure(t *testing.T) {
	r := newScaleRepo(t, manyIDs(20), `        max_concurrent: 8
        isolation: none
        retries: 1
        run: |
          [ "$STRATUM_TASK_ID" = t00007 ] && { echo boom >&2; exit 1; }
          echo '{}'
`, false)
	code, run, _, stderr := r.runJSON("fan.stratum.yaml")
	if code != 1 || run.Status != "failed" || run.ExitCode != 1 {
		t.Fatalf("run: exit %d, %+v\n%s", code, run, tail(stderr, 2000))
	}
}
