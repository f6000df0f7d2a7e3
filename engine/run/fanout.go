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
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// FanOut executes the tasks of one dispatch of a parallel_dispatch step:
// concurrently up to max_concurrent, a task starting once every task it
// depends on completed, each with the step's executor; under isolation:
// worktree each task runs in its own git worktree on its own branch, its
// changes committed there, checked against its files_owned, then the
// worktree removed (kept with --keep-worktrees). Every change of a task's
// state is recorded in the flow as it happens, through one
// engine.FlowWriter (the pending tasks in one write, then what the tasks
// record meanwhile in each next write, so the fan-out's own writes never
// conflict with each other), so a fan-out resumed after a crash re-runs
// only the tasks that had not completed. Once every task settled, the
// completed branches are merged in task order (merge: sequential_apply) — all of them or, on a
// conflict, none. The caller reports the outcome with
// Service.ParallelDone with its Details: the state machine judges require, the
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
	// AgentExecutor runs the tasks of a pipeline stage that names its
	// own agent (nil: the step's executor runs them).
	AgentExecutor engine.Executor
	// PreMergeVerify are the step's pre-merge gate commands
	// (engine.ResolvePreMergeVerify), run in each task's worktree before
	// its work is committed; Bounces are the bounce records the tasks'
	// previous attempt left (engine.PriorBounces), told to their prompts.
	PreMergeVerify []string
	Bounces        map[string]map[string]any
	FlowID         string
	Spec           *specs.Spec
	Flow           *specs.Flow
	Step           *specs.Step
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
	Prior map[string]state.ParallelTask
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
	OnTask func(t state.ParallelTask)
	// Log receives notes for the user (kept worktrees); nil: discarded.
	Log io.Writer

	// Writer records the tasks' states (nil: a FlowWriter of FlowID as
	// Report); share it with every other concurrent writer of the flow in
	// this process (the tasks' call records), so they never conflict.
	Writer *engine.FlowWriter

	state map[string]*state.ParallelTask // owned by the scheduler
	// later counts the records queued by recordLater and not yet
	// answered; laterQ holds them in order for confirm (running while
	// confirming); laterErr is the first that failed.
	later      sync.WaitGroup
	laterMu    sync.Mutex
	laterQ     []queuedRecord
	confirming bool
	laterErr   error
	// wtMu serialises `git worktree` commands: git's worktree bookkeeping
	// is not safe for concurrent adds and prunes.
	wtMu sync.Mutex
	root string // repository root (isolation: worktree)
	rel  string // the spec directory relative to root
}

// FanOutResult is how a fan-out ended.
type FanOutResult struct {
	// Tasks in source order.
	Tasks []state.ParallelTask
	// MergeStatus is "clean" or "conflict"; Details explain failures (a
	// conflict, a file owned twice, why tasks failed); Bounced are the
	// merge_conflict bounce records of the tasks a conflict refused.
	MergeStatus string
	Details     []string
	Bounced     []any
	// Budget is set when the budget ran out: running tasks were cancelled
	// and the step is not reported.
	Budget string
	// Interrupted: the context was cancelled (Ctrl-C); running tasks were
	// killed, nothing reported, the flow stays resumable.
	Interrupted bool
}

