package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stratum-go/stratum/specs"
)

// This file is the engine's side of fan-outs executed by stratum itself (the
// in-process runner and the MCP server's stratum_parallel_start): the task
// graph a decompose step returns is checked by engine/internal/fanout, every task's state is
// recorded in FlowState.ParallelTasks as it changes (a runner writes them
// through a FlowWriter, many in one transition, so a runner killed mid
// fan-out loses no task recorded finished), and the
// fan-out's outcome is reported through Service.ParallelDone like an agent's
// stratum_parallel_done — the state machine stays the one judge of require,
// merge and the step's checks.

// Task states (the original's ParallelTaskState.state).
const (
	TaskPending   = "pending"
	TaskRunning   = "running"
	TaskComplete  = "complete"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
	TaskSkipped   = "skipped"
)

// TaskTerminal reports whether a task state is final.
func TaskTerminal(state string) bool {
	switch state {
	case TaskComplete, TaskFailed, TaskCancelled, TaskSkipped:
		return true
	}
	return false
}

// ParallelTask is one task of a parallel_dispatch step as persisted in
// FlowState.ParallelTasks[task_id]. The fields down to DiffError are the
// original's ParallelTaskState (its JSON names; times are Unix seconds);
// the others are ours.
type ParallelTask struct {
	TaskID         string   `json:"task_id"`
	State          string   `json:"state"`
	StartedAt      *float64 `json:"started_at"`
	FinishedAt     *float64 `json:"finished_at"`
	Result         any      `json:"result"`
	Error          *string  `json:"error"`
	CertViolations []string `json:"cert_violations"`
	WorktreePath   *string  `json:"worktree_path"`
	Diff           *string  `json:"diff"`
	DiffError      *string  `json:"diff_error"`

	// StepID is the parallel_dispatch step the task belongs to.
	StepID string `json:"step_id,omitempty"`
	// Dispatch identifies the step's dispatch (attempt) the entry belongs
	// to: the step's dispatch time. Entries of an earlier attempt, or of an
	// earlier round, are never taken for the current one.
	Dispatch string `json:"dispatch,omitempty"`
	// Runs is how many times the task was started within this dispatch
	// (a resumed fan-out starts an unfinished task again).
	Runs int `json:"runs,omitempty"`
	// Branch is the task's git branch (isolation: worktree); it outlives
	// the worktree, so a resumed run can still merge it.
	Branch string `json:"branch,omitempty"`
	// Files are the files the task changed (isolation: worktree).
	Files []string `json:"files,omitempty"`
	// Violations say why the task failed, one per problem.
	Violations []string `json:"violations,omitempty"`
}

// DurationMS is how long the task ran (0 while it has not started).
func (t ParallelTask) DurationMS(now time.Time) int64 {
	if t.StartedAt == nil {
		return 0
	}
	end := float64(now.UnixNano()) / 1e9
	if t.FinishedAt != nil {
		end = *t.FinishedAt
	}
	return int64((end - *t.StartedAt) * 1000)
}

// TaskResult is the task as a stratum_parallel_done task result:
// {task_id, result, status} (status complete, skipped or failed), with the
// error and, ours, the branch, worktree and violations when set.
func (t ParallelTask) TaskResult() map[string]any {
	status := TaskFailed
	if t.State == TaskComplete || t.State == TaskSkipped {
		status = t.State
	}
	m := map[string]any{"task_id": t.TaskID, "result": t.Result, "status": status}
	if t.Error != nil {
		m["error"] = *t.Error
	}
	if t.Branch != "" {
		m["branch"] = t.Branch
	}
	if len(t.Violations) > 0 {
		m["violations"] = append([]string(nil), t.Violations...)
	}
	return m
}

// dispatchKey is the identity of a step's current dispatch ("" when the
// step is not dispatched).
func dispatchKey(st *FlowState, stepID string) string {
	at, ok := st.DispatchedAt[stepID]
	if !ok {
		return ""
	}
	return at.UTC().Format(time.RFC3339Nano)
}

// TasksOf returns the recorded tasks of stepID's current dispatch,
// by task id. Entries of another step or of an earlier dispatch are left
// out.
func (st *FlowState) TasksOf(stepID string) map[string]ParallelTask {
	out := map[string]ParallelTask{}
	key := dispatchKey(st, stepID)
	if key == "" {
		return out
	}
	for id, raw := range st.ParallelTasks {
		t, ok := decodeTask(raw)
		if !ok || t.StepID != stepID || t.Dispatch != key {
			continue
		}
		if t.TaskID == "" {
			t.TaskID = id
		}
		out[id] = t
	}
	return out
}

func decodeTask(raw any) (ParallelTask, bool) {
	var t ParallelTask
	b, err := json.Marshal(raw)
	if err != nil {
		return t, false
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, false
	}
	return t, true
}

