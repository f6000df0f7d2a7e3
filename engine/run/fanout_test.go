package run

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/internal/fanout"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// gitEnv is a runner env whose directory is a git repository.
func gitEnv(t testing.TB) *env {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	e := newEnv(t)
	e.git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(e.dir, "README"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) git(args ...string) string {
	e.t.Helper()
	out, err := git(context.Background(), e.dir, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// commit commits everything in the repository (the spec included).
func (e *env) commit() {
	e.t.Helper()
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "spec")
}

// fanSpec is a decompose step printing graph and a fan-out over it whose
// tasks run cmd.
func fanSpec(graph, fanout string) string {
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
        run: |
          cat <<'JSON'
          ` + graph + `
          JSON
      - id: fan
        type: parallel_dispatch
        source: "$.steps.plan.output.tasks"
        intent_template: "Do {id}: {description}"
        depends_on: [plan]
` + fanout
}

func TestFanOutWorktreesMergeInOrder(t *testing.T) {
	e := gitEnv(t)
	sp := e.spec(fanSpec(`{"tasks": [{"id": "a", "description": "A", "files_owned": ["a.txt"]}, {"id": "b", "description": "B", "files_owned": ["b.txt"], "depends_on": ["a"]}, {"id": "c", "description": "C", "files_owned": ["c.txt"]}]}`, `        max_concurrent: 2
        run: |
          set -e
          case "$PWD" in "$STRATUM_WORKTREE"*) ;; *) echo "cwd $PWD not in $STRATUM_WORKTREE" >&2; exit 3;; esac
          cat > stdin.json.tmp
          grep -q '"task":{' stdin.json.tmp
          rm stdin.json.tmp
          echo "$STRATUM_TASK_ID" > "$STRATUM_TASK_ID.txt"
          printf '{"id": "%s"}\n' "$STRATUM_TASK_ID"
`))
	e.commit()
	head := e.git("rev-parse", "HEAD")
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndComplete, 0)
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if b, err := os.ReadFile(filepath.Join(e.dir, f)); err != nil || strings.TrimSpace(string(b)) != strings.TrimSuffix(f, ".txt") {
			t.Fatalf("%s after the merge: %q %v", f, b, err)
		}
	}
	// Merged in task order, one merge commit per task, on top of the start.
	log := e.git("log", "--merges", "--format=%s", head+"..HEAD")
	if want := "stratum: merge task c of step fan\nstratum: merge task b of step fan\nstratum: merge task a of step fan"; log != want {
		t.Fatalf("merges:\n%s", log)
	}
	if br := e.git("branch", "--list", "stratum/*"); br != "" {
		t.Fatalf("task branches left: %s", br)
	}
	if wts := e.git("worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
		t.Fatalf("worktrees left:\n%s", wts)
	}
	if dirty := e.git("status", "--porcelain"); dirty != "" {
		t.Fatalf("repository left dirty: %s", dirty)
	}
	// Every task recorded complete, with its branch, in the flow.
	st := e.state(o.FlowID)
	if len(st.ParallelTasks) != 3 {
		t.Fatalf("parallel_tasks: %v", st.ParallelTasks)
	}
	out := st.StepOutputs["fan"].(map[string]any)
	if out["outcome"] != "complete" || len(out["completed"].([]any)) != 3 {
		t.Fatalf("aggregate: %v", out)
	}
}

func TestFanOutRequire(t *testing.T) {
	// Task "bad" always fails; require decides.
	graph := `{"tasks": [{"id": "a"}, {"id": "bad"}, {"id": "c"}]}`
	cmd := `        isolation: none
        retries: 1
        run: |
          [ "$STRATUM_TASK_ID" = bad ] && { echo "boom" >&2; exit 1; }
          echo "$STRATUM_TASK_ID" >> ran.log
          echo '{"ok": true}'
`
	for _, tc := range []struct {
		require string
		status  string
	}{{"all", EndFailed}, {"any", EndComplete}, {"2", EndComplete}, {"3", EndFailed}} {
		t.Run(tc.require, func(t *testing.T) {
			e := newEnv(t)
			sp := e.spec(fanSpec(graph, "        require: \""+tc.require+"\"\n        max_concurrent: 1\n"+cmd))
			o := e.start(sp, "main", nil)
			code := 0
			if tc.status == EndFailed {
				code = 1
			}
			wantStatus(t, o, tc.status, code)
			if tc.status == EndFailed {
				msg := strings.Join(o.FinalErr.(*engine.Error).Violations, "\n")
				if !strings.Contains(msg, "require='"+tc.require+"' not satisfied") || !strings.Contains(msg, "task 'bad': command exited with status 1; stderr: boom") {
					t.Fatalf("violations:\n%s", msg)
				}
			}
		})
	}
}

func TestFanOutRequireAllCancelsTheRest(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(fanSpec(`{"tasks": [{"id": "bad"}, {"id": "b", "depends_on": ["bad"]}, {"id": "c"}]}`, `        isolation: none
        max_concurrent: 1
        retries: 1
        run: |
          [ "$STRATUM_TASK_ID" = bad ] && exit 1
          echo "$STRATUM_TASK_ID" >> ran.log
          echo '{}'
`))
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndFailed, 1)
	if n := e.count("ran.log"); n != 0 {
		t.Fatalf("%d tasks ran after require all became unsatisfiable", n)
	}
	tasks := e.state(o.FlowID).TasksOf("fan")
	_ = tasks // the step's dispatch ended; entries are of the failed dispatch
	msg := strings.Join(o.FinalErr.(*engine.Error).Violations, "\n")
	if !strings.Contains(msg, "did not run: its dependency 'bad' failed") && !strings.Contains(msg, "can no longer be met") {
		t.Fatalf("violations:\n%s", msg)
	}
}

func TestFanOutMergeConflictMergesNothing(t *testing.T) {
	e := gitEnv(t)
	// a creates the file d, b the directory d/: the second merge conflicts.
	sp := e.spec(fanSpec(`{"tasks": [{"id": "a"}, {"id": "b"}]}`, `        retries: 1
        run: |
          if [ "$STRATUM_TASK_ID" = a ]; then echo file > d; else mkdir -p d && echo x > d/x; fi
          echo '{}'
`))
	e.commit()
	head := e.git("rev-parse", "HEAD")
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndFailed, 1)
	msg := strings.Join(o.FinalErr.(*engine.Error).Violations, "\n")
	if !strings.Contains(msg, "merge conflict: merge_status='conflict'") || !strings.Contains(msg, "merge conflict: task 'b' (branch stratum/") || !strings.Contains(msg, "nothing was merged") {
		t.Fatalf("violations:\n%s", msg)
	}
	if now := e.git("rev-parse", "HEAD"); now != head {
		t.Fatalf("HEAD moved from %s to %s: half-merged", head, now)
	}
	if dirty := e.git("status", "--porcelain"); dirty != "" {
		t.Fatalf("repository left dirty: %s", dirty)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "d")); err == nil {
		t.Fatal("d was merged")
	}
}

func TestFanOutNoFileConflicts(t *testing.T) {
	e := gitEnv(t)
	sp := e.spec(fanSpec(`{"tasks": [{"id": "a"}, {"id": "b"}]}`, `        retries: 1
        run: |
          echo "$STRATUM_TASK_ID" > shared.txt
          echo '{}'
`))
	e.commit()
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndFailed, 1)
	msg := strings.Join(o.FinalErr.(*engine.Error).Violations, "\n")
	if !strings.Contains(msg, "no_file_conflicts: tasks 'a' and 'b' both changed shared.txt") {
		t.Fatalf("violations:\n%s", msg)
	}
}

func TestFanOutFilesOwned(t *testing.T) {
	e := gitEnv(t)
	sp := e.spec(fanSpec(`{"tasks": [{"id": "a", "files_owned": ["src/"]}]}`, `        retries: 1
        run: |
          mkdir -p src && echo ok > src/a.go && echo oops > outside.txt
          echo '{}'
`))
	e.commit()
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndFailed, 1)
	msg := strings.Join(o.FinalErr.(*engine.Error).Violations, "\n")
	if !strings.Contains(msg, "task 'a' wrote outside its files_owned: outside.txt (files_owned: src/)") {
		t.Fatalf("violations:\n%s", msg)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "outside.txt")); err == nil {
		t.Fatal("the task's changes were merged")
	}
}

func TestFanOutBadInput(t *testing.T) {
	t.Run("source not a task list", func(t *testing.T) {
		e := newEnv(t)
		sp := e.spec(`version: "0.3"
flows:
  main:
    input: {what: {type: string}}
    steps:
      - id: fan
        type: parallel_dispatch
        source: "$.input.what"
        intent_template: "x"
        isolation: none
        run: "echo {}"
`)
		o := e.start(sp, "main", map[string]any{"what": "hello"})
		wantStatus(t, o, EndError, 1)
		for _, want := range []string{"step 'fan': source $.input.what resolved to something that is not a task list", `a string ("hello")`, "stratum run --resume"} {
			if !strings.Contains(o.Message, want) {
				t.Fatalf("message lacks %q: %s", want, o.Message)
			}
		}
	})
	t.Run("dirty repository", func(t *testing.T) {
		e := gitEnv(t)
		sp := e.spec(fanSpec(`{"tasks": [{"id": "a"}]}`, "        run: \"echo {}\"\n"))
		e.commit()
		if err := os.WriteFile(filepath.Join(e.dir, "wip.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		o := e.start(sp, "main", nil)
		wantStatus(t, o, EndError, 1)
		if !strings.Contains(o.Message, "step 'fan': repository") || !strings.Contains(o.Message, "has uncommitted changes (wip.txt); commit or stash them") {
			t.Fatal(o.Message)
		}
	})
	t.Run("not a repository", func(t *testing.T) {
		e := newEnv(t)
		sp := e.spec(fanSpec(`{"tasks": [{"id": "a"}]}`, "        run: \"echo {}\"\n"))
		o := e.start(sp, "main", nil)
		wantStatus(t, o, EndError, 1)
		if !strings.Contains(o.Message, "isolation: worktree needs the spec's directory") || !strings.Contains(o.Message, "set isolation: none") {
			t.Fatal(o.Message)
		}
	})
	t.Run("git missing", func(t *testing.T) {
		e := newEnv(t)
		sh, err := exec.LookPath("sh")
		if err != nil {
			t.Skip("no sh")
		}
		cat, _ := exec.LookPath("cat")
		bin := t.TempDir()
		for _, p := range []string{sh, cat} {
			if err := os.Symlink(p, filepath.Join(bin, filepath.Base(p))); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("PATH", bin)
		sp := e.spec(fanSpec(`{"tasks": [{"id": "a"}]}`, "        run: \"echo {}\"\n"))
		o := e.start(sp, "main", nil)
		wantStatus(t, o, EndError, 1)
		if !strings.Contains(o.Message, "step 'fan': isolation: worktree needs git, which is not on PATH; install git, or set isolation: none") {
			t.Fatal(o.Message)
		}
	})
}

func TestDecomposeGraphIsCheckedAndFedBack(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.3"
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
          if [ "$STRATUM_ATTEMPT" = 1 ]; then
            echo '{"tasks": [{"id": "a", "depends_on": ["b"]}, {"id": "b", "depends_on": ["a"]}, {"id": "b"}, {"id": "c", "depends_on": ["zz"]}]}'
          else
            printf '%s' "$STRATUM_VIOLATIONS" > fed.json
            echo '{"tasks": [{"id": "a"}]}'
          fi
`)
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndComplete, 0)
	b, err := os.ReadFile(filepath.Join(e.dir, "fed.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fed []string
	if err := json.Unmarshal(b, &fed); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(fed, "\n")
	for _, want := range []string{"task graph: duplicate task id 'b'", "task graph: task 'c' depends on unknown task 'zz'"} {
		if !strings.Contains(got, want) {
			t.Fatalf("fed back:\n%s\nwant %q", got, want)
		}
	}
	if vs := fanout.GraphViolations(map[string]any{"tasks": []any{
		map[string]any{"id": "a", "depends_on": []any{"b"}}, map[string]any{"id": "b", "depends_on": []any{"a"}}}}); len(vs) != 1 || vs[0] != "task graph: dependency cycle a → b → a" {
		t.Fatalf("cycle: %v", vs)
	}
}

func TestFanOutWithFakeAgentCLI(t *testing.T) {
	e := gitEnv(t)
	bin := t.TempDir()
	agent := filepath.Join(bin, "fake-agent")
	// The fake agent saves its prompt, does its task in its working
	// directory and answers with a JSON block.
	script := `#!/bin/sh
cat > "$STRATUM_WORKTREE/../$STRATUM_TASK_ID.prompt"
echo "done by agent" > "$STRATUM_TASK_ID.md"
printf 'I did it.\n` + "```json" + `\n{"task": "%s"}\n` + "```" + `\n' "$STRATUM_TASK_ID"
`
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	sp := e.spec(fanSpec(`{"tasks": [{"id": "x", "description": "write x", "files_owned": ["x.md"]}, {"id": "y", "description": "write y", "files_owned": ["y.md"]}]}`, "        agent: fake\n"))
	e.commit()
	wtRoot := t.TempDir()
	o := e.start(sp, "main", nil, func(o *Options) {
		o.Agent = &AgentExecutor{Agents: map[string]config.Command{"fake": {Argv: []string{"fake-agent"}}}}
		o.WorktreeRoot = wtRoot
	})
	wantStatus(t, o, EndComplete, 0)
	for _, id := range []string{"x", "y"} {
		if _, err := os.Stat(filepath.Join(e.dir, id+".md")); err != nil {
			t.Fatalf("%s.md not merged: %v", id, err)
		}
		matches, _ := filepath.Glob(filepath.Join(wtRoot, o.FlowID, "fan", id+".prompt"))
		if len(matches) != 1 {
			t.Fatalf("no prompt saved for %s", id)
		}
		p, _ := os.ReadFile(matches[0])
		if !strings.Contains(string(p), "Do "+id+": write "+id) || !strings.Contains(string(p), `"files_owned": [`) {
			t.Fatalf("prompt of %s:\n%s", id, p)
		}
	}
}

func TestFanOutKeepWorktrees(t *testing.T) {
	e := gitEnv(t)
	sp := e.spec(fanSpec(`{"tasks": [{"id": "a"}]}`, "        run: |\n          echo a > a.txt; echo '{}'\n"))
	e.commit()
	var log strings.Builder
	o := e.start(sp, "main", nil, func(o *Options) { o.KeepWorktrees = true; o.Log = &log })
	wantStatus(t, o, EndComplete, 0)
	wt := filepath.Join(os.Getenv("STRATUM_HOME"), "worktrees", o.FlowID, "fan", "a")
	if !strings.Contains(log.String(), "kept worktree "+wt+" (branch stratum/") {
		t.Fatalf("log: %s", log.String())
	}
	if _, err := os.Stat(filepath.Join(wt, "a.txt")); err != nil {
		t.Fatal(err)
	}
}

// failingStore fails every write once broken is set.
type failingStore struct {
	*enginetest.Store
	broken atomic.Bool
}

func (s *failingStore) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	if s.broken.Load() {
		return errors.New("disk full")
	}
	return s.Store.Update(ctx, fn)
}

