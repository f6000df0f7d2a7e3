package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/internal/fanout"
	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// The server-dispatched path of a parallel_dispatch step, as the original's
// current release: stratum_parallel_start runs the step's tasks in this
// process (run.FanOut: the executor of `stratum run` — the step's run:
// command, agent CLI or LLM — with worktrees, require, merge), every task's
// state recorded in the flow as it changes; stratum_parallel_poll reports
// them and, once all settled, advances the flow (through parallel_done, so
// the state machine judges); stratum_parallel_advance does it for steps with
// defer_advance: true.
//
// What a poll answers comes from the flow, not from this process's memory:
// the server holds the step's fan-out with a lease recorded in the flow
// (state.ParallelRun: a run.Holder's lease, renewed by the holder's
// keep-alive every third of fanLeaseTTL, as a runner's) and records the
// merge outcome there when the fan-out ends. A restarted server — or
// another server sharing the store — therefore reports the real merge
// status, and tasks left "running" by a server that died (its lease
// expired) are marked failed with the original's "server restart
// interrupted task" (pending ones cancelled) when the step is next polled
// or advanced, so the step settles and the flow goes on.

type fanKey struct{ flow, step string }

// fanRun is one fan-out running in this process.
type fanRun struct {
	done chan struct{}
	res  *run.FanOutResult
	err  error
	// events are the fan-out's progress events, waiting for a poll
	// (progress.go).
	events progressQueue
}

// fanLeaseTTL is how long a server's hold on a fan-out lives without being
// renewed (it is renewed every third of it while the tasks run).
var fanLeaseTTL = run.DefaultLeaseTTL

// restartError is the error of a task whose server stopped while it ran
// (the original's RESUME_INTERRUPTED_ERROR).
const restartError = "server restart interrupted task"

type parallelArgs struct {
	FlowID string `json:"flow_id" jsonschema:"the flow id from stratum_plan"`
	StepID string `json:"step_id" jsonschema:"the parallel_dispatch step"`
}

type parallelAdvanceArgs struct {
	FlowID      string `json:"flow_id" jsonschema:"the flow id from stratum_plan"`
	StepID      string `json:"step_id" jsonschema:"the parallel_dispatch step"`
	MergeStatus any    `json:"merge_status" jsonschema:"clean or conflict, or {status: clean|conflict, bounced_tasks: [{task_id, reason: merge_conflict, files}]}: the outcome of your merge of the task results"`
}

func (s *server) registerParallelTools(srv *mcp.Server) {
	addTool(srv, s, &mcp.Tool{Name: "stratum_parallel_start", Description: `Start server-dispatched execution of a parallel_dispatch step. Inputs: flow_id (str), step_id (str).
The stratum server runs all the step's tasks itself, concurrently (max_concurrent, task depends_on), each with the step's executor (its run: command, agent CLI, or LLM) — under isolation: worktree each in its own git worktree and branch, merged in task order once all settle. Use stratum_parallel_poll to observe progress and advance the flow.
Returns {status: "started", flow_id, step_id, task_count, tasks: [task ids]}, or {error, message}: flow_not_found, flow_complete, step_mismatch, wrong_step_type, already_started (use stratum_parallel_poll), source_resolution_failed, no_tasks, worktree_unavailable (git missing, no repository, uncommitted changes), flow_owned.`},
		s.parallelStart)
	addTool(srv, s, &mcp.Tool{Name: "stratum_parallel_poll", Annotations: nil, Description: `Poll the state of a server-dispatched parallel_dispatch step. Inputs: flow_id (str), step_id (str).
Returns {flow_id, step_id, summary: {pending, running, complete, failed, cancelled, skipped, reparenting}, tasks: {task_id: {task_id, state, started_at, finished_at, result, error, cert_violations, worktree_path, diff, diff_error, branch, runs, violations}}, require_satisfied, can_advance, outcome}. outcome is null while tasks run; once all settled it is the flow's next dispatch (the step advanced, or was sent back with violations), {status: "awaiting_consumer_advance", aggregate} for defer_advance steps, or {status: "already_advanced", aggregate}. Safe to call at any cadence.`},
		s.parallelPoll)
	addTool(srv, s, &mcp.Tool{Name: "stratum_parallel_advance", Description: `Advance a parallel_dispatch step whose spec declared defer_advance: true. Inputs: flow_id (str), step_id (str), merge_status ('clean' | 'conflict').
Call after observing 'awaiting_consumer_advance' from stratum_parallel_poll; merge_status feeds the require/merge evaluation and the flow advances (returns the next dispatch like stratum_parallel_done). Idempotent: returns {status: 'already_advanced', step_id} if the flow has already moved past step_id. Errors: flow_not_found, unknown_step, wrong_step_type, advance_not_deferred, invalid_merge_status, step_not_dispatched, tasks_not_terminal.`},
		s.parallelAdvance)
}