// recordParallelTask stores one task's state in the flow (a transition):
// recordParallelTasks of one task.
func recordParallelTask(st *FlowState, env transitionEnv, t ParallelTask) (transitionResult, error) {
	return recordParallelTasks(st, env, []ParallelTask{t})
}

// recordParallelTasks stores the state of tasks in the flow (a transition:
// one write for all of them, one parallel_task event each, in order). It is
// refused (wrong_step / wrong_step_type) unless every task belongs to the
// flow's current parallel_dispatch step, so a late report of a task whose
// step was already reported never lands in the next step's fan-out.
func recordParallelTasks(st *FlowState, env transitionEnv, tasks []ParallelTask) (transitionResult, error) {
	ensureMaps(st)
	var step *specs.Step
	for _, t := range tasks {
		s, e := reportable(st, env, t.StepID, parallelTaskReport)
		if e != nil {
			return refused(e), nil
		}
		if t.TaskID == "" {
			return refused(refusal(ErrTypeInvalidInput, "a parallel task needs a task_id")), nil
		}
		step = s
	}
	if step == nil {
		return transitionResult{Unchanged: true}, nil
	}
	key := dispatchKey(st, step.ID)
	if st.ParallelTasks == nil {
		st.ParallelTasks = map[string]any{}
	}
	events := make([]Event, 0, len(tasks))
	for _, t := range tasks {
		t.Dispatch = key
		m, err := taskRecord(t)
		if err != nil {
			return refused(refusal(ErrTypeInvalidInput, "task '%s': %v", t.TaskID, err)), nil
		}
		st.ParallelTasks[t.TaskID] = m
		data := EventData{TaskID: t.TaskID, State: t.State, Runs: t.Runs, DurationMS: t.DurationMS(env.Now), Branch: t.Branch}
		if t.WorktreePath != nil {
			data.Worktree = *t.WorktreePath
		}
		if t.Error != nil {
			data.Error = *t.Error
		}
		if len(t.Violations) > 0 {
			data.Violations = append([]string(nil), t.Violations...)
		}
		events = append(events, event(st, env, EventParallelTask, step.ID, data))
	}
	return transitionResult{Events: events}, nil
}

// taskRecord is a task as FlowState.ParallelTasks holds it (its JSON
// object).
func taskRecord(t ParallelTask) (map[string]any, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// RecordParallelTask is the Service form of RecordParallelTask
// (lease-checked like every report).
func (s *Service) RecordParallelTask(ctx context.Context, flowID string, t ParallelTask, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *FlowState, env transitionEnv) (transitionResult, error) {
		return recordParallelTask(st, env, t)
	})
}

// ParallelDoneDetailed is ParallelDone whose failure violations (a merge
// conflict, an unsatisfied require) are followed by details (which task
// conflicted in which file, why each task failed), so the retry is told
// more than the original's one-line verdict.
func (s *Service) ParallelDoneDetailed(ctx context.Context, flowID, stepID string, taskResults []any, mergeStatus any, details []string, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *FlowState, env transitionEnv) (transitionResult, error) {
		return parallelDoneDetailed(st, env, stepID, taskResults, mergeStatus, details)
	})
}

// ResolveStepInputs resolves a step's declared inputs against the flow
// state (what an execute_step dispatch carries), for steps whose dispatch
// does not carry them (parallel_dispatch).
func (st *FlowState) ResolveStepInputs(step *specs.Step) (map[string]any, error) {
	return resolveInputs(st, step)
}

// ResolveSource resolves a parallel_dispatch step's source against the flow
// state (what its dispatch carries as tasks).
func (st *FlowState) ResolveSource(step *specs.Step) (any, error) {
	return resolveValue(st, step.Source)
}

// LeaseLive reports whether a runner's lease owns the flow at now (reports
// from anyone else are refused with flow_owned).
func (st *FlowState) LeaseLive(now time.Time) bool {
	return st.Owner != nil && st.Owner.ExpiresAt.After(now)
}

// LastTasksOf is TasksOf for a step that may no longer be
// dispatched (it was reported): the tasks of its latest recorded dispatch.
func (st *FlowState) LastTasksOf(stepID string) map[string]ParallelTask {
	if dispatchKey(st, stepID) != "" {
		return st.TasksOf(stepID)
	}
	var latest time.Time
	out := map[string]ParallelTask{}
	for id, raw := range st.ParallelTasks {
		t, ok := decodeTask(raw)
		if !ok || t.StepID != stepID {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, t.Dispatch)
		if err != nil {
			continue
		}
		if at.After(latest) {
			latest, out = at, map[string]ParallelTask{}
		}
		if at.Equal(latest) {
			if t.TaskID == "" {
				t.TaskID = id
			}
			out[id] = t
		}
	}
	return out
}
