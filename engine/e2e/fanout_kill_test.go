package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFanOutKillResume kills `stratum run` (kill -9) in the middle of a
// worktree fan-out — two tasks completed, two still running — and resumes
// it: only the two unfinished tasks run again, and all four are merged.
func TestFanOutKillResume(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	stratum := filepath.Join(binDir, "stratum")
	repo, outside := t.TempDir(), t.TempDir()
	home := filepath.Join(outside, "home")
	counts := filepath.Join(outside, "counts")
	gofile := filepath.Join(outside, "go")
	if err := os.MkdirAll(counts, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "STRATUM_HOME="+home, "COUNTS="+counts, "GO_FILE="+gofile, "NO_COLOR=1", "GITHUB_ACTIONS=")
	gitc := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	spec := `version: "0.3"
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
          case "$STRATUM_TASK_ID" in
            c|d) while [ ! -f "$GO_FILE" ]; do sleep 0.05; done ;;
          esac
          echo "$STRATUM_TASK_ID" > "$STRATUM_TASK_ID.txt"
          echo '{}'
`
	if err := os.WriteFile(filepath.Join(repo, "fan.stratum.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	gitc("init", "-q")
	gitc("add", "-A")
	gitc("commit", "-q", "-m", "spec")

	run := exec.Command(stratum, "run", "fan.stratum.yaml")
	run.Dir, run.Env = repo, env
	stderr, err := run.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	idRe := regexp.MustCompile(`running flow main \(([0-9a-f-]+)\)`)
	flowID := ""
	done := map[string]bool{}
	var seen bytes.Buffer
	sc := bufio.NewScanner(stderr)
	deadline := time.AfterFunc(20*time.Second, func() { _ = run.Process.Kill() })
	for sc.Scan() {
		line := sc.Text()
		seen.WriteString(line + "\n")
		if m := idRe.FindStringSubmatch(line); m != nil {
			flowID = m[1]
		}
		for _, id := range []string{"a", "b"} {
			if strings.Contains(line, "fan task "+id+" complete") {
				done[id] = true
			}
		}
		if done["a"] && done["b"] {
			break
		}
	}
	deadline.Stop()
	if flowID == "" || !done["a"] || !done["b"] {
		t.Fatalf("the fan-out did not get going:\n%s", seen.String())
	}
	if err := run.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()

	// Let the orphaned tasks c and d of the killed run end too.
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	resume := exec.Command(stratum, "run", "--resume", flowID)
	resume.Dir, resume.Env = repo, env
	out, err := resume.CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	for id, want := range map[string]int{"a": 1, "b": 1, "c": 2, "d": 2} {
		b, _ := os.ReadFile(filepath.Join(counts, id))
		if got := strings.Count(string(b), "run"); got != want {
			t.Errorf("task %s ran %d times, want %d\n%s", id, got, want, out)
		}
		if _, err := os.Stat(filepath.Join(repo, id+".txt")); err != nil {
			t.Errorf("task %s not merged: %v", id, err)
		}
	}
}
