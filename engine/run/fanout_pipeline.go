package run

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/fanout"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// The pipeline side of a fan-out (a pipeline step's task graph, compiled
// by engine.PipelineTasks): which task may start once its predecessors
// settled (a skipped stage lets the next one go on, a join waits for all
// its lanes), what a stage task settles to without running (skipped by
// its when, after its item's exit_when, or as a lane its split did not
// fill; a join whose lanes' require cannot be met is cancelled), its
// prompt ({item}, {prev}, {prevs}, {source}), and the items' verdicts kept
// incrementally for the require, which counts items.

// StepTasks is the task graph of a fan-out step from its resolved source:
// a parallel_dispatch's task list, or a pipeline's stage tasks.
func StepTasks(step *specs.Step, source any) ([]fanout.Task, error) {
	if step.Kind == specs.KindPipeline {
		return engine.PipelineTasks(step, source)
	}
	return fanout.ParseTasks(source)
}

// pipeline reports whether the fan-out runs a pipeline step.
func (f *FanOut) pipeline() bool { return f.Step.Kind == specs.KindPipeline }

// itemCount is what decides one item's verdict (fanout.ItemVerdicts, kept
// incrementally): its tasks outside the lanes (all, complete or skipped,
// failed or cancelled) and its lanes (all, settled).
type itemCount struct {
	stages, ok, bad int
	lanes, settled  int
}

func (c itemCount) status() string {
	switch {
	case c.bad > 0:
		return "failed"
	case c.ok == c.stages && c.settled == c.lanes:
		return "complete"
	}
	return "incomplete"
}

// pipeBook is a taskBook's pipeline bookkeeping.
type pipeBook struct {
	items                  []itemCount
	complete, failed, open int // items
	// exited: item → the stage whose exit_when ended its chain.
	exited map[int]int
}

func newPipeBook(tasks []fanout.Task) *pipeBook {
	p := &pipeBook{exited: map[int]int{}}
	for _, t := range tasks {
		for len(p.items) <= t.Stage.Item {
			p.items = append(p.items, itemCount{})
		}
		c := &p.items[t.Stage.Item]
		if t.Stage.Role == "lane" {
			c.lanes++
		} else {
			c.stages++
		}
	}
	for _, c := range p.items {
		p.count(c.status(), 1)
	}
	return p
}

func (p *pipeBook) count(status string, d int) {
	switch status {
	case "complete":
		p.complete += d
	case "failed":
		p.failed += d
	default:
		p.open += d
	}
}

// tally counts d tasks of t in taskState.
func (p *pipeBook) tally(t fanout.Task, taskState string, d int) {
	c := &p.items[t.Stage.Item]
	before := c.status()
	switch {
	case t.Stage.Role == "lane":
		if state.TaskTerminal(taskState) {
			c.settled += d
		}
	case taskState == state.TaskComplete || taskState == state.TaskSkipped:
		c.ok += d
	case state.TaskTerminal(taskState):
		c.bad += d
	}
	if after := c.status(); after != before {
		p.count(before, -1)
		p.count(after, 1)
	}
}

// proceeds reports whether a dependency that ended in depState lets its
// dependent k go on: complete, and in a pipeline skipped too; a join goes
// on once each of its lanes settled, however.
func (b *taskBook) proceeds(depState string, k int) bool {
	if depState == state.TaskComplete {
		return true
	}
	if b.pipe == nil {
		return false
	}
	if b.f.Tasks[k].Stage.Role == "join" {
		return state.TaskTerminal(depState)
	}
	return depState == state.TaskSkipped
}

// stageStart is how a pipeline task starts: settled without running (a
// skip or a cancelled join: settle set), or run with its prompt, in a
// worktree branched from base ("" = HEAD).
type stageStart struct {
	settle *state.ParallelTask
	prompt string
	base   string
}

