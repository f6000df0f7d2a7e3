package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/stratum-go/stratum/specs"
)

// This file is the engine's side of fan-outs executed by stratum itself (the
// in-process runner and the MCP server's stratum_parallel_start): the task
// graph a decompose step returns is checked here, every task's state is
// recorded in FlowState.ParallelTasks as it changes (one transition per
// change, so a runner killed mid fan-out loses no finished task), and the
// fan-out's outcome is reported through ParallelDone like an agent's
// stratum_parallel_done — the state machine stays the one judge of require,
// merge and the step's checks.

// EventParallelTask is a task of a parallel_dispatch step changing state
// (ours). Its data (EventData): TaskID, State, Runs, DurationMS, Worktree,
// Branch, Error, Violations.
const EventParallelTask EventType = "parallel_task"

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

// UnixSeconds is a time as the original's float timestamps.
func UnixSeconds(t time.Time) *float64 {
	f := float64(t.UnixNano()) / 1e9
	return &f
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

// ParallelTasksOf returns the recorded tasks of stepID's current dispatch,
// by task id. Entries of another step or of an earlier dispatch are left
// out.
func ParallelTasksOf(st *FlowState, stepID string) map[string]ParallelTask {
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

// recordParallelTask stores one task's state in the flow (a transition).
// It is refused (wrong_step / wrong_step_type) unless stepID is the flow's
// current parallel_dispatch step, so a late report of a task whose step was
// already reported never lands in the next step's fan-out.
func recordParallelTask(st *FlowState, env Env, t ParallelTask) (Result, error) {
	ensureMaps(st)
	if pastEnd(st, env) || isFinished(st) {
		return refused(refusal(ErrTypeParallelComplete, "Flow is already complete")), nil
	}
	step := currentStep(st, env)
	if step.ID != t.StepID {
		return refused(refusal(ErrTypeStepMismatch, "Expected step '%s', got '%s'", step.ID, t.StepID)), nil
	}
	if step.Kind != specs.KindParallelDispatch {
		return refused(refusal(ErrTypeWrongStepType, "Step '%s' is a %s step, not parallel_dispatch.", step.ID, step.StepMode())), nil
	}
	if t.TaskID == "" {
		return refused(refusal(ErrTypeInvalidInput, "a parallel task needs a task_id")), nil
	}
	t.Dispatch = dispatchKey(st, step.ID)
	b, err := json.Marshal(t)
	if err != nil {
		return refused(refusal(ErrTypeInvalidInput, "task '%s': %v", t.TaskID, err)), nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return Result{}, err
	}
	if st.ParallelTasks == nil {
		st.ParallelTasks = map[string]any{}
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
	return Result{Events: []Event{event(st, env, EventParallelTask, step.ID, data)}}, nil
}

// RecordParallelTask is the Service form of RecordParallelTask
// (lease-checked like every report).
func (s *Service) RecordParallelTask(ctx context.Context, flowID string, t ParallelTask, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *FlowState, env Env) (Result, error) {
		return recordParallelTask(st, env, t)
	})
}

// ParallelDoneDetailed is ParallelDone whose failure violations (a merge
// conflict, an unsatisfied require) are followed by details (which task
// conflicted in which file, why each task failed), so the retry is told
// more than the original's one-line verdict.
func (s *Service) ParallelDoneDetailed(ctx context.Context, flowID, stepID string, taskResults []any, mergeStatus any, details []string, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *FlowState, env Env) (Result, error) {
		return parallelDoneDetailed(st, env, stepID, taskResults, mergeStatus, details)
	})
}

// ResolveStepInputs resolves a step's declared inputs against the flow
// state (what an execute_step dispatch carries), for steps whose dispatch
// does not carry them (parallel_dispatch).
func ResolveStepInputs(st *FlowState, step *specs.Step) (map[string]any, error) {
	return resolveInputs(st, step)
}

// Task is one task of a task graph, read from a decompose step's output or
// a parallel_dispatch step's source.
type Task struct {
	ID          string
	Description string
	FilesOwned  []string
	FilesRead   []string
	DependsOn   []string
	// Raw is the task object as given (what executors receive).
	Raw map[string]any
}

// ParseTasks reads a parallel_dispatch source: a list of task objects, each
// with a non-empty string id. A graph object {"tasks": [...]} is accepted
// too. The error says what was found instead.
func ParseTasks(source any) ([]Task, error) {
	if m, ok := source.(map[string]any); ok {
		if inner, ok := m["tasks"]; ok {
			source = inner
		}
	}
	list, ok := source.([]any)
	if !ok {
		return nil, fmt.Errorf("the source is %s, not a task list ([{id, description, files_owned, depends_on}, …])", describe(source))
	}
	tasks := make([]Task, 0, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("task %d is %s, not an object with an id", i, describe(item))
		}
		t := Task{Raw: m}
		t.ID, _ = m["id"].(string)
		if strings.TrimSpace(t.ID) == "" {
			return nil, fmt.Errorf("task %d has no id (a non-empty string)", i)
		}
		t.Description, _ = m["description"].(string)
		var err error
		if t.FilesOwned, err = stringList(m, "files_owned", t.ID); err != nil {
			return nil, err
		}
		if t.FilesRead, err = stringList(m, "files_read", t.ID); err != nil {
			return nil, err
		}
		if t.DependsOn, err = stringList(m, "depends_on", t.ID); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

func stringList(m map[string]any, key, id string) ([]string, error) {
	raw, ok := m[key]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		if ss, ok := raw.([]string); ok {
			return append([]string(nil), ss...), nil
		}
		return nil, fmt.Errorf("task '%s': %s is %s, not a list of strings", id, key, describe(raw))
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("task '%s': %s holds %s, not a string", id, key, describe(v))
		}
		out = append(out, s)
	}
	return out, nil
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("a string (%q)", clipText(x, 40))
	case bool:
		return "a boolean"
	case float64, int, int64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TaskGraphViolations checks a decompose step's output (a task graph:
