package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/fanout"
	"github.com/stratum-go/stratum/engine/internal/otlp"
	"github.com/stratum-go/stratum/specs"
)

// FanOut executes the tasks of one dispatch of a parallel_dispatch step:
// concurrently up to max_concurrent, a task starting once every task it
// depends on completed, each with the step's executor; under isolation:
// worktree each task runs in its own git worktree on its own branch, its
// changes committed there, checked against its files_owned, then the
// worktree removed (kept with --keep-worktrees). Every change of a task's
// state is recorded in the flow (Service.RecordParallelTask) as it
// happens, so a fan-out resumed after a crash re-runs only the tasks that
// had not completed. Once every task settled, the completed branches are
// merged in task order (merge: sequential_apply) — all of them or, on a
// conflict, none. The caller reports the outcome with
// Service.ParallelDoneDetailed: the state machine judges require, the
// merge and the step's checks.
//
// It is shared by `stratum run` and the MCP server's
// stratum_parallel_start.
type FanOut struct {
	Service *engine.Service
	// Report identifies the caller to the store (the runner's lease).
	Report engine.ReportOptions
	// Executor runs one task (the step's executor) and Kind names it.
	Executor engine.Executor
	Kind     string
	FlowID   string
	Spec     *specs.Spec
	Flow     *specs.Flow
	Step     *specs.Step
	// Tasks are the parsed source; Inputs the step's resolved inputs.
	Tasks  []fanout.Task
	Inputs map[string]any
	// Attempt is the step's attempt (1-based); Violations the previous
	// attempt's.
	Attempt    int
	Violations []string
	// Dir is the spec's directory (commands' working directory).
	Dir string
	// Prior are the tasks already recorded for this dispatch (a resume):
	// completed ones are not run again.
	Prior map[string]engine.ParallelTask
	// WorktreeRoot is where task worktrees go (default
	// $STRATUM_HOME/worktrees).
	WorktreeRoot string
	// KeepWorktrees leaves every task's worktree and branch in place and
	// prints their paths to Log.
	KeepWorktrees bool
	// Budget returns the envelope of the next task (nil: none); a non-empty
	// reason means the budget is spent.
	Budget func(ctx context.Context) (engine.BudgetView, string, error)
	// OnCall records one task's spend (nil: not recorded).
	OnCall func(ctx context.Context, c engine.CallRecord)
	// OnTask is told every state change of a task (nil: nobody).
	OnTask func(t engine.ParallelTask)
	// Log receives notes for the user (kept worktrees); nil: discarded.
	Log io.Writer

	state map[string]*engine.ParallelTask // owned by the scheduler
	// wtMu serialises `git worktree` commands: git's worktree bookkeeping
	// is not safe for concurrent adds and prunes.
	wtMu sync.Mutex
	root string // repository root (isolation: worktree)
	rel  string // the spec directory relative to root
}

// FanOutResult is how a fan-out ended.
type FanOutResult struct {
	// Tasks in source order.
	Tasks []engine.ParallelTask
	// MergeStatus is "clean" or "conflict"; Details explain failures (a
	// conflict, a file owned twice, why tasks failed).
	MergeStatus string
	Details     []string
	// Budget is set when the budget ran out: running tasks were cancelled
	// and the step is not reported.
	Budget string
	// Interrupted: the context was cancelled (Ctrl-C); running tasks were
	// killed, nothing reported, the flow stays resumable.
	Interrupted bool
}

// TaskResults are the tasks as stratum_parallel_done task results.
func (r *FanOutResult) TaskResults() []any {
	out := make([]any, len(r.Tasks))
	for i, t := range r.Tasks {
		out[i] = t.TaskResult()
	}
	return out
}

// FanOutError is a fan-out that cannot start (bad source, git missing, a
// dirty repository…): nothing ran and nothing was merged.
type FanOutError struct{ Msg string }

func (e *FanOutError) Error() string { return e.Msg }

func (f *FanOut) errorf(format string, args ...any) error {
	return &FanOutError{Msg: fmt.Sprintf("step '%s': ", f.Step.ID) + fmt.Sprintf(format, args...)}
}

