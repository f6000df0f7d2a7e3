package fanout

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/specs"
)

// A pipeline step compiles onto the same task graph as a parallel_dispatch
// (the original's desugar, STRAT-WORKFLOW-PIPELINE §2): for source item i
// and stage j one task "<step>::item<i>::stage<j>" depending on the same
// item's previous stage, so each item moves through the stages on its own
// and no stage waits for another item. Inside a fan-out region (a stage
// with fanout: {max: K}, lane stages, a join stage) each lane stage has K
// tasks "<step>::item<i>::stage<j>::lane<k>" and the join depends on all
// K lanes. The ids depend only on the source's length and the stages, so
// every call derives the same graph (a resumed run, MCP's
// start/poll/done/advance).

// StageTask is where a task of a pipeline step sits in its step's grid.
type StageTask struct {
	Item  int // index of the source item
	Stage int // index of the stage
	Lane  int // index of the lane in a fan-out region; -1 outside one
	// Role is "plain", "split" (the fanout stage), "lane" or "join".
	Role string
	// Source is the source item.
	Source any
	// Spec is the stage.
	Spec *specs.Stage
	// SplitID is the id of the item's split task (lane and join tasks).
	SplitID string
}

// PipelineTaskID is the id of the task of item i, stage j (lane k when
// k >= 0): the original's ids.
func PipelineTaskID(step string, i, j, k int) string {
	id := step + "::item" + strconv.Itoa(i) + "::stage" + strconv.Itoa(j)
	if k >= 0 {
		id += "::lane" + strconv.Itoa(k)
	}
	return id
}

// reservedTaskKeys are the keys of a pipeline task object that a dict
// item's own keys never overwrite.
var reservedTaskKeys = map[string]bool{"id": true, "depends_on": true, "item": true}

// ExpandPipeline compiles a pipeline step over its resolved source (a list
// of items, each anything) into its task graph, in item order and, within
// an item, stage order. Each task's Raw is the original's task object
// ({id, depends_on, item, _pipeline_item, _pipeline_stage,
// _pipeline_role, _intent_template, _agent, …} with a dict item's keys
// beside them), which the dispatch of the step lists.
func ExpandPipeline(step *specs.Step, source any) ([]Task, error) {
	items, ok := source.([]any)
	if !ok {
		return nil, fmt.Errorf("the source is %s, not a list of items", describe(source))
	}
	split := -1
	for j := range step.Stages {
		if step.StageRole(j) == "split" {
			split = j
		}
	}
	lanes := 0
	if split >= 0 {
		lanes = step.Stages[split].Fanout.Max
	}
	tasks := make([]Task, 0, len(items)*len(step.Stages))
	for i, item := range items {
		for j := range step.Stages {
			role := step.StageRole(j)
			if role != "lane" {
				t := stageTask(step, i, j, -1, role, item)
				switch {
				case role == "join":
					for k := 0; k < lanes; k++ {
						t.DependsOn = append(t.DependsOn, PipelineTaskID(step.ID, i, j-1, k))
					}
				case j > 0:
					t.DependsOn = []string{PipelineTaskID(step.ID, i, j-1, -1)}
				}
				if role == "split" {
					t.Raw["_fanout_max"] = lanes
				}
				if role == "join" {
					t.Raw["_fanout_require"] = requireValue(step.Stages[split].Fanout.Require)
					t.Stage.SplitID = PipelineTaskID(step.ID, i, split, -1)
				}
				t.Raw["depends_on"] = anyList(t.DependsOn)
				tasks = append(tasks, t)
				continue
			}
			for k := 0; k < lanes; k++ {
				t := stageTask(step, i, j, k, role, item)
				if j == split+1 {
					t.DependsOn = []string{PipelineTaskID(step.ID, i, split, -1)}
				} else {
					t.DependsOn = []string{PipelineTaskID(step.ID, i, j-1, k)}
				}
				t.Stage.SplitID = PipelineTaskID(step.ID, i, split, -1)
				t.Raw["_fanout_lane"] = k
				t.Raw["_fanout_split_id"] = t.Stage.SplitID
				t.Raw["depends_on"] = anyList(t.DependsOn)
				tasks = append(tasks, t)
			}
		}
	}
	return tasks, nil
}