func perr(code, format string, a ...any) engine.Response {
	return engine.Response{"error": code, "message": fmt.Sprintf(format, a...)}
}

func flowNotFound(id string) engine.Response {
	return engine.Response{"status": "error", "error_type": "flow_not_found", "message": fmt.Sprintf("No active flow with id '%s'", id)}
}

// fanFlow loads a flow with its parsed spec.
func (s *server) fanFlow(ctx context.Context, flowID string) (*state.FlowState, *specs.Spec, *specs.Flow, error) {
	st, err := s.svc.Query().Get(ctx, flowID)
	if err != nil {
		return nil, nil, nil, err
	}
	sp, ds := specs.Parse(st.SpecFile, []byte(st.RawSpec), exprlang.Compile)
	if sp == nil || ds.HasErrors() {
		return nil, nil, nil, fmt.Errorf("the stored spec of flow %s no longer parses: %s", flowID, ds.Error())
	}
	flow := sp.Flows[st.FlowName]
	if flow == nil {
		return nil, nil, nil, fmt.Errorf("flow %q not in the stored spec", st.FlowName)
	}
	return st, sp, flow, nil
}

func currentStep(st *state.FlowState, flow *specs.Flow) *specs.Step {
	steps := flow.OrderedSteps()
	if st.Status.Finished() || st.CurrentIdx < 0 || st.CurrentIdx >= len(steps) {
		return nil
	}
	return steps[st.CurrentIdx]
}

func (s *server) parallelStart(ctx context.Context, _ *mcp.CallToolRequest, in parallelArgs) (engine.Response, error) {
	if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
		return nil, err
	}
	st, sp, flow, err := s.fanFlow(ctx, in.FlowID)
	if err != nil {
		if engine.AsError(err) != nil || isNotFound(err) {
			return flowNotFound(in.FlowID), nil
		}
		return nil, err
	}
	cur := currentStep(st, flow)
	switch {
	case cur == nil:
		return perr("flow_complete", "Flow is already complete"), nil
	case cur.ID != in.StepID:
		return perr("step_mismatch", "Expected step '%s', got '%s'", cur.ID, in.StepID), nil
	case !cur.FansOut():
		return perr("wrong_step_type", "Step '%s' is a %s step, not parallel_dispatch.", in.StepID, cur.StepMode()), nil
	case cur.Isolation == "branch":
		return engine.Response{"error": "branch-mode isolation is not yet supported in server-side parallel dispatch. Use 'worktree' or 'none'."}, nil
	}
	key := fanKey{in.FlowID, in.StepID}
	if refused := s.refuseFanStart(st, key); refused != nil {
		return refused, nil
	}
	prior := st.TasksOf(in.StepID)
	source, err := engine.ResolveSource(st, cur)
	if err != nil {
		return perr("source_resolution_failed", "Could not resolve tasks for step '%s': %v", in.StepID, err), nil
	}
	tasks, err := run.StepTasks(cur, source)
	if err != nil {
		return perr("source_resolution_failed", "Could not resolve tasks for step '%s': %v", in.StepID, err), nil
	}
	if len(tasks) == 0 {
		return perr("no_tasks", "Step '%s' source resolved to zero tasks.", in.StepID), nil
	}
	inputs, err := engine.ResolveStepInputs(st, cur)
	if err != nil {
		return perr("source_resolution_failed", "Could not resolve the inputs of step '%s': %v", in.StepID, err), nil
	}
	fo, err := s.newFanOut(st, sp, flow, cur, tasks, inputs, prior)
	if err != nil {
		return perr("executor_unavailable", "Step '%s': %v", in.StepID, err), nil
	}
	if err := fo.Preflight(ctx); err != nil {
		code := "worktree_unavailable"
		if vs := fanout.ListViolations(tasks); len(vs) > 0 {
			code = "source_resolution_failed"
		}
		return perr(code, "%v", err), nil
	}
	holder := run.NewHolder("mcp", fanLeaseTTL, nil)
	if err := s.svc.Leases().ClaimParallelRun(ctx, st.FlowID, cur.ID, holder.Lease()); err != nil {
		if errors.Is(err, engine.ErrParallelRunHeld) {
			return perr("already_started", "Step '%s' already dispatched; use stratum_parallel_poll.", in.StepID), nil
		}
		return nil, err
	}
	fr := &fanRun{done: make(chan struct{})}
	fo.OnTask = fr.events.onTask(st.FlowID, cur.ID)
	s.fanMu.Lock()
	s.fans[key] = fr
	s.fanMu.Unlock()
	s.fanWG.Add(1)
	go s.runFan(fr, fo, holder, st.FlowID, cur.ID)
	s.awaitTasksRecorded(ctx, fr, st.FlowID, cur.ID, len(tasks))
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return engine.Response{"status": "started", "flow_id": st.FlowID, "step_id": cur.ID, "task_count": len(tasks), "tasks": ids}, nil
}

