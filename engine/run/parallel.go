package run

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/internal/fanout"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// EventTask is a task of a fan-out changing state (Message: the task id
// and its state; Violations: why it failed).
const EventTask = "task"

// parallel executes a parallel_dispatch step in-process (FanOut) and
// reports its outcome the way an agent does, through parallel_done: the
// engine judges require, the merge and the step's checks, and answers the
// next dispatch or the retry.
func (r *Runner) parallel(ctx context.Context, fc *flowCtx, d *engine.ParallelDispatch) (turn, error) {
	step := fc.flow.Step(d.StepID)
	if step == nil {
		return stop(&endState{status: EndError, out: d, message: fmt.Sprintf("dispatched step %q is not in flow %q", d.StepID, fc.flow.Name)})
	}
	kind := kindOf(step)
	ex := r.executor(kind)
	if ex == nil {
		return stop(&endState{status: EndError, out: d, handoff: &Handoff{StepID: step.ID, Mode: step.StepMode()}, message: r.noInferMessage(fc, step)})
	}
	st, err := r.svc.Query().Get(ctx, fc.id)
	if err != nil {
		return turn{}, err
	}
	resume := "; " + r.resumable(fc)
	tasks, inputs, msg := parallelWork(st, step, d.Tasks)
	if msg != "" {
		return stop(&endState{status: EndError, out: d, message: msg + resume})
	}
	attempt := st.Attempts[step.ID] + 1
	r.beginCall(fc, step.ID, attempt)
	var violations []string
	if d.Failure != "" {
		violations = d.Violations
	}
	rep := r.stepReport(fc, step)
	r.emit(Event{Kind: EventStepStarted, FlowID: fc.id, Step: step, Attempt: attempt, Round: fc.round, Spec: fc.spec,
		Message: fmt.Sprintf("%d task%s, isolation: %s", len(tasks), plural(len(tasks)), orDefault(step.Isolation, "worktree"))})
	var budgetMu sync.Mutex
	var calls sync.WaitGroup // call records being written
	// One writer for the tasks' records and their calls' spend: they are
	// written concurrently and must not conflict with each other.
	w := r.svc.FlowWriter(fc.id, r.report())
	fo := &FanOut{
		Service: r.svc, Report: r.report(), Writer: w, Executor: ex, Kind: executorName(kind),
		FlowID: fc.id, Spec: fc.spec, Flow: fc.flow, Step: step, Tasks: tasks, Inputs: inputs,
		Attempt: attempt, Violations: violations, Dir: fc.dir,
		Prior:        st.TasksOf(step.ID),
		WorktreeRoot: r.opts.WorktreeRoot, KeepWorktrees: r.opts.KeepWorktrees, Log: r.opts.Log,
		Budget: func(ctx context.Context) (engine.BudgetView, string, error) {
			if flowBudgeted(fc) {
				calls.Wait() // the flow's ledger is read: every spend booked
			}
			budgetMu.Lock()
			defer budgetMu.Unlock()
			return r.budgetView(ctx, fc, step, kind)
		},
		OnCall: r.fanOutCall(fc, rep, w, &budgetMu, &calls),
		OnTask: r.taskProgress(fc, step, attempt),
	}
	if step.Kind == specs.KindPipeline && kind != execAgent {
		fo.AgentExecutor = r.opts.Agent
	}
	fo.PreMergeVerify, fo.Bounces = engine.ResolvePreMergeVerify(st, step), engine.PriorBounces(st, step.ID)
	start := time.Now()
	res, err := fo.Run(r.traceStep(ctx, fc, step.ID, attempt))
	calls.Wait()
	rep.Duration += time.Since(start)
	fc.call.dur += time.Since(start)
	if fe, ok := err.(*FanOutError); ok {
		return stop(&endState{status: EndError, out: d, message: fe.Msg + resume})
	}
	if err != nil {
		if ctx.Err() != nil {
			return stop(&endState{status: EndInterrupted})
		}
		// A store failure mid fan-out: the tasks recorded so far stay
		// recorded, and the run ends with a report like any other.
		return stop(&endState{status: EndError, out: d, message: fmt.Sprintf("step '%s': %v%s", step.ID, err, resume)})
	}
	if res.Interrupted {
		return stop(&endState{status: EndInterrupted})
	}
	rep.Attempts++
	if res.Budget != "" {
		return r.exhaust(ctx, fc, step, res.Budget)
	}
	next, err := answered(r.svc.ParallelDone(ctx, engine.ParallelReport{FlowID: fc.id, StepID: step.ID, TaskResults: res.TaskResults(), MergeStatus: res.MergeReport(), Details: res.Details, Executed: true, ReportOptions: r.report()}))
	if err != nil {
		return turn{}, err
	}
	r.noteStepResult(fc, step, next, nil)
	return next, nil
}