// startStage decides how pipeline task t starts; its predecessors have
// settled.
func (f *FanOut) startStage(b *taskBook, t fanout.Task) stageStart {
	st := t.Stage
	pt := *f.state[t.ID]
	skip := func(result any, msg string) stageStart {
		pt.State, pt.Result = state.TaskSkipped, result
		pt.FinishedAt = fanout.UnixSeconds(time.Now())
		pt.Violations = []string{msg}
		return stageStart{settle: &pt}
	}
	prev, hasPrev := f.prevResult(t)
	passthrough := st.Source
	if hasPrev {
		passthrough = prev
	}
	if at, ok := b.pipe.exited[st.Item]; ok && at < st.Stage {
		return skip(passthrough, fmt.Sprintf("task '%s' skipped: item %d ended its chain at stage %d (exit_when)", t.ID, st.Item, at))
	}
	var list []any
	if st.Role == "lane" || st.Role == "join" {
		split := f.state[st.SplitID]
		if split.State != state.TaskComplete {
			pt.State = state.TaskCancelled
			msg := fmt.Sprintf("task '%s' did not run: its fanout stage '%s' %s", t.ID, st.SplitID, split.State)
			pt.Error, pt.Violations, pt.FinishedAt = &msg, []string{msg}, fanout.UnixSeconds(time.Now())
			return stageStart{settle: &pt}
		}
		list, _ = fanoutList(split.Result)
	}
	if st.Role == "lane" && st.Lane >= len(list) {
		return skip(nil, fmt.Sprintf("task '%s' skipped: lane %d is not filled (the fanout stage returned %d element%s)", t.ID, st.Lane, len(list), plural(len(list))))
	}
	vars := f.stageVars(t, list, prev, hasPrev)
	if st.Role == "join" {
		req := f.Step.Stages[f.splitStage()].Fanout.Require
		done := len(vars["prevs_raw"].([]any))
		if !laneRequireMet(req, done, min(len(list), len(t.DependsOn))) {
			pt.State = state.TaskCancelled
			msg := fmt.Sprintf("task '%s' cancelled: the fanout's require '%s' is not met (%d of %d lanes complete)", t.ID, req, done, len(list))
			pt.Error, pt.Violations, pt.FinishedAt = &msg, []string{msg}, fanout.UnixSeconds(time.Now())
			return stageStart{settle: &pt}
		}
	}
	if st.Spec.When != nil && !f.predicate(st.Spec.When, vars["item"], map[string]any{"prev": specs.TemplateText(prev), "prev_raw": prev}, true) {
		return skip(passthrough, fmt.Sprintf("task '%s' skipped: when '%s' is false", t.ID, st.Spec.When.Source))
	}
	prompt, _ := specs.FormatTemplate(st.Spec.IntentTemplate, vars)
	start := stageStart{prompt: prompt}
	if len(t.DependsOn) == 1 && st.Role != "join" {
		start.base = f.state[t.DependsOn[0]].Branch
	}
	return start
}

// prevResult is the result of t's single predecessor (none for a first
// stage or a join).
func (f *FanOut) prevResult(t fanout.Task) (any, bool) {
	if len(t.DependsOn) != 1 || t.Stage.Role == "join" {
		return nil, false
	}
	return f.state[t.DependsOn[0]].Result, true
}

// stageVars are the names t's template binds: a dict item's keys, item,
// prev/prev_raw (after a first stage), source/source_raw (lanes and
// joins), prevs/prevs_raw (joins: the complete lanes' results, in lane
// order).
func (f *FanOut) stageVars(t fanout.Task, list []any, prev any, hasPrev bool) map[string]any {
	st := t.Stage
	vars := make(map[string]any, len(t.Raw)+4)
	for k, v := range t.Raw {
		vars[k] = v
	}
	if hasPrev {
		vars["prev"], vars["prev_raw"] = prev, prev
	}
	switch st.Role {
	case "lane":
		vars["item"] = list[st.Lane]
		vars["source"], vars["source_raw"] = st.Source, st.Source
		if t.DependsOn[0] == st.SplitID {
			vars["prev"], vars["prev_raw"] = list[st.Lane], list[st.Lane]
		}
	case "join":
		prevs := []any{}
		for k, d := range t.DependsOn {
			if k < len(list) && f.state[d].State == state.TaskComplete {
				prevs = append(prevs, f.state[d].Result)
			}
		}
		vars["prevs"], vars["prevs_raw"] = prevs, prevs
		vars["source"], vars["source_raw"] = st.Source, st.Source
	}
	return vars
}

