package engine

import (
	"fmt"

	"github.com/stratum-go/stratum/engine/internal/fanout"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// A pipeline step runs as a parallel_dispatch over its task graph (a task
// per source item and stage, fanout/ExpandPipeline): its dispatch lists
// that graph and its stages, and its result counts items, not tasks (the
// original's STRAT-WORKFLOW-PIPELINE).

// pipelineDispatchTasks is the task graph a pipeline step's dispatch
// lists (the original's task objects); a source that is not a list gives
// none, as in the original.
func pipelineDispatchTasks(step *specs.Step, source any) []any {
	tasks, err := fanout.ExpandPipeline(step, source)
	if err != nil {
		return []any{}
	}
	out := make([]any, len(tasks))
	for i, t := range tasks {
		out[i] = t.Raw
	}
	return out
}

// PipelineTasks compiles a pipeline step's resolved source into its task
// graph (fanout.ExpandPipeline) for the drivers that run it.
func PipelineTasks(step *specs.Step, source any) ([]fanout.Task, error) {
	return fanout.ExpandPipeline(step, source)
}

// pipelineStages are a pipeline step's stages as its dispatch lists them
// (the keys the spec gives).
func pipelineStages(step *specs.Step) []any {
	out := make([]any, len(step.Stages))
	for i, st := range step.Stages {
		m := map[string]any{"intent_template": st.IntentTemplate}
		if st.Agent != "" {
			m["agent"] = st.Agent
		}
		if st.TaskTimeout > 0 {
			m["task_timeout"] = st.TaskTimeout
		}
		if st.TaskReasoningTemplate != nil {
			m["task_reasoning_template"] = st.TaskReasoningTemplate
		}
		if st.When != nil {
			m["when"] = st.When.Source
		}
		if st.ExitWhen != nil {
			m["exit_when"] = st.ExitWhen.Source
		}
		if st.Fanout != nil {
			m["fanout"] = map[string]any{"max": st.Fanout.Max, "require": requireWire(st.Fanout.Require)}
		}
		if st.Join {
			m["join"] = true
		}
		out[i] = m
	}
	return out
}

func requireWire(r string) any {
	var n int
	if _, err := fmt.Sscanf(r, "%d", &n); err == nil {
		return n
	}
	return r
}

// hasFanoutRegion reports whether a pipeline step fans out (a fanout and a
// join stage).
func hasFanoutRegion(step *specs.Step) bool {
	for i := range step.Stages {
		if step.StageRole(i) == "split" {
			return true
		}
	}
	return false
}

// pipelineAggregate is a pipeline step's result from its tasks' results:
// {items, require_satisfied, merge_status, tasks, outcome}, items[] one
// per source item ({item, status, result, stages}); the require counts
// items whose chain completed. violation is the require's failure text
// ("" when satisfied).
func pipelineAggregate(st *state.FlowState, step *specs.Step, tasks []any, ms string) (map[string]any, string, error) {
	source, err := resolveValue(st, step.Source)
	if err != nil {
		return nil, "", err
	}
	graph, err := fanout.ExpandPipeline(step, source)
	if err != nil {
		return nil, "", refusal(ErrTypeInvalidInput, "pipeline step '%s': %v", step.ID, err)
	}
	reported := map[string]map[string]any{}
	completed, failed := 0, 0
	for _, t := range tasks {
		m, _ := t.(map[string]any)
		if m == nil {
			failed++
			continue
		}
		id, _ := m["task_id"].(string)
		reported[id] = m
		switch m["status"] {
		case "complete":
			completed++
		case "skipped":
		default:
			failed++
		}
	}
	status := func(id string) string {
		if m := reported[id]; m != nil {
			s, _ := m["status"].(string)
			return s
		}
		return "missing"
	}
	verdicts := fanout.ItemVerdicts(graph, status)
	sources := map[int]any{}
	for _, t := range graph {
		sources[t.Stage.Item] = t.Stage.Source
	}
	items := make([]any, len(verdicts))
	for i, v := range verdicts {
		stages := make([]any, len(v.Stages))
		for j, id := range v.Stages {
			if m := reported[id]; m != nil {
				stages[j] = m["result"]
			}
		}
		var result any
		if v.Status == "complete" && len(stages) > 0 {
			result = stages[len(stages)-1]
		}
		items[i] = map[string]any{"item": sources[v.Item], "status": v.Status, "result": result, "stages": stages}
	}
	require := orStr(step.Require, "all")
	ok := fanout.PipelineRequireSatisfied(require, verdicts)
	agg := map[string]any{"items": items, "require_satisfied": ok, "merge_status": ms, "tasks": tasks}
	if ok {
		return agg, "", nil
	}
	return agg, fmt.Sprintf("require='%s' not satisfied: %d completed, %d failed", require, completed, failed), nil
}
