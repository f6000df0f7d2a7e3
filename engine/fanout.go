package engine

import (
	"context"
	"encoding/json"

	"github.com/stratum-go/stratum/engine/state"
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

// recordParallelTask stores one task's state in the flow (a transition):
// recordParallelTasks of one task.
func recordParallelTask(st *state.FlowState, env transitionEnv, t state.ParallelTask) (transitionResult, error) {
	return recordParallelTasks(st, env, []state.ParallelTask{t})
}

// recordParallelTasks stores the state of tasks in the flow (a transition:
// one write for all of them, one parallel_task event each, in order). It is
// refused (wrong_step / wrong_step_type) unless every task belongs to the
// flow's current parallel_dispatch step, so a late report of a task whose
// step was already reported never lands in the next step's fan-out.
func recordParallelTasks(st *state.FlowState, env transitionEnv, tasks []state.ParallelTask) (transitionResult, error) {
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
	key := st.DispatchKey(step.ID)
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
		data := ParallelTask{TaskID: t.TaskID, State: t.State, Runs: t.Runs, DurationMS: t.DurationMS(env.Now), Branch: t.Branch}
		if t.WorktreePath != nil {
			data.Worktree = *t.WorktreePath
		}
		if t.Error != nil {
			data.Error = *t.Error
		}
		if len(t.Violations) > 0 {
			data.Violations = append([]string(nil), t.Violations...)
		}
		events = append(events, event(st, env, step.ID, data))
	}
	return transitionResult{Events: events}, nil
}

// taskRecord is a task as FlowState.ParallelTasks holds it (its JSON
// object).
func taskRecord(t state.ParallelTask) (map[string]any, error) {
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
func (s *Service) RecordParallelTask(ctx context.Context, flowID string, t state.ParallelTask, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return recordParallelTask(st, env, t)
	})
}

// ResolveStepInputs resolves a step's declared inputs against the flow
// state (what an execute_step dispatch carries), for steps whose dispatch
// does not carry them (parallel_dispatch).
func ResolveStepInputs(st *state.FlowState, step *specs.Step) (map[string]any, error) {
	return resolveInputs(st, step)
}

// ResolveSource resolves a parallel_dispatch step's source against the flow
// state (what its dispatch carries as tasks).
func ResolveSource(st *state.FlowState, step *specs.Step) (any, error) {
	return resolveValue(st, step.Source)
}