func (f *FanOut) isolation() string {
	if f.Step.Isolation == "" {
		return "worktree"
	}
	return f.Step.Isolation
}

// Preflight checks what the fan-out needs before anything runs: a task
// list without duplicate ids, unknown dependencies or cycles, and for
// isolation: worktree git on PATH and a clean repository with a commit.
func (f *FanOut) Preflight(ctx context.Context) error {
	if len(f.Tasks) == 0 {
		return f.errorf("the source %s resolved to no tasks; the decompose step must return at least one task", f.Step.Source)
	}
	if vs := fanout.ListViolations(f.Tasks); len(vs) > 0 {
		return f.errorf("the source %s is not a valid task graph: %s; fix the step that produces it", f.Step.Source, strings.Join(vs, "; "))
	}
	switch f.isolation() {
	case "none":
		return nil
	case "worktree":
	default:
		return f.errorf("isolation: %s is not supported by stratum's fan-out; use worktree or none", f.isolation())
	}
	if _, err := exec.LookPath("git"); err != nil {
		return f.errorf("isolation: worktree needs git, which is not on PATH; install git, or set isolation: none on the step")
	}
	root, err := repoRoot(ctx, f.Dir)
	if err != nil {
		return f.errorf("isolation: worktree needs the spec's directory %s to be inside a git repository (%v); run `git init` and commit, or set isolation: none", f.Dir, err)
	}
	if _, err := git(ctx, root, "rev-parse", "--verify", "HEAD"); err != nil {
		return f.errorf("isolation: worktree needs a commit to branch from, and repository %s has none; commit first", root)
	}
	dirty, err := dirtyFiles(ctx, root)
	if err != nil {
		return f.errorf("cannot read the state of repository %s: %v", root, err)
	}
	if len(dirty) > 0 {
		return f.errorf("repository %s has uncommitted changes (%s); commit or stash them before a worktree fan-out, so its tasks and their merge start from a clean tree", root, listShort(dirty, 5))
	}
	f.root = root
	dir := f.Dir
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if rel, err := filepath.Rel(root, dir); err == nil && !strings.HasPrefix(rel, "..") {
		f.rel = rel
	}
	return nil
}

// Run executes the fan-out (Preflight first). A *FanOutError means nothing
// ran.
func (f *FanOut) Run(ctx context.Context) (*FanOutResult, error) {
	if err := f.Preflight(ctx); err != nil {
		return nil, err
	}
	if f.WorktreeRoot == "" {
		f.WorktreeRoot = filepath.Join(stratumHome(), "worktrees")
	}
	f.state = map[string]*engine.ParallelTask{}
	for _, t := range f.Tasks {
		pt := engine.ParallelTask{TaskID: t.ID, State: engine.TaskPending, StepID: f.Step.ID}
		if p, ok := f.Prior[t.ID]; ok {
			if p.State == engine.TaskComplete && f.branchUsable(ctx, p) {
				f.state[t.ID] = &p
				continue
			}
			pt.Runs = p.Runs
		}
		f.state[t.ID] = &pt
	}
	for _, t := range f.Tasks {
		if f.state[t.ID].State == engine.TaskPending {
			if err := f.record(ctx, *f.state[t.ID]); err != nil {
				return nil, err
			}
		}
	}
	res := &FanOutResult{MergeStatus: "clean"}
	if err := f.schedule(ctx, res); err != nil {
		return nil, err
	}
	if res.Interrupted || res.Budget != "" {
		return res, nil
	}
	for _, t := range f.Tasks {
		res.Tasks = append(res.Tasks, *f.state[t.ID])
	}
	f.merge(ctx, res)
	return res, nil
}

// record persists a task's state (and tells OnTask).
func (f *FanOut) record(ctx context.Context, t engine.ParallelTask) error {
	_, err := f.Service.RecordParallelTask(context.WithoutCancel(ctx), f.FlowID, t, f.Report)
	if e := engine.AsError(err); e != nil {
		return fmt.Errorf("step '%s': recording task '%s' refused: %s", f.Step.ID, t.TaskID, e.Message)
	}
	if err != nil {
		return err
	}
	if f.OnTask != nil {
		f.OnTask(t)
	}
	return nil
}