// TestFanOutStoreFailureEndsWithAReport: a store failure while tasks run
// ends the run with an outcome (EndError, the flow resumable), so
// `stratum run --json` prints its report, instead of an error with nothing
// on stdout.
func TestFanOutStoreFailureEndsWithAReport(t *testing.T) {
	e := newEnv(t)
	fs := &failingStore{Store: e.store}
	e.svc = &engine.Service{ParseSpec: exprlang.ParseSpec, Store: fs}
	sp := e.spec(fanSpec(`{"tasks": [{"id": "a"}, {"id": "b"}, {"id": "c"}]}`, "        isolation: none\n        max_concurrent: 1\n        run: \"true\"\n"))
	graph := map[string]any{"tasks": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}, map[string]any{"id": "c"}}}
	ex := enginetest.ExecutorFunc(func(_ context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
		if req.Step.ID == "plan" {
			return engine.StepOutcome{Output: graph}, nil
		}
		fs.broken.Store(true)
		return engine.StepOutcome{Output: map[string]any{}}, nil
	})
	o, err := e.runner(func(o *Options) { o.Command = ex }).Start(context.Background(), sp, "main", nil)
	if err != nil {
		t.Fatalf("the store failure was returned as an error, not an outcome: %v", err)
	}
	wantStatus(t, o, EndError, ExitFailed)
	if !strings.Contains(o.Message, "disk full") || !strings.Contains(o.Message, "stratum run --resume "+o.FlowID) {
		t.Fatalf("message: %s", o.Message)
	}
	fs.broken.Store(false)
	rep, err := Report(context.Background(), e.svc, o)
	if err != nil {
		t.Fatal(err)
	}
	if run := rep["run"].(*RunBlock); run.Status != EndError {
		t.Fatalf("report: %+v", run)
	}
}

// TestFanOutTaskLineEscapesTheID: a task id's newline (the decompose step's
// text) reaches the progress line escaped, never raw.
func TestFanOutTaskLineEscapesTheID(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(fanSpec(`{"tasks": [{"id": "a\nrm -rf /"}]}`, "        isolation: none\n        run: \"echo {}\"\n"))
	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndComplete, 0)
	log := e.log.String()
	if strings.Contains(log, "\nrm -rf /") || !strings.Contains(log, `fan task a\x0arm -rf / complete`) {
		t.Fatalf("progress:\n%s", log)
	}
}