// stageTask is the task of item i at stage j (lane k).
func stageTask(step *specs.Step, i, j, k int, role string, item any) Task {
	st := step.Stages[j]
	id := PipelineTaskID(step.ID, i, j, k)
	raw := map[string]any{
		"id": id, "item": item,
		"_pipeline_item": i, "_pipeline_stage": j, "_pipeline_role": role,
		"_intent_template": st.IntentTemplate, "_agent": nullable(st.Agent),
		"_task_timeout": nil, "_task_reasoning_template": st.TaskReasoningTemplate,
		"_when": nil, "_exit_when": nil,
	}
	if st.TaskTimeout > 0 {
		raw["_task_timeout"] = st.TaskTimeout
	}
	if st.When != nil {
		raw["_when"] = st.When.Source
	}
	if st.ExitWhen != nil {
		raw["_exit_when"] = st.ExitWhen.Source
	}
	// Lane tasks do not take the item's keys: their {item} is the lane's
	// element (the source item is {source}).
	if m, ok := item.(map[string]any); ok && role != "lane" {
		for key, v := range m {
			if _, taken := raw[key]; !taken && !reservedTaskKeys[key] && (key == "" || key[0] != '_') {
				raw[key] = v
			}
		}
	}
	return Task{ID: id, Raw: raw, Stage: &StageTask{Item: i, Stage: j, Lane: k, Role: role, Source: item, Spec: st}}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func anyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// requireValue is a require as the original's JSON has it: "all", "any"
// or a number.
func requireValue(r string) any {
	if n, err := strconv.Atoi(r); err == nil {
		return n
	}
	return r
}

// ItemVerdict is where one source item of a pipeline stands.
type ItemVerdict struct {
	Item int
	// Status is "complete" (every stage outside the lanes complete or
	// skipped, every lane settled), "failed" (a stage outside the lanes
	// failed or was cancelled — a join is cancelled when its lanes' require
	// cannot be met) or "incomplete".
	Status string
	// Stages are the task ids of the item's stages outside the lanes, in
	// order (the original's items[].stages, one per stage).
	Stages []string
	// Lanes are the ids of the item's lane tasks.
	Lanes []string
}

// ItemVerdicts collapses a pipeline's task states (status by task id:
// complete, skipped, failed, cancelled, pending, running; a task absent
// from status is missing) into one verdict per source item, in item
// order: the original's _collapse_pipeline_items. The require of a
// pipeline step counts items, not tasks.
func ItemVerdicts(tasks []Task, status func(id string) string) []ItemVerdict {
	var out []ItemVerdict
	for _, t := range tasks {
		if t.Stage == nil {
			continue
		}
		for len(out) <= t.Stage.Item {
			out = append(out, ItemVerdict{Item: len(out)})
		}
		v := &out[t.Stage.Item]
		if t.Stage.Role == "lane" {
			v.Lanes = append(v.Lanes, t.ID)
		} else {
			v.Stages = append(v.Stages, t.ID)
		}
	}
	for i := range out {
		out[i].Status = itemStatus(out[i], status)
	}
	return out
}

func itemStatus(v ItemVerdict, status func(id string) string) string {
	done := len(v.Stages) > 0
	for _, id := range v.Stages {
		switch status(id) {
		case "failed", "cancelled":
			return "failed"
		case "complete", "skipped":
		default:
			done = false
		}
	}
	for _, id := range v.Lanes {
		switch status(id) {
		case "complete", "skipped", "failed", "cancelled":
		default:
			done = false
		}
	}
	if done {
		return "complete"
	}
	return "incomplete"
}

// ItemCounts counts verdicts: complete, failed, and open (incomplete).
func ItemCounts(vs []ItemVerdict) (complete, failed, open int) {
	for _, v := range vs {
		switch v.Status {
		case "complete":
			complete++
		case "failed":
			failed++
		default:
			open++
		}
	}
	return
}

// PipelineRequireSatisfied is a pipeline step's require over its items'
// verdicts: all = every item complete (and at least one item), any = one,
// N = N. An item still incomplete is not a pass.
func PipelineRequireSatisfied(require string, vs []ItemVerdict) bool {
	complete, _, _ := ItemCounts(vs)
	switch require {
	case "", "all":
		return len(vs) > 0 && complete == len(vs)
	case "any":
		return complete >= 1
	}
	n, err := strconv.Atoi(require)
	if err != nil {
		return len(vs) > 0 && complete == len(vs)
	}
	return complete >= n
}

// ParsePipelineTaskID reads a task id of pipeline step `step`: its item,
// stage and lane (-1 outside a lane); ok is false for any other id.
func ParsePipelineTaskID(step, id string) (item, stage, lane int, ok bool) {
	rest, found := strings.CutPrefix(id, step+"::item")
	if !found {
		return 0, 0, 0, false
	}
	parts := strings.Split(rest, "::")
	if len(parts) < 2 || len(parts) > 3 || !strings.HasPrefix(parts[1], "stage") {
		return 0, 0, 0, false
	}
	var err error
	if item, err = strconv.Atoi(parts[0]); err != nil || item < 0 {
		return 0, 0, 0, false
	}
	if stage, err = strconv.Atoi(strings.TrimPrefix(parts[1], "stage")); err != nil || stage < 0 {
		return 0, 0, 0, false
	}
	lane = -1
	if len(parts) == 3 {
		l, found := strings.CutPrefix(parts[2], "lane")
		if lane, err = strconv.Atoi(l); !found || err != nil || lane < 0 {
			return 0, 0, 0, false
		}
	}
	return item, stage, lane, true
}