// taskDone is what a task's goroutine hands back.
type taskDone struct {
	id     string
	task   *engine.ParallelTask // the settled task; nil when it did not settle (interrupted)
	budget string               // the budget ran out during the task
	err    error                // a store error
}

// Causes of a task's cancellation.
var (
	errTaskCancelled = errors.New("require can no longer be met")
	errBudgetStop    = errors.New("the budget ran out")
)

// schedule runs the tasks: at most max_concurrent at a time, each once its
// dependencies completed; a task whose dependency did not complete is
// cancelled; once require cannot be met any more the open tasks are
// cancelled (the original's cascade cancel). The budget running out, or
// ctx ending, cancels the running tasks (their process groups are killed).
func (f *FanOut) schedule(ctx context.Context, res *FanOutResult) error {
	maxc := f.Step.MaxConcurrent
	if maxc <= 0 {
		maxc = 3
	}
	require := f.Step.Require
	runCtx, cancelAll := context.WithCancelCause(ctx)
	defer cancelAll(nil)
	cancels := map[string]context.CancelCauseFunc{}
	done := make(chan taskDone)
	running := 0
	stopping := false
	var storeErr error
	stop := func(cause error) {
		stopping = true
		cancelAll(cause)
	}

	byID := map[string]fanout.Task{}
	for _, t := range f.Tasks {
		byID[t.ID] = t
	}
	counts := func() (complete, failed, open int) {
		for _, t := range f.Tasks {
			switch s := f.state[t.ID].State; {
			case s == engine.TaskComplete:
				complete++
			case engine.TaskTerminal(s):
				failed++
			default:
				open++
			}
		}
		return
	}
	settle := func(id, state, msg string) {
		pt := f.state[id]
		pt.State = state
		pt.Error = &msg
		pt.Violations = []string{msg}
		if pt.FinishedAt == nil {
			pt.FinishedAt = fanout.UnixSeconds(time.Now())
		}
		if err := f.record(ctx, *pt); err != nil && storeErr == nil {
			storeErr = err
		}
	}
	for {
		if !stopping && ctx.Err() == nil {
			// Cancel tasks whose dependencies cannot complete any more.
			for changed := true; changed; {
				changed = false
				for _, t := range f.Tasks {
					if f.state[t.ID].State != engine.TaskPending {
						continue
					}
					for _, d := range t.DependsOn {
						if s := f.state[d].State; engine.TaskTerminal(s) && s != engine.TaskComplete {
							settle(t.ID, engine.TaskCancelled, fmt.Sprintf("task '%s' did not run: its dependency '%s' %s", t.ID, d, s))
							changed = true
							break
						}
					}
				}
			}
			if c, fl, open := counts(); open > 0 && fanout.RequireUnsatisfiable(require, c, fl, open) {
				stopping = true
				for _, t := range f.Tasks {
					if f.state[t.ID].State == engine.TaskPending {
						settle(t.ID, engine.TaskCancelled, fmt.Sprintf("task '%s' cancelled: require '%s' can no longer be met", t.ID, orDefault(require, "all")))
					}
				}
				for _, c := range cancels {
					c(errTaskCancelled)
				}
			}
		}
		for !stopping && ctx.Err() == nil && running < maxc {
			next := ""
			for _, t := range f.Tasks {
				if f.state[t.ID].State != engine.TaskPending {
					continue
				}
				ready := true
				for _, d := range t.DependsOn {
					if f.state[d].State != engine.TaskComplete {
						ready = false
						break
					}
				}
				if ready {
					next = t.ID
					break
				}
			}
			if next == "" {
				break
			}
			view, reason, err := f.budget(ctx)
			if err != nil {
				storeErr = err
				stop(errBudgetStop)
				break
			}
			if reason != "" {
				res.Budget = reason
				stop(errBudgetStop)
				break
			}
			pt := f.state[next]
			pt.State = engine.TaskRunning
			pt.Runs++
			pt.StartedAt = fanout.UnixSeconds(time.Now())
			pt.FinishedAt, pt.Error, pt.Violations, pt.Result = nil, nil, nil, nil
			if err := f.record(ctx, *pt); err != nil {
				storeErr = err
				stop(errBudgetStop)
				break
			}
			tctx, cancel := context.WithCancelCause(runCtx)
			cancels[next] = cancel
			running++
			snapshot := *pt
			go func(t fanout.Task) {
				done <- f.runTask(ctx, tctx, t, snapshot, view)
			}(byID[next])
		}
		if running == 0 {
			break
		}
		d := <-done
		running--
		if cancel := cancels[d.id]; cancel != nil {
			cancel(nil)
			delete(cancels, d.id)
		}
		if d.task != nil {
			*f.state[d.id] = *d.task
		}
		if d.err != nil && storeErr == nil {
			storeErr = d.err
			stop(errBudgetStop)
		}
		if d.budget != "" && res.Budget == "" {
			res.Budget = d.budget
			stop(errBudgetStop)
		}
	}
	if ctx.Err() != nil {
		res.Interrupted = true
		return nil
	}
	return storeErr
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (f *FanOut) budget(ctx context.Context) (engine.BudgetView, string, error) {
	if f.Budget == nil {
		return engine.BudgetView{}, "", nil
	}
	return f.Budget(ctx)
}

var unsafeRef = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// runTask runs one task (under tctx, a child of the fan-out's ctx) to a
// terminal state and records it. A task interrupted with ctx (Ctrl-C) is
// left running in the store, its worktree removed: a resume runs it again.
func (f *FanOut) runTask(ctx, tctx context.Context, t fanout.Task, pt engine.ParallelTask, view engine.BudgetView) taskDone {
	dir := f.Dir
	wt, branch := "", ""
	worktree := f.isolation() == "worktree"
	finish := func(state string, result any, violations []string) taskDone {
		if ctx.Err() != nil && state != engine.TaskComplete {
			if worktree {
				f.cleanupTask(ctx, wt, branch, true)
			}
			return taskDone{id: t.ID}
		}
		pt.State = state
		pt.Result = result
		pt.FinishedAt = fanout.UnixSeconds(time.Now())
		pt.Violations = violations
		pt.Error = nil
		if len(violations) > 0 {
			msg := strings.Join(violations, "; ")
			pt.Error = &msg
		}
		if worktree {
			f.cleanupTask(ctx, wt, branch, state != engine.TaskComplete)
		}
		return taskDone{id: t.ID, task: &pt, err: f.record(ctx, pt)}
	}
	if worktree {
		wt, branch = f.names(t.ID)
		// A run that died may have left this task's worktree and branch.
		f.removeWorktree(ctx, wt, branch, true)
		if err := os.MkdirAll(filepath.Dir(wt), 0o755); err != nil {
			return finish(engine.TaskFailed, nil, []string{"worktree setup failed: " + err.Error()})
		}
		f.wtMu.Lock()
		_, err := git(ctx, f.root, "worktree", "add", "-b", branch, wt, "HEAD")
		f.wtMu.Unlock()
		if err != nil {
			return finish(engine.TaskFailed, nil, []string{"worktree setup failed: " + err.Error()})
		}
		pt.WorktreePath = &wt
		pt.Branch = branch
		dir = filepath.Join(wt, f.rel)
		if err := f.record(ctx, pt); err != nil {
			f.cleanupTask(ctx, wt, branch, true)
			return taskDone{id: t.ID, err: err}
		}
	}

	step := *f.Step
	step.Intent = fanout.Prompt(f.Step.IntentTemplate, t.Raw)
	req := engine.StepRequest{
		FlowID: f.FlowID, Spec: f.Spec, Flow: f.Flow, Step: &step, Inputs: f.Inputs,
		Attempt: f.Attempt, Violations: f.Violations, Dir: dir, Budget: view,
		Task: t.Raw, Worktree: wt,
	}
	if f.Step.TaskTimeout > 0 {
		d := time.Now().Add(time.Duration(f.Step.TaskTimeout) * time.Second)
		if req.Budget.Deadline.IsZero() || d.Before(req.Budget.Deadline) {
			req.Budget.Deadline = d
		}
	}
	ectx := tctx
	var span *otlp.Span
	if parent := otlp.SpanFromContext(tctx); parent != nil {
		span = parent.Child("task "+t.ID, otlp.KindInternal)
		span.Set("stratum.task_id", t.ID)
		span.Set("stratum.step_id", f.Step.ID)
		if branch != "" {
			span.Set("stratum.branch", branch)
		}
		ectx = otlp.ContextWithSpan(tctx, span)
	}
	start := time.Now()
	out, execErr := f.Executor.Execute(ectx, req)
	elapsed := time.Since(start)
	if f.OnCall != nil {
		c := engine.CallRecord{StepID: f.Step.ID, Attempt: f.Attempt, DurationMS: elapsed.Milliseconds(), Tokens: out.Usage.Total(),
			CostUSD: out.CostUSD, Agent: f.Kind == "agent", Trace: out.Trace,
			Data: map[string]any{"executor": f.Kind, "task_id": t.ID}}
		if c.CostUSD == nil && f.Kind == "command" {
			zero := 0.0
			c.CostUSD = &zero
		}
		var ae *engine.AttemptError
		if errors.As(execErr, &ae) {
			c.Data["error_kind"] = ae.Kind
			c.Data["violations"] = ae.Violations
		}
		f.OnCall(context.WithoutCancel(ctx), c)
	}
	// endSpan ends the task's span with the state the task settles in.
	endSpan := func(state string, msg string) {
		if span != nil {
			span.Set("stratum.task_state", state)
			span.EndStatus(state == engine.TaskComplete, msg)
		}
	}
	if execErr != nil {
		if deadlineSpent(view, execErr) || errors.Is(execErr, engine.ErrBudgetExhausted) {
			endSpan(engine.TaskCancelled, "budget exhausted")
			d := finish(engine.TaskCancelled, nil, []string{fmt.Sprintf("task '%s' stopped: the budget ran out", t.ID)})
			d.budget = fmt.Sprintf("step '%s' ran out of its budget during task '%s'", f.Step.ID, t.ID)
			return d
		}
		if tctx.Err() != nil {
			endSpan(engine.TaskCancelled, "cancelled")
			why := "cancelled"
			switch cause := context.Cause(tctx); {
			case errors.Is(cause, errTaskCancelled):
				why = "cancelled: require '" + orDefault(f.Step.Require, "all") + "' can no longer be met"
			case errors.Is(cause, errBudgetStop):
				why = "cancelled: the budget ran out"
			}
			return finish(engine.TaskCancelled, nil, []string{fmt.Sprintf("task '%s' %s", t.ID, why)})
		}
		var ae *engine.AttemptError
		vs := []string{execErr.Error()}
		if errors.As(execErr, &ae) && len(ae.Violations) > 0 {
			vs = append([]string(nil), ae.Violations...)
			if ae.Kind == engine.AttemptTimeout && f.Step.TaskTimeout > 0 {
				vs = []string{fmt.Sprintf("timeout after %ds (task_timeout)", f.Step.TaskTimeout)}
			}
		}
		for i, v := range vs {
			vs[i] = fmt.Sprintf("task '%s': %s", t.ID, v)
		}
		endSpan(engine.TaskFailed, strings.Join(vs, "; "))
		return finish(engine.TaskFailed, nil, vs)
	}
	if worktree {
		files, diff, err := f.commitTask(ctx, wt, t)
		pt.Files = files
		pt.Diff = diff
		if err != nil {
			endSpan(engine.TaskFailed, err.Error())
			return finish(engine.TaskFailed, out.Output, []string{fmt.Sprintf("task '%s': %v", t.ID, err)})
		}
		if len(t.FilesOwned) > 0 {
			if bad := outside(files, t.FilesOwned); len(bad) > 0 {
				msg := fmt.Sprintf("task '%s' wrote outside its files_owned: %s (files_owned: %s); its changes are discarded — widen files_owned in the task graph or keep the task to its files",
					t.ID, listShort(bad, 5), strings.Join(t.FilesOwned, ", "))
				endSpan(engine.TaskFailed, msg)
				return finish(engine.TaskFailed, out.Output, []string{msg})
			}
		}
	}
	endSpan(engine.TaskComplete, "")
	return finish(engine.TaskComplete, out.Output, nil)
}
