package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fanRepo is a git repository holding one fan-out spec whose four tasks
// each start a child process (sleep, in the task's process group) and
// record both pids under pids/, then wait for it.
type fanRepo struct {
	t                       *testing.T
	repo, home, pids, count string
	env                     []string
}

func newFanRepo(t *testing.T, budget string) *fanRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	outside := t.TempDir()
	r := &fanRepo{t: t, repo: t.TempDir(), home: filepath.Join(outside, "home"),
		pids: filepath.Join(outside, "pids"), count: filepath.Join(outside, "counts")}
	for _, d := range []string{r.pids, r.count} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.env = append(os.Environ(), "STRATUM_HOME="+r.home, "PIDS="+r.pids, "COUNTS="+r.count,
		"SLOW="+filepath.Join(outside, "slow"), "NO_COLOR=1", "GITHUB_ACTIONS=")
	// Tasks are slow (a 30 s child) while $SLOW exists, instant otherwise.
	if err := os.WriteFile(filepath.Join(outside, "slow"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `version: "0.3"
contracts:
  TaskGraph:
    tasks: {type: array}
flows:
  main:
    input: {}
` + budget + `    steps:
      - id: plan
        type: decompose
        intent: "split"
        output_contract: TaskGraph
        run: |
          echo '{"tasks": [{"id": "a"}, {"id": "b"}, {"id": "c"}, {"id": "d"}]}'
      - id: fan
        type: parallel_dispatch
        source: "$.steps.plan.output.tasks"
        intent_template: "do {id}"
        max_concurrent: 4
        depends_on: [plan]
        run: |
          echo run >> "$COUNTS/$STRATUM_TASK_ID"
          if [ -f "$SLOW" ]; then
            sleep 30 &
            echo "$$ $!" > "$PIDS/$STRATUM_TASK_ID.tmp"
            mv "$PIDS/$STRATUM_TASK_ID.tmp" "$PIDS/$STRATUM_TASK_ID"
            wait
          fi
          echo "$STRATUM_TASK_ID" > "$STRATUM_TASK_ID.txt"
          echo '{}'
`
	if err := os.WriteFile(filepath.Join(r.repo, "fan.stratum.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("init", "-q")
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "spec")
	return r
}

func (r *fanRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir = r.repo
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *fanRepo) cmd(args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(binDir, "stratum"), args...)
	c.Dir, c.Env = r.repo, r.env
	return c
}

// taskPids waits until every task recorded its pids (shell and child).
func (r *fanRepo) taskPids(ids ...string) []int {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var pids []int
	for _, id := range ids {
		for {
			b, err := os.ReadFile(filepath.Join(r.pids, id))
			if err == nil {
				for _, f := range strings.Fields(string(b)) {
					n, err := strconv.Atoi(f)
					if err != nil {
						r.t.Fatalf("pid file %s: %q", id, b)
					}
					pids = append(pids, n)
				}
				break
			}
			if time.Now().After(deadline) {
				r.t.Fatalf("task %s never started", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return pids
}

// alive: the process exists and is not a zombie waiting for its reaper.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return !os.IsNotExist(err)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// noSurvivor fails when any of pids is still alive shortly after.
func (r *fanRepo) noSurvivor(pids []int) {
	r.t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for _, p := range pids {
		for alive(p) {
			if time.Now().After(deadline) {
				r.t.Errorf("process %d of a cancelled task survived the run", p)
				_ = syscall.Kill(p, syscall.SIGKILL)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// clean: no task worktree or branch left, nothing uncommitted.
func (r *fanRepo) clean() {
	r.t.Helper()
	if br := r.git("branch", "--list", "stratum/*"); br != "" {
		r.t.Errorf("task branches left: %s", br)
	}
	if wts := r.git("worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
		r.t.Errorf("worktrees left:\n%s", wts)
	}
	if dirty := r.git("status", "--porcelain"); dirty != "" {
		r.t.Errorf("repository left dirty: %s", dirty)
	}
}

func (r *fanRepo) runs(id string) int {
	b, _ := os.ReadFile(filepath.Join(r.count, id))
	return strings.Count(string(b), "run")
}

// TestFanOutSIGINTResume sends SIGINT to a real `stratum run` while all four
// tasks run: every task's process group dies (the shells and their sleep
// children), the run exits 130 with the flow resumable and the repository
// untouched, and `stratum run --resume` runs the four tasks again and
// merges them.
func TestFanOutSIGINTResume(t *testing.T) {
	r := newFanRepo(t, "")
	run := r.cmd("run", "fan.stratum.yaml")
	stderr, err := run.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(30*time.Second, func() { _ = run.Process.Kill() })
	defer kill.Stop()
	idRe := regexp.MustCompile(`running flow main \(([0-9a-f-]+)\)`)
	flowID := ""
	var seen bytes.Buffer
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for flowID == "" {
		line, ok := <-lines
		if !ok {
			t.Fatalf("no flow id:\n%s", seen.String())
		}
		seen.WriteString(line + "\n")
		if m := idRe.FindStringSubmatch(line); m != nil {
			flowID = m[1]
		}
	}
	pids := r.taskPids("a", "b", "c", "d")
	if err := run.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for line := range lines {
		seen.WriteString(line + "\n")
	}
	err = run.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("interrupted run: %v, want exit 130\n%s", err, seen.String())
	}
	if !strings.Contains(seen.String(), "--resume "+flowID) {
		t.Errorf("the interrupted run does not print how to resume:\n%s", seen.String())
	}
	r.noSurvivor(pids)
	r.clean()
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := os.Stat(filepath.Join(r.repo, id+".txt")); err == nil {
			t.Errorf("task %s merged by the interrupted run", id)
		}
	}

	if err := os.Remove(filepath.Join(filepath.Dir(r.pids), "slow")); err != nil {
		t.Fatal(err)
	}
	out, err := r.cmd("run", "--resume", flowID).CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		if got := r.runs(id); got != 2 {
			t.Errorf("task %s ran %d times, want 2 (interrupted, then resumed)", id, got)
		}
		if _, err := os.Stat(filepath.Join(r.repo, id+".txt")); err != nil {
			t.Errorf("task %s not merged after the resume: %v\n%s", id, err, out)
		}
	}
	r.clean()
}

// TestFanOutBudgetStopsTasks gives the flow budget.ms 4000 against four
// tasks of 30 s each: the shared budget runs out while all four run (4 s
// leaves a loaded machine time to create the four worktrees; 400 ms did
// not), their process groups die, the run ends budget_exhausted (exit 5)
// well before the tasks would have, nothing merged and nothing left
// behind; the tasks are recorded cancelled with the reason.
func TestFanOutBudgetStopsTasks(t *testing.T) {
	r := newFanRepo(t, "    budget: {ms: 4000}\n")
	start := time.Now()
	run := r.cmd("run", "--json", "fan.stratum.yaml")
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(30*time.Second, func() { _ = run.Process.Kill() })
	defer kill.Stop()
	pids := r.taskPids("a", "b", "c", "d")
	err := run.Wait()
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 {
		t.Fatalf("run: %v, want exit 5 (budget exhausted)\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if took > 20*time.Second {
		t.Errorf("the run took %s: the budget did not stop the tasks", took)
	}
	r.noSurvivor(pids)
	r.clean()
	var rep struct {
		Status string `json:"status"`
		FlowID string `json:"flow_id"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.Status != "budget_exhausted" {
		t.Fatalf("report %v: %s", err, stdout.String())
	}
	out, err := r.cmd("query", "flow", rep.FlowID).Output()
	if err != nil {
		t.Fatalf("query flow: %v", err)
	}
	var q struct {
		ParallelTasks map[string]struct {
			State string  `json:"state"`
			Error *string `json:"error"`
		} `json:"parallel_tasks"`
	}
	if err := json.Unmarshal(out, &q); err != nil {
		t.Fatalf("query flow: %v\n%s", err, out)
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		tk, ok := q.ParallelTasks[id]
		if !ok || tk.State != "cancelled" || tk.Error == nil || !strings.Contains(*tk.Error, "budget") {
			t.Errorf("task %s recorded as %+v, want cancelled for the budget\n%s", id, tk, out)
		}
		if _, err := os.Stat(filepath.Join(r.repo, id+".txt")); err == nil {
			t.Errorf("task %s merged", id)
		}
	}
}