// MergeReport is the merge status as stratum_parallel_done takes it: the
// status, or {status, bounced_tasks} when a conflict bounced tasks.
func (r *FanOutResult) MergeReport() any {
	if len(r.Bounced) == 0 {
		return r.MergeStatus
	}
	return map[string]any{"status": r.MergeStatus, "bounced_tasks": r.Bounced}
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
// ran. The tasks still to run are recorded pending, then each start and
// each settled task, all through Writer (a few writes for many records),
// so concurrent tasks never conflict with each other over the flow.
// Ctrl-C (ctx ending) is honoured in every phase: the run returns
// Interrupted, the flow resumable.
func (f *FanOut) Run(ctx context.Context) (*FanOutResult, error) {
	if err := f.Preflight(ctx); err != nil {
		return nil, err
	}
	if f.WorktreeRoot == "" {
		f.WorktreeRoot = filepath.Join(stratumHome(), "worktrees")
	}
	if f.Writer == nil {
		f.Writer = f.Service.FlowWriter(f.FlowID, f.Report)
	}
	f.state = make(map[string]*state.ParallelTask, len(f.Tasks))
	var pending []state.ParallelTask
	for _, t := range f.Tasks {
		pt := state.ParallelTask{TaskID: t.ID, State: state.TaskPending, StepID: f.Step.ID}
		if p, ok := f.Prior[t.ID]; ok {
			if p.State == state.TaskComplete && f.branchUsable(ctx, p) {
				f.state[t.ID] = &p
				continue
			}
			pt.Runs = p.Runs
		}
		f.state[t.ID] = &pt
		pending = append(pending, pt)
	}
	// Queued at once, in one write (unless the store limits its writes:
	// etcd); tasks start while it is written.
	f.recordLater(ctx, pending...)
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

// recordLater queues the records of tasks behind the fan-out's other
// writes without waiting for them: the scheduler and the tasks go on while
// the FlowWriter commits what accumulates in one write. OnTask is told of
// each record once it is written (in the order the records were queued),
// so a progress line never announces what a kill -9 could still lose. A
// failure is kept for laterError; a write whose ctx ended (Ctrl-C) is not
// one. flushLater waits for every queued record.
func (f *FanOut) recordLater(ctx context.Context, ts ...state.ParallelTask) {
	// Many records go in writes the store accepts (FlowWriter.MaxEvents).
	if max := f.Writer.MaxEvents(); max > 0 {
		for len(ts) > max {
			f.recordLater(ctx, ts[:max]...)
			ts = ts[max:]
		}
	}
	if len(ts) == 0 {
		return
	}
	ch := f.Writer.RecordTasksLater(ctx, ts...)
	f.later.Add(1)
	f.laterMu.Lock()
	defer f.laterMu.Unlock()
	f.laterQ = append(f.laterQ, queuedRecord{ctx: ctx, answer: ch, tasks: ts})
	if !f.confirming {
		f.confirming = true
		go f.confirm()
	}
}

// queuedRecord is a record handed to the FlowWriter, awaiting its answer.
type queuedRecord struct {
	ctx    context.Context
	answer <-chan error
	tasks  []state.ParallelTask
}

// confirm awaits the answers of the queued records in order, tells OnTask
// of those written and keeps the first failure.
func (f *FanOut) confirm() {
	f.laterMu.Lock()
	for len(f.laterQ) > 0 {
		q := f.laterQ[0]
		f.laterQ = f.laterQ[1:]
		f.laterMu.Unlock()
		err := <-q.answer
		switch {
		case err == nil:
			if f.OnTask != nil {
				for _, t := range q.tasks {
					f.OnTask(t)
				}
			}
		case q.ctx.Err() != nil:
		default:
			if e := engine.AsError(err); e != nil {
				err = fmt.Errorf("step '%s': recording task '%s' refused: %s", f.Step.ID, q.tasks[0].TaskID, e.Message)
			}
			f.laterMu.Lock()
			if f.laterErr == nil {
				f.laterErr = err
			}
			f.laterMu.Unlock()
		}
		f.later.Done()
		f.laterMu.Lock()
	}
	f.confirming = false
	f.laterMu.Unlock()
}

// laterError is the first failure of a queued record so far.
func (f *FanOut) laterError() error {
	f.laterMu.Lock()
	defer f.laterMu.Unlock()
	return f.laterErr
}

// flushLater waits for every record queued by recordLater and returns the
// first failure.
func (f *FanOut) flushLater() error {
	f.later.Wait()
	return f.laterError()
}

// taskRequest is the executor's request for task t of the fan-out: the
// step with the task's prompt as its intent, run in dir (the task's
// worktree wt, if any), its budget view cut at the task_timeout.
func (f *FanOut) taskRequest(t fanout.Task, dir, wt string, view engine.BudgetView, start stageStart) engine.StepRequest {
	step := *f.Step
	step.Intent = fanout.Prompt(f.Step.IntentTemplate, t.Raw)
	if t.Stage != nil {
		step.Intent = engine.TaskIntent(f.Step, t.ID, start.prompt)
	}
	if b := f.Bounces[t.ID]; b != nil {
		step.Intent += "\n\n" + bouncePrompt(b)
	}
	if t.Stage != nil {
		if a := t.Stage.Spec.Agent; a != "" {
			step.Agent = a
		}
		if to := t.Stage.Spec.TaskTimeout; to > 0 {
			step.TaskTimeout = to
		}
	}
	req := engine.StepRequest{
		FlowID: f.FlowID, Spec: f.Spec, Flow: f.Flow, Step: &step, Inputs: f.Inputs,
		Attempt: f.Attempt, Violations: f.Violations, Dir: dir, Budget: view,
		Task: t.Raw, Worktree: wt,
	}
	if step.TaskTimeout > 0 {
		d := specs.After(time.Now(), int64(step.TaskTimeout), time.Second)
		if req.Budget.Deadline.IsZero() || d.Before(req.Budget.Deadline) {
			req.Budget.Deadline = d
		}
	}
	return req
}

// taskSpan starts task id's span under tctx's, when tracing is on, and
// returns the context the executor runs in.
func (f *FanOut) taskSpan(tctx context.Context, id, branch string) (context.Context, *otlp.Span) {
	ectx := tctx
	var span *otlp.Span
	if parent := otlp.SpanFromContext(tctx); parent != nil {
		span = parent.Child("task "+id, otlp.KindInternal)
		span.Set("stratum.task_id", id)
		span.Set("stratum.step_id", f.Step.ID)
		if branch != "" {
			span.Set("stratum.branch", branch)
		}
		ectx = otlp.ContextWithSpan(tctx, span)
	}
	return ectx, span
}

// reportCall hands the executor call of task id to OnCall (a command's
// cost is 0, not unknown).
func (f *FanOut) reportCall(ctx context.Context, id, kind string, elapsed time.Duration, out engine.StepOutcome, execErr error) {
	if f.OnCall == nil {
		return
	}
	c := engine.CallRecord{StepID: f.Step.ID, Attempt: f.Attempt, DurationMS: elapsed.Milliseconds(), Tokens: out.Usage.Total(),
		CostUSD: out.CostUSD, Agent: kind == "agent", Trace: out.Trace, Executor: kind, TaskID: id}
	if c.CostUSD == nil && kind == "command" {
		zero := 0.0
		c.CostUSD = &zero
	}
	var ae *engine.AttemptError
	if errors.As(execErr, &ae) {
		c.ErrorKind, c.Violations = ae.Kind, ae.Violations
	}
	f.OnCall(context.WithoutCancel(ctx), c)
}

// taskFailure is how task id settles after the executor's error: cancelled
// when the budget ran out (budget then says why the fan-out stops) or the
// task was cancelled (why, from the cancel's cause), else failed with the
// attempt's violations (a timeout names the task's task_timeout, its
// stage's in a pipeline). spanMsg is the status message of the task's span.
func (f *FanOut) taskFailure(tctx context.Context, id string, timeout int, view engine.BudgetView, execErr error) (taskState, spanMsg string, violations []string, budget string) {
	if deadlineSpent(view, execErr) || errors.Is(execErr, engine.ErrBudgetExhausted) {
		return state.TaskCancelled, "budget exhausted", []string{fmt.Sprintf("task '%s' stopped: the budget ran out", id)},
			fmt.Sprintf("step '%s' ran out of its budget during task '%s'", f.Step.ID, id)
	}
	if tctx.Err() != nil {
		why := "cancelled"
		switch cause := context.Cause(tctx); {
		case errors.Is(cause, errTaskCancelled):
			why = "cancelled: require '" + orDefault(f.Step.Require, "all") + "' can no longer be met"
		case errors.Is(cause, errStoreStop):
			why = "cancelled: " + errStoreStop.Error()
		case errors.Is(cause, errBudgetStop):
			why = "cancelled: the budget ran out"
		}
		return state.TaskCancelled, "cancelled", []string{fmt.Sprintf("task '%s' %s", id, why)}, ""
	}
	var ae *engine.AttemptError
	vs := []string{execErr.Error()}
	if errors.As(execErr, &ae) && len(ae.Violations) > 0 {
		vs = append([]string(nil), ae.Violations...)
		if ae.Kind == engine.AttemptTimeout && timeout > 0 {
			vs = []string{fmt.Sprintf("timeout after %ds (task_timeout)", timeout)}
		}
	}
	for i, v := range vs {
		vs[i] = fmt.Sprintf("task '%s': %s", id, v)
	}
	return state.TaskFailed, strings.Join(vs, "; "), vs, ""
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
//
// The task's records (its start, its worktree, its end) are queued in that
// order (recordLater) and written behind the work, together with the
// other tasks' records: a task does not wait for a write, so quick tasks
// are not slowed to one store write each. A process killed before a
// record was written leaves the task as last written (pending or
// running), and a resume runs it again.
func (f *FanOut) runTask(ctx, tctx context.Context, t fanout.Task, pt state.ParallelTask, view engine.BudgetView, start stageStart) taskDone {
	f.recordLater(ctx, pt)
	dir := f.Dir
	wt, branch := "", ""
	worktree := f.isolation() == "worktree"
	finish := func(taskState string, result any, violations []string) taskDone {
		if ctx.Err() != nil && taskState != state.TaskComplete {
			if worktree {
				f.cleanupTask(ctx, wt, branch, true)
			}
			return taskDone{id: t.ID}
		}
		pt.State = taskState
		pt.Result = result
		pt.FinishedAt = fanout.UnixSeconds(time.Now())
		pt.Violations = violations
		pt.Error = nil
		if len(violations) > 0 {
			msg := strings.Join(violations, "; ")
			pt.Error = &msg
		}
		if worktree {
			f.cleanupTask(ctx, wt, branch, taskState != state.TaskComplete)
		}
		f.recordLater(context.WithoutCancel(ctx), pt)
		return taskDone{id: t.ID, task: &pt}
	}
	if worktree {
		var err error
		// wt and branch are set on failure too: finish cleans them up.
		if wt, branch, err = f.addWorktree(ctx, t.ID, start.base); err != nil {
			return finish(state.TaskFailed, nil, []string{"worktree setup failed: " + err.Error()})
		}
		pt.WorktreePath = &wt
		pt.Branch = branch
		dir = filepath.Join(wt, f.rel)
		f.recordLater(context.WithoutCancel(ctx), pt)
	}

	req := f.taskRequest(t, dir, wt, view, start)
	ectx, span := f.taskSpan(tctx, t.ID, branch)
	ex, kind := f.executorFor(t)
	began := time.Now()
	out, execErr := ex.Execute(ectx, req)
	elapsed := time.Since(began)
	f.reportCall(ctx, t.ID, kind, elapsed, out, execErr)
	// endSpan ends the task's span with the state the task settles in.
	endSpan := func(taskState string, msg string) {
		if span != nil {
			span.Set("stratum.task_state", taskState)
			span.EndStatus(taskState == state.TaskComplete, msg)
		}
	}
	if execErr != nil {
		taskState, spanMsg, vs, budget := f.taskFailure(tctx, t.ID, req.Step.TaskTimeout, view, execErr)
		endSpan(taskState, spanMsg)
		d := finish(taskState, nil, vs)
		d.budget = budget
		return d
	}
	if v := f.outputViolation(t, &pt, out.Output); v != "" {
		endSpan(state.TaskFailed, v)
		return finish(state.TaskFailed, out.Output, []string{v})
	}
	if worktree && len(f.PreMergeVerify) > 0 {
		if b := f.runGate(ctx, t, wt, time.Duration(req.Step.TaskTimeout)*time.Second); b != nil {
			pt.GateBounce = b
			v := bounceViolation(b)
			endSpan(state.TaskFailed, v)
			return finish(state.TaskFailed, out.Output, []string{v})
		}
	}
	if worktree {
		files, diff, err := f.commitTask(ctx, wt, t)
		pt.Files = files
		pt.Diff = diff
		if err != nil {
			endSpan(state.TaskFailed, err.Error())
			return finish(state.TaskFailed, out.Output, []string{fmt.Sprintf("task '%s': %v", t.ID, err)})
		}
		if len(t.FilesOwned) > 0 {
			if bad := outside(files, t.FilesOwned); len(bad) > 0 {
				msg := fmt.Sprintf("task '%s' wrote outside its files_owned: %s (files_owned: %s); its changes are discarded — widen files_owned in the task graph or keep the task to its files",
					t.ID, listShort(bad, 5), strings.Join(t.FilesOwned, ", "))
				endSpan(state.TaskFailed, msg)
				return finish(state.TaskFailed, out.Output, []string{msg})
			}
		}
	}
	endSpan(state.TaskComplete, "")
	return finish(state.TaskComplete, out.Output, nil)
}

// outputViolation is why task t fails on its result alone ("": it does
// not): its reasoning certificate (the sections missing, kept in pt's
// cert_violations), or the list a pipeline's fanout stage returned.
func (f *FanOut) outputViolation(t fanout.Task, pt *state.ParallelTask, result any) string {
	if vs := engine.TaskCertificateViolations(f.Step, t.ID, result); len(vs) > 0 {
		pt.CertViolations = vs
		return fmt.Sprintf("task '%s' cert: %s", t.ID, strings.Join(vs, "; "))
	}
	if t.Stage != nil && t.Stage.Role == "split" {
		return splitViolation(t, result)
	}
	return ""
}

// addWorktree creates task id's worktree and branch from base ("" is
// HEAD; a pipeline stage goes on from its predecessor's work), after
// removing what a run that died may have left of them. wt and branch are
// returned on failure too, for the cleanup.
func (f *FanOut) addWorktree(ctx context.Context, id, base string) (wt, branch string, err error) {
	wt, branch = f.names(id)
	f.removeWorktree(ctx, wt, branch, true)
	if err := os.MkdirAll(filepath.Dir(wt), 0o755); err != nil {
		return wt, branch, err
	}
	if base == "" {
		base = "HEAD"
	}
	f.wtMu.Lock()
	_, err = git(ctx, f.root, "worktree", "add", "-b", branch, wt, base)
	f.wtMu.Unlock()
	return wt, branch, err
}
