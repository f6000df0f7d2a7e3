package state

import (
	"encoding/json"
	"time"
)

// The stored shape of a fan-out: the tasks of a parallel_dispatch step
// (FlowState.ParallelTasks) and the run of an MCP server that executes them
// (FlowState.ParallelRuns).

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
	// GateBounce is the original's gate_bounce: the record of the task's
	// pre_merge_verify gate failing ({reason: "gate_failed", command,
	// exit_code, files, excerpt, task_id}); the task's next run is told.
	GateBounce map[string]any `json:"gate_bounce,omitempty"`
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

// DispatchKey is the identity of stepID's current dispatch, its dispatch
// time ("" when the step is not dispatched): ParallelTask.Dispatch and
// ParallelRun.Dispatch hold it.
func (st *FlowState) DispatchKey(stepID string) string {
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
	key := st.DispatchKey(stepID)
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

// LeaseLive reports whether a runner's lease owns the flow at now (reports
// from anyone else are refused with flow_owned).
func (st *FlowState) LeaseLive(now time.Time) bool {
	return st.Owner != nil && st.Owner.ExpiresAt.After(now)
}

// LastTasksOf is TasksOf for a step that may no longer be
// dispatched (it was reported): the tasks of its latest recorded dispatch.
func (st *FlowState) LastTasksOf(stepID string) map[string]ParallelTask {
	if st.DispatchKey(stepID) != "" {
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

// ParallelRun is a parallel_dispatch step's fan-out executed by an MCP
// server (stratum_parallel_start), as recorded in FlowState.ParallelRuns:
// the server's lease while it runs, and once every task settled the merge
// of the task branches. A server restarted, or another server sharing the
// store, reads from it what a poll must answer: the real merge outcome,
// and whether tasks still "running" have anyone running them.
type ParallelRun struct {
	// Dispatch is the step's dispatch the run belongs to (see
	// ParallelTask.Dispatch).
	Dispatch string `json:"dispatch"`
	// Lease is held by the server running the tasks, renewed while they
	// run; nil once the run ended.
	Lease *Lease `json:"lease,omitempty"`
	// Done is set when the fan-out ended (its tasks settled and, under
	// isolation: worktree, their branches merged or refused).
	Done bool `json:"done,omitempty"`
	// MergeStatus is "clean" or "conflict" once Done; Details explain a
	// conflict or the failed tasks.
	MergeStatus string   `json:"merge_status,omitempty"`
	Details     []string `json:"details,omitempty"`
}

// Live reports whether the run's lease is held at now (its server is
// running the tasks).
func (r *ParallelRun) Live(now time.Time) bool {
	return r != nil && r.Lease != nil && r.Lease.ExpiresAt.After(now)
}

func cloneParallelRuns(m map[string]*ParallelRun) map[string]*ParallelRun {
	if m == nil {
		return nil
	}
	out := make(map[string]*ParallelRun, len(m))
	for k, r := range m {
		if r == nil {
			out[k] = nil
			continue
		}
		c := *r
		c.Lease = ClonePtr(r.Lease)
		c.Details = append([]string(nil), r.Details...)
		out[k] = &c
	}
	return out
}

// ParallelRunOf is the recorded server run of stepID's current dispatch
// (nil: none).
func (st *FlowState) ParallelRunOf(stepID string) *ParallelRun {
	r := st.ParallelRuns[stepID]
	if r == nil || r.Dispatch != st.DispatchKey(stepID) || r.Dispatch == "" {
		return nil
	}
	return r
}
