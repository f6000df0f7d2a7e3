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

// TestPipelineKillResume kills `stratum run` (kill -9) in the middle of a
// worktree pipeline — item 0 through its three stages, item 1 in its
// second — and resumes it: no stage that had completed runs again, the
// interrupted one does, each stage's worktree goes on from its item's
// previous stage, and both items' chains are merged.
func TestPipelineKillResume(t *testing.T) {
	stratum := filepath.Join(binDir, "stratum")
	repo, counts, gofile, env := pipelineRepo(t)
	run := exec.Command(stratum, "run", "pipe.stratum.yaml", "--input", `items=["a","b"]`)
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
	var seen bytes.Buffer
	sc := bufio.NewScanner(stderr)
	deadline := time.AfterFunc(30*time.Second, func() { _ = run.Process.Kill() })
	ready := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		seen.WriteString(line + "\n")
		if m := idRe.FindStringSubmatch(line); m != nil {
			flowID = m[1]
		}
		for _, id := range []string{"pipe::item0::stage2 complete", "pipe::item1::stage1 running"} {
			if strings.Contains(line, "pipe task "+id) {
				ready[id] = true
			}
		}
		if len(ready) == 2 {
			break
		}
	}
	deadline.Stop()
	if flowID == "" || len(ready) != 2 {
		t.Fatalf("the pipeline did not get going:\n%s", seen.String())
	}
	if err := run.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	resume := exec.Command(stratum, "run", "--resume", flowID)
	resume.Dir, resume.Env = repo, env
	out, err := resume.CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	for id, want := range map[string]int{
		"pipe::item0::stage0": 1, "pipe::item0::stage1": 1, "pipe::item0::stage2": 1,
		"pipe::item1::stage0": 1, "pipe::item1::stage1": 2, "pipe::item1::stage2": 1,
	} {
		b, _ := os.ReadFile(filepath.Join(counts, id))
		if got := strings.Count(string(b), "run"); got != want {
			t.Errorf("task %s ran %d times, want %d\n%s", id, got, want, out)
		}
	}
	for _, item := range []string{"item0", "item1"} {
		b, err := os.ReadFile(filepath.Join(repo, item+".txt"))
		if err != nil || string(b) != "stage0\nstage1\nstage2\n" {
			t.Errorf("%s.txt merged: %q %v\n%s", item, b, err, out)
		}
	}
}

// pipelineRepo is a git repository holding the pipeline spec of
// TestPipelineKillResume: its tasks count their runs in counts, and item
// 1's second stage waits for gofile.
func pipelineRepo(t *testing.T) (repo, counts, gofile string, env []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo = t.TempDir()
	outside := t.TempDir()
	home := filepath.Join(outside, "home")
	counts = filepath.Join(outside, "counts")
	gofile = filepath.Join(outside, "go")
	if err := os.MkdirAll(counts, 0o755); err != nil {
		t.Fatal(err)
	}
	env = append(os.Environ(), "STRATUM_HOME="+home, "COUNTS="+counts, "GO_FILE="+gofile, "NO_COLOR=1", "GITHUB_ACTIONS=")
	gitc := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	spec := `version: "0.3"
flows:
  main:
    input: {}
    steps:
      - id: pipe
        type: pipeline
        source: "$.input.items"
        max_concurrent: 4
        stages:
          - {intent_template: "s0"}
          - {intent_template: "s1"}
          - {intent_template: "s2"}
        run: |
          echo run >> "$COUNTS/$STRATUM_TASK_ID"
          item=${STRATUM_TASK_ID#pipe::}; item=${item%%::*}
          case "$STRATUM_TASK_ID" in
            pipe::item1::stage1) while [ ! -f "$GO_FILE" ]; do sleep 0.05; done ;;
          esac
          echo "${STRATUM_TASK_ID##*::}" >> "$item.txt"
          echo '{}'
`
	spec = strings.Replace(spec, "    input: {}", "    input: {items: {type: array}}", 1)
	if err := os.WriteFile(filepath.Join(repo, "pipe.stratum.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	gitc("init", "-q")
	gitc("add", "-A")
	gitc("commit", "-q", "-m", "spec")

	return repo, counts, gofile, env
}