// newFanOut is the fan-out of step cur's tasks that parallelStart runs:
// the step's executor (and for a pipeline the agent CLIs its stages
// name), its pre-merge gate and the bounces of its previous attempt.
func (s *server) newFanOut(st *state.FlowState, sp *specs.Spec, flow *specs.Flow, cur *specs.Step, tasks []fanout.Task, inputs map[string]any, prior map[string]state.ParallelTask) (*run.FanOut, error) {
	ex, kind, err := s.taskExecutor(st, cur)
	if err != nil {
		return nil, err
	}
	dir := run.ProjectDir(st.SpecFile)
	fo := &run.FanOut{
		Service: s.svc, Executor: ex, Kind: kind, FlowID: st.FlowID, Spec: sp, Flow: flow, Step: cur,
		Tasks: tasks, Inputs: inputs, Attempt: st.Attempts[cur.ID] + 1, Dir: dir, Prior: prior, Log: s.opts.Log,
		PreMergeVerify: engine.ResolvePreMergeVerify(st, cur), Bounces: engine.PriorBounces(st, cur.ID),
	}
	if cur.Kind == specs.KindPipeline && kind != "agent" && cur.Run == nil {
		if cfg, err := config.Load(dir); err == nil {
			fo.AgentExecutor = &run.AgentExecutor{Agents: run.Agents(cfg.Agents)}
		}
	}
	return fo, nil
}

// refuseFanStart is parallel_start's refusal of a fan-out that already
// started (here, by another server, or with tasks past pending) or whose
// flow a runner drives; nil when it may start.
func (s *server) refuseFanStart(st *state.FlowState, key fanKey) engine.Response {
	s.fanMu.Lock()
	_, running := s.fans[key]
	s.fanMu.Unlock()
	started := running || st.ParallelRunOf(key.step) != nil
	for _, t := range st.TasksOf(key.step) {
		if t.State != state.TaskPending {
			started = true
		}
	}
	if started {
		return perr("already_started", "Step '%s' already dispatched; use stratum_parallel_poll.", key.step)
	}
	if st.LeaseLive(time.Now()) {
		return engine.Response{"status": "error", "error_type": "flow_owned", "flow_id": st.FlowID,
			"message": fmt.Sprintf("Flow '%s' is driven by an in-process runner (lease '%s'); it runs its fan-out itself", st.FlowID, st.Owner.ID)}
	}
	return nil
}