// fanOutCall is a fan-out's OnCall: the call's spend counted in the
// run's report and the flow's current call (under budgetMu), its record
// queued on the flow's writer w before the task's end (the writer keeps
// the order) and booked to the ancestors once written (calls counts those
// in flight).
func (r *Runner) fanOutCall(fc *flowCtx, rep *StepReport, w *engine.FlowWriter, budgetMu *sync.Mutex, calls *sync.WaitGroup) func(context.Context, engine.CallRecord) {
	return func(ctx context.Context, c engine.CallRecord) {
		budgetMu.Lock()
		fc.call.usd += deref(c.CostUSD)
		fc.call.tokens += c.Tokens
		if c.CostUSD != nil {
			rep.CostUSD += *c.CostUSD
			rep.CostKnown = true
		}
		budgetMu.Unlock()
		// Queued before the task's end is (the writer keeps the
		// order), written behind the work. A refusal (the lease was
		// lost) books nothing; the run notices it at its next report.
		booked := w.RecordCallLater(ctx, c)
		calls.Add(1)
		go func() {
			defer calls.Done()
			if err := <-booked; err == nil || engine.AsError(err) != nil {
				_ = r.recordAncestors(ctx, fc, c)
			}
		}()
	}
}

// parallelWork is what a parallel step runs: its tasks (a pipeline's
// items from its source, else the task list dispatched) and its resolved
// inputs; msg says why there is none, and what to do.
func parallelWork(st *state.FlowState, step *specs.Step, dispatched any) (tasks []fanout.Task, inputs map[string]any, msg string) {
	source := dispatched
	var err error
	if step.Kind == specs.KindPipeline {
		if source, err = engine.ResolveSource(st, step); err != nil {
			return nil, nil, fmt.Sprintf("step '%s': its source %s does not resolve: %v", step.ID, step.Source, err)
		}
	}
	tasks, err = StepTasks(step, source)
	if err != nil && step.Kind == specs.KindPipeline {
		return nil, nil, fmt.Sprintf(
			"step '%s': source %s resolved to something that is not a list of items: %v; point source at a list (each item runs through the stages)",
			step.ID, step.Source, err)
	}
	if err != nil {
		return nil, nil, fmt.Sprintf(
			"step '%s': source %s resolved to something that is not a task list: %v; make the step that produces it return {\"tasks\": [{\"id\", \"description\", \"files_owned\", \"depends_on\"}, …]} and point source at its tasks",
			step.ID, step.Source, err)
	}
	if inputs, err = engine.ResolveStepInputs(st, step); err != nil {
		return nil, nil, fmt.Sprintf("step '%s': its inputs do not resolve: %v", step.ID, err)
	}
	return tasks, inputs, ""
}

// taskGraphError checks a decompose step's result before anything is
// dispatched from it: a malformed graph (not a task list, duplicate ids,
// unknown dependencies, cycles) is a failed attempt with the violations
// fed back (nil when the graph is sound or the step is not decompose).
func taskGraphError(step *specs.Step, output any) error {
	if step.Kind != specs.KindDecompose {
		return nil
	}
	vs := fanout.GraphViolations(output)
	if len(vs) == 0 {
		return nil
	}
	return &engine.AttemptError{Kind: engine.AttemptTaskGraph, Violations: vs}
}

// taskLine is the progress line of a task event.
func taskLine(e Event) string {
	line := fmt.Sprintf("  · %s task %s", stepName(e), e.Message)
	if state.TaskTerminal(e.Status) && e.Elapsed > 0 {
		line += fmt.Sprintf(" (%s)", e.Elapsed.Round(time.Millisecond))
	}
	if len(e.Violations) > 0 && e.Status != state.TaskComplete {
		line += ": " + strings.Join(e.Violations, "; ")
	}
	return line
}

// flowBudgeted reports whether the flow or one of its ancestors declares a
// budget (its spend is then read back from the store).
func flowBudgeted(fc *flowCtx) bool {
	for f := fc; f != nil; f = f.parent {
		if f.flow.Budget != nil {
			return true
		}
	}
	return false
}

// noInferMessage says why a fan-out step of an infer kind cannot run: no
// LLM provider is configured.
func (r *Runner) noInferMessage(fc *flowCtx, step *specs.Step) string {
	msg := fmt.Sprintf("step '%s' runs its tasks with an LLM (infer) but no provider is configured", step.ID)
	if r.opts.InferUnavailable != "" {
		msg += ": " + r.opts.InferUnavailable
	}
	return msg + "; give the step an agent: or a run: command, or configure a provider; " + r.resumable(fc)
}

// taskProgress is a fan-out's OnTask: each task's change of state (but
// pending) as an EventTask, one at a time.
func (r *Runner) taskProgress(fc *flowCtx, step *specs.Step, attempt int) func(state.ParallelTask) {
	var emitMu sync.Mutex
	return func(t state.ParallelTask) {
		if t.State == state.TaskPending {
			return
		}
		emitMu.Lock()
		defer emitMu.Unlock()
		// The id is the decompose step's (untrusted) text: one line.
		msg := specs.EscapeControl(t.TaskID) + " " + t.State
		if t.Runs > 1 {
			msg += fmt.Sprintf(" (run %d)", t.Runs)
		}
		if t.Branch != "" && t.State == state.TaskRunning {
			msg += " on " + t.Branch
		}
		r.emit(Event{Kind: EventTask, FlowID: fc.id, Step: step, Attempt: attempt, Spec: fc.spec, Message: msg,
			Status: t.State, Violations: t.Violations, Elapsed: time.Duration(t.DurationMS(time.Now())) * time.Millisecond})
	}
}