// {"tasks": [...]}) before anything is dispatched: a task list of objects
// with ids, no duplicate id, no dependency on an unknown task or on
// itself, no cycle. Each problem is one violation, fed back to the retry.
func TaskGraphViolations(output any) []string {
	tasks, err := ParseTasks(output)
	if err != nil {
		return []string{"task graph: " + err.Error()}
	}
	return TaskListViolations(tasks)
}

// TaskListViolations checks parsed tasks (see TaskGraphViolations).
func TaskListViolations(tasks []Task) []string {
	var vs []string
	ids := map[string]bool{}
	for _, t := range tasks {
		if ids[t.ID] {
			vs = append(vs, fmt.Sprintf("task graph: duplicate task id '%s'", t.ID))
		}
		ids[t.ID] = true
	}
	for _, t := range tasks {
		for _, d := range t.DependsOn {
			switch {
			case d == t.ID:
				vs = append(vs, fmt.Sprintf("task graph: task '%s' depends on itself", t.ID))
			case !ids[d]:
				vs = append(vs, fmt.Sprintf("task graph: task '%s' depends on unknown task '%s'", t.ID, d))
			}
		}
	}
	if len(vs) > 0 {
		return vs
	}
	if cycle := findCycle(tasks); len(cycle) > 0 {
		vs = append(vs, "task graph: dependency cycle "+strings.Join(cycle, " → "))
	}
	return vs
}

// findCycle returns one dependency cycle (first node repeated at the end),
// or nil.
func findCycle(tasks []Task) []string {
	deps := map[string][]string{}
	var order []string
	for _, t := range tasks {
		if _, ok := deps[t.ID]; !ok {
			order = append(order, t.ID)
		}
		deps[t.ID] = t.DependsOn
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(id string) bool
	visit = func(id string) bool {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range deps[id] {
			switch color[d] {
			case grey:
				for i, s := range stack {
					if s == d {
						found = append(append([]string(nil), stack[i:]...), d)
						return true
					}
				}
			case white:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return false
	}
	for _, id := range order {
		if color[id] == white && visit(id) {
			return found
		}
	}
	return nil
}

// TaskPrompt renders a parallel_dispatch step's intent_template for a task
// as the original does (str.format with the task's keys; {task.KEY} reads
// the same keys): every {key} the task has is replaced; a template naming a
// key the task lacks is used as written.
func TaskPrompt(template string, task map[string]any) string {
	var b strings.Builder
	rest := template
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			b.WriteString(rest)
			break
		}
		key := strings.TrimPrefix(rest[i+1:i+j], "task.")
		v, ok := task[key]
		if !ok {
			return template
		}
		b.WriteString(rest[:i])
		if s, ok := v.(string); ok {
			b.WriteString(s)
		} else {
			raw, _ := json.Marshal(v)
			b.Write(raw)
		}
		rest = rest[i+j+1:]
	}
	return b.String()
}

// SortedTaskIDs returns the ids of a task map in order.
func SortedTaskIDs(m map[string]ParallelTask) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// AttemptTaskGraph is the kind of a failed attempt of a decompose step
// whose task graph is malformed (TaskGraphViolations).
const AttemptTaskGraph = "task_graph"

// RequireSatisfied evaluates a parallel_dispatch step's require (all: no
// failure; any: one complete; N: N complete) as ParallelDone does.
func RequireSatisfied(require string, completed, failed int) bool {
	return requireSatisfied(require, completed, failed)
}

// RequireUnsatisfiable reports whether require can no longer be met once
// the open tasks (pending or running) end, whatever their outcome: the
// fan-out may then cancel them (the original's cascade cancel).
func RequireUnsatisfiable(require string, completed, failed, open int) bool {
	return !requireSatisfied(require, completed+open, failed)
}

// ResolveSource resolves a parallel_dispatch step's source against the flow
// state (what its dispatch carries as tasks).
func ResolveSource(st *FlowState, step *specs.Step) (any, error) {
	return resolveValue(st, step.Source)
}

// LeaseLive reports whether a runner's lease owns the flow at now (reports
// from anyone else are refused with flow_owned).
func LeaseLive(st *FlowState, now time.Time) bool {
	return st.Owner != nil && st.Owner.ExpiresAt.After(now)
}

// LastParallelTasks is ParallelTasksOf for a step that may no longer be
// dispatched (it was reported): the tasks of its latest recorded dispatch.
func LastParallelTasks(st *FlowState, stepID string) map[string]ParallelTask {
	if dispatchKey(st, stepID) != "" {
		return ParallelTasksOf(st, stepID)
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