// awaitTasksRecorded waits (up to 5 s, or the fan-out's end) until the n
// tasks of stepID are recorded (pending), so a poll right after start sees
// them.
func (s *server) awaitTasksRecorded(ctx context.Context, fr *fanRun, flowID, stepID string, n int) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := s.svc.Query().Get(ctx, flowID); err == nil && len(st.TasksOf(stepID)) >= n {
			return
		}
		select {
		case <-fr.done:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// runFan runs a server-dispatched fan-out (parallelStart) to its end under
// holder's lease, renewed while it runs, then records its end
// (EndParallelRun); a run interrupted by the server stopping settles its
// orphaned tasks first.
func (s *server) runFan(fr *fanRun, fo *run.FanOut, holder *run.Holder, flowID, stepID string) {
	defer s.fanWG.Done()
	defer close(fr.done)
	hbCtx, stopBeat := context.WithCancel(context.Background())
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		_ = holder.KeepAlive(hbCtx, func(ctx context.Context, l state.Lease) error {
			if err := s.svc.Leases().ClaimParallelRun(ctx, flowID, stepID, l); err != nil && ctx.Err() == nil {
				s.log.Error("parallel fan-out: renewing its lease", "flow_id", flowID, "step_id", stepID, "error", err.Error())
			}
			return nil // the tasks run on; a poll judges a lapsed lease
		})
	}()
	fr.res, fr.err = fo.Run(s.bg)
	stopBeat()
	<-beat
	end, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mergeStatus, details := "", []string(nil)
	switch {
	case fr.err != nil:
		s.log.Error("parallel fan-out failed", "flow_id", flowID, "step_id", stepID, "error", fr.err.Error())
	case fr.res.Interrupted:
		// The server is stopping: its tasks were killed. Fail them as a
		// restarted server would, so the step settles.
		if err := s.settleOrphans(end, flowID, stepID); err != nil {
			s.log.Error("parallel fan-out: recording interrupted tasks", "flow_id", flowID, "step_id", stepID, "error", err.Error())
		}
	default:
		mergeStatus, details = fr.res.MergeStatus, fr.res.Details
	}
	if err := s.svc.Leases().EndParallelRun(end, flowID, stepID, holder.ID(), mergeStatus, details); err != nil {
		s.log.Error("parallel fan-out: recording its end", "flow_id", flowID, "step_id", stepID, "error", err.Error())
	}
}

// taskExecutor is the executor of a step's tasks, as `stratum run` picks
// it: run: → command, agent: → agent CLI (agents from the configuration
// next to the spec), else an LLM.
func (s *server) taskExecutor(st *state.FlowState, step *specs.Step) (engine.Executor, string, error) {
	if step.Run != nil {
		return &run.CommandExecutor{}, "command", nil
	}
	cfg, err := config.Load(run.ProjectDir(st.SpecFile))
	if err != nil {
		return nil, "", err
	}
	if step.Agent != "" {
		return &run.AgentExecutor{Agents: run.Agents(cfg.Agents)}, "agent", nil
	}
	x, err := run.NewExecutors(cfg, "", "")
	if err != nil {
		return nil, "", err
	}
	if x.Infer == nil {
		if stagesAllAgents(step) {
			return &run.AgentExecutor{Agents: run.Agents(cfg.Agents)}, "agent", nil
		}
		return nil, "", fmt.Errorf("no LLM provider is configured for its tasks")
	}
	return x.Infer, "infer", nil
}

// stagesAllAgents reports whether every stage of a pipeline step names its
// agent (its tasks need no LLM).
func stagesAllAgents(step *specs.Step) bool {
	for _, st := range step.Stages {
		if st.Agent == "" {
			return false
		}
	}
	return len(step.Stages) > 0
}

// settleOrphans ends the tasks of stepID's current dispatch that nobody
// runs any more (their server stopped): running ones fail with the
// original's "server restart interrupted task", pending ones are
// cancelled (they never started).
func (s *server) settleOrphans(ctx context.Context, flowID, stepID string) error {
	st, err := s.svc.Query().Get(ctx, flowID)
	if err != nil {
		return err
	}
	tasks := st.TasksOf(stepID)
	for _, id := range slices.Sorted(maps.Keys(tasks)) {
		t := tasks[id]
		var msg string
		switch t.State {
		case state.TaskRunning:
			t.State, msg = state.TaskFailed, restartError
		case state.TaskPending:
			t.State, msg = state.TaskCancelled, fmt.Sprintf("task '%s' did not run: the server running the fan-out stopped", id)
		default:
			continue
		}
		t.Error = &msg
		t.Violations = []string{msg}
		if t.FinishedAt == nil {
			t.FinishedAt = fanout.UnixSeconds(time.Now())
		}
		if _, err := answer(s.svc.RecordParallelTask(ctx, flowID, t, engine.ReportOptions{})); err != nil {
			return err
		}
	}
	return nil
}