// predicate evaluates a stage's when (an error counts as onError: a when
// that cannot be evaluated runs the stage, an exit_when does not end the
// chain, as in the original).
func (f *FanOut) predicate(e *specs.Expr, item any, vars map[string]any, onError bool) bool {
	ok, err := e.EvalBoolContext(context.Background(), specs.EvalEnv{Item: item, Vars: vars, Root: f.Dir})
	if err != nil {
		return onError
	}
	return ok
}

// exitWhen records that t's item ends its chain after t (its exit_when is
// true on t's result).
func (f *FanOut) exitWhen(b *taskBook, t fanout.Task, result any) {
	e := t.Stage.Spec.ExitWhen
	if e == nil {
		return
	}
	if f.predicate(e, t.Stage.Source, map[string]any{"result": specs.TemplateText(result), "result_raw": result}, false) {
		if at, ok := b.pipe.exited[t.Stage.Item]; !ok || t.Stage.Stage < at {
			b.pipe.exited[t.Stage.Item] = t.Stage.Stage
		}
	}
}

// splitStage is the index of the pipeline's fanout stage (-1: none).
func (f *FanOut) splitStage() int {
	for i := range f.Step.Stages {
		if f.Step.StageRole(i) == "split" {
			return i
		}
	}
	return -1
}

// fanoutList is a fanout stage's result as the list its lanes run over:
// a list, or a string holding a JSON array (the original's contract).
func fanoutList(result any) ([]any, error) {
	switch x := result.(type) {
	case []any:
		return x, nil
	case string:
		var l []any
		if err := json.Unmarshal([]byte(strings.TrimSpace(x)), &l); err != nil {
			return nil, fmt.Errorf("fanout stage result is not a JSON array")
		}
		return l, nil
	}
	return nil, fmt.Errorf("fanout stage result is not a list")
}

// splitViolation checks a fanout stage's result: a list of at most max
// elements.
func splitViolation(t fanout.Task, result any) string {
	l, err := fanoutList(result)
	if err != nil {
		return fmt.Sprintf("task '%s': %v", t.ID, err)
	}
	if max := t.Stage.Spec.Fanout.Max; len(l) > max {
		return fmt.Sprintf("task '%s': fanout list length %d exceeds max %d", t.ID, len(l), max)
	}
	return ""
}

// laneRequireMet is a fanout's require over its filled lanes: all = each
// complete (an empty list too), any = one, N = N.
func laneRequireMet(require string, complete, filled int) bool {
	switch require {
	case "", "all":
		return complete == filled
	case "any":
		return complete >= 1
	}
	n, err := strconv.Atoi(require)
	if err != nil {
		return complete == filled
	}
	return complete >= n
}

// executorFor is the executor of task t and its name: a pipeline stage
// that names an agent runs it (unless the step is a run: command).
func (f *FanOut) executorFor(t fanout.Task) (engine.Executor, string) {
	if t.Stage != nil && t.Stage.Spec.Agent != "" && f.Step.Run == nil && f.AgentExecutor != nil {
		return f.AgentExecutor, "agent"
	}
	return f.Executor, f.Kind
}

// itemVerdicts are the pipeline's items' verdicts from the tasks' states.
func (f *FanOut) itemVerdicts() []fanout.ItemVerdict {
	return fanout.ItemVerdicts(f.Tasks, func(id string) string { return f.state[id].State })
}

// itemOf names the item a pipeline task belongs to (its chain: the files
// one item's stages change one after the other are no conflict).
func (f *FanOut) itemOf(id string) string {
	if i, _, _, ok := fanout.ParsePipelineTaskID(f.Step.ID, id); ok {
		return "item" + strconv.Itoa(i)
	}
	return id
}

// mergedTasks are the tasks whose branches a merge applies: the complete
// ones; of a pipeline, those of the items whose chain completed (an item
// that failed half-way leaves nothing behind).
func (f *FanOut) mergedTasks(res *FanOutResult) map[string]bool {
	out := map[string]bool{}
	var ok map[int]bool
	if f.pipeline() {
		ok = map[int]bool{}
		for _, v := range f.itemVerdicts() {
			ok[v.Item] = v.Status == "complete"
		}
	}
	for i, t := range res.Tasks {
		if t.State != state.TaskComplete {
			continue
		}
		if ok != nil && !ok[f.Tasks[i].Stage.Item] {
			continue
		}
		out[t.TaskID] = true
	}
	return out
}