// orphaned reports whether the step's fan-out was started by a server
// that no longer runs it (its lease expired or was dropped) while some of
// its tasks are not settled.
func orphaned(st *state.FlowState, stepID string, tasks []state.ParallelTask) bool {
	r := st.ParallelRunOf(stepID)
	if r == nil || r.Live(time.Now()) {
		return false
	}
	for _, t := range tasks {
		if !state.TaskTerminal(t.State) {
			return true
		}
	}
	return false
}

// mergeOutcome is the merge status (and details) of a settled fan-out:
// this process's result while it has it, else the one recorded in the
// flow. A fan-out whose server stopped before merging under isolation:
// worktree merged nothing, which is a conflict, never "clean".
func mergeOutcome(fr *fanRun, st *state.FlowState, step *specs.Step, tasks []state.ParallelTask) (string, []string) {
	if fr != nil && fr.res != nil && !fr.res.Interrupted {
		return fr.res.MergeStatus, fr.res.Details
	}
	r := st.ParallelRunOf(step.ID)
	if r == nil {
		return "clean", nil
	}
	if r.Done {
		return r.MergeStatus, r.Details
	}
	// The server stopped before its merge: as FanOut.merge, failed tasks
	// are the details, and nothing is merged unless require is met.
	var branches, details []string
	complete := 0
	for _, t := range tasks {
		switch {
		case t.State == state.TaskComplete:
			complete++
			if t.Branch != "" {
				branches = append(branches, t.Branch)
			}
		case t.Error != nil:
			details = append(details, *t.Error)
		}
	}
	requireOK := fanout.RequireSatisfied(step.Require, complete, len(tasks)-complete)
	if step.Kind == specs.KindPipeline { // a pipeline's require counts items
		results := make([]any, len(tasks))
		for i, t := range tasks {
			results[i] = t.TaskResult()
		}
		if _, ok, err := engine.ParallelAggregate(st, step, results, "clean"); err == nil {
			requireOK = ok
		}
	}
	if len(branches) == 0 || !requireOK {
		return "clean", details
	}
	return "conflict", append(details, fmt.Sprintf("the server running the fan-out of step '%s' stopped before merging the task branches (%s); nothing was merged", step.ID, strings.Join(branches, ", ")))
}

func isNotFound(err error) bool {
	return errors.Is(err, engine.ErrNotFound)
}

// taskView is a task as poll shows it: the original's ParallelTaskState
// fields, plus ours.
func taskView(t state.ParallelTask) map[string]any {
	m := map[string]any{
		"task_id": t.TaskID, "state": t.State, "started_at": t.StartedAt, "finished_at": t.FinishedAt, "result": t.Result,
		"error": t.Error, "cert_violations": t.CertViolations, "worktree_path": t.WorktreePath, "diff": t.Diff, "diff_error": t.DiffError,
		"runs": t.Runs,
	}
	if t.Branch != "" {
		m["branch"] = t.Branch
	}
	if len(t.Violations) > 0 {
		m["violations"] = t.Violations
	}
	return m
}

// stepTasks are the recorded tasks of the step's current dispatch, in
// source order, and the ids the source lists.
func stepTasks(st *state.FlowState, step *specs.Step) ([]state.ParallelTask, bool) {
	rec := st.LastTasksOf(step.ID)
	source, err := engine.ResolveSource(st, step)
	if err != nil {
		return nil, false
	}
	tasks, err := run.StepTasks(step, source)
	if err != nil {
		return nil, false
	}
	var out []state.ParallelTask
	for _, t := range tasks {
		if r, ok := rec[t.ID]; ok {
			out = append(out, r)
		}
	}
	return out, len(out) > 0
}

// stopFanOuts cancels the running fan-outs (their tasks' process groups
// are killed, worktrees removed) and waits for them.
func (s *server) stopFanOuts() {
	s.bgStop()
	s.fanWG.Wait()
}
