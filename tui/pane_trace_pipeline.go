package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// A pipeline step's tasks (<step>::item<i>::stage<j>[::lane<k>]) are shown
// as a grid: one trace row per item, its item number aligned, a mark per
// stage of the step (✓ complete, ↷ skipped, ✗ failed or cancelled, ▶
// running, · not reached yet), its current stage of all (the furthest one
// started; the one that failed, once one did), that stage's state and
// duration (a running stage's counted to now). Hundreds of items read as
// hundreds of short rows, not items × stages; enter shows why an item
// failed. The stage count comes from the flow's stored spec (a stage no
// task reached yet still has its column) and from the tasks recorded
// (a run records every task pending before any starts).

var pipelineTaskRe = regexp.MustCompile(`^(.+)::item(\d+)::stage(\d+)(?:::lane\d+)?$`)

// pipelineTask parses a pipeline task id of step stepID: its item and
// stage.
func pipelineTask(stepID, taskID string) (item, stage int, ok bool) {
	m := pipelineTaskRe.FindStringSubmatch(taskID)
	if m == nil || m[1] != stepID {
		return 0, 0, false
	}
	item, _ = strconv.Atoi(m[2])
	stage, _ = strconv.Atoi(m[3])
	return item, stage, true
}

// pipelineStages are the stage counts of flow's pipeline steps, by step
// id (nil: no flow, or no pipeline).
func pipelineStages(flow *specs.Flow) map[string]int {
	if flow == nil {
		return nil
	}
	var out map[string]int
	for _, s := range flow.Steps {
		if s.Kind == specs.KindPipeline {
			if out == nil {
				out = map[string]int{}
			}
			out[s.ID] = len(s.Stages)
		}
	}
	return out
}

// stageEvent is the latest record of one stage of an item (lanes folded
// in: the worst state shows), and the output of its latest call.
type stageEvent struct {
	state  string
	data   engine.ParallelTask
	at     time.Time
	output string
}

// itemRow is what the trace knows of one pipeline item: its stages'
// latest records, and where its row is.
type itemRow struct {
	stepID string
	item   int
	row    int    // its index in the trace's lines
	seq    uint64 // its first event's: stable, so an expanded row stays so
	stages []stageEvent
}

// add folds a task event of the item's stage in.
func (r *itemRow) add(stage int, ev *engine.Event) {
	for len(r.stages) <= stage {
		r.stages = append(r.stages, stageEvent{})
	}
	cur := r.stages[stage]
	task, _ := ev.Data.(engine.ParallelTask)
	if cur.state == "" || stateRank(task.State) >= stateRank(cur.state) || !state.TaskTerminal(cur.state) {
		r.stages[stage] = stageEvent{state: task.State, data: task, at: ev.Time, output: cur.output}
	}
}

// stateRank orders states for folding lanes: a failure shows over a
// completion.
func stateRank(s string) int {
	switch s {
	case state.TaskFailed, state.TaskCancelled:
		return 3
	case state.TaskRunning:
		return 2
	case state.TaskComplete, state.TaskSkipped:
		return 1
	}
	return 0
}

func stageMark(s string) string {
	switch s {
	case state.TaskComplete:
		return "✓"
	case state.TaskSkipped:
		return "↷"
	case state.TaskFailed, state.TaskCancelled:
		return "✗"
	case state.TaskRunning:
		return "▶"
	}
	return "·"
}

func failedState(s string) bool { return s == state.TaskFailed || s == state.TaskCancelled }

// current is the item's current stage: the first that failed, else the
// furthest one started (0 when none did).
func (r *itemRow) current() int {
	cur := 0
	for j, s := range r.stages {
		if failedState(s.state) {
			return j
		}
		if s.state != "" && s.state != state.TaskPending {
			cur = j
		}
	}
	return cur
}

// line is the item's trace row: stages columns (at least the spec's),
// numbers padded to width digits.
func (r *itemRow) line(c *common, stages, width int) traceLine {
	n := max(stages, len(r.stages))
	var marks strings.Builder
	failed, done := false, len(r.stages) == n && n > 0
	for j := range n {
		s := ""
		if j < len(r.stages) {
			s = r.stages[j].state
		}
		marks.WriteString(stageMark(s))
		failed = failed || failedState(s)
		done = done && (s == state.TaskComplete || s == state.TaskSkipped)
	}
	cur := r.current()
	se := stageEvent{state: state.TaskPending}
	if cur < len(r.stages) && r.stages[cur].state != "" {
		se = r.stages[cur]
	}
	text := fmt.Sprintf("⇶ %s item %-*d %s stage %d/%d %s", r.stepID, width, r.item, marks.String(), cur+1, n, se.state)
	if d := stageDuration(c, se); d > 0 {
		text += " " + d.String()
	}
	tl := traceLine{seq: r.seq, text: se.at.UTC().Format("15:04:05") + " " + clean(text)}
	if se.at.IsZero() && len(r.stages) > 0 {
		tl.text = r.stages[0].at.UTC().Format("15:04:05") + " " + clean(text)
	}
	detail := strings.Join(se.data.Violations, "\n")
	if detail == "" {
		detail = se.data.Error
	}
	if detail == "" {
		detail = se.output
	}
	tl.detail = clean(detail)
	switch {
	case failed:
		tl.style = c.st.Failed.Render
	case done:
		tl.style = c.st.OK.Render
	}
	return tl
}

// stageDuration is how long a stage ran: as recorded, and for a running
// one until now.
func stageDuration(c *common, se stageEvent) time.Duration {
	d := time.Duration(se.data.DurationMS) * time.Millisecond
	if se.state == state.TaskRunning && c.now != nil && !se.at.IsZero() {
		if since := c.now().Sub(se.at); since > 0 {
			d += since
		}
	}
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// pipelineGrid collects the item rows of the trace's pipeline steps.
type pipelineGrid struct {
	rows  map[string]*itemRow // by step, dispatch and item
	order []*itemRow
	width map[string]int // the digits of each step's largest item number
	// dispatches counts each step's dispatches so far: a step dispatched
	// again (its retry, a new round) runs its tasks anew, in new rows.
	dispatches map[string]int
}

func (g *pipelineGrid) init() {
	if g.rows == nil {
		g.rows, g.width, g.dispatches = map[string]*itemRow{}, map[string]int{}, map[string]int{}
	}
}

// dispatched notes a dispatch of step stepID.
func (g *pipelineGrid) dispatched(stepID string) {
	g.init()
	g.dispatches[stepID]++
}

// key is the row key of an item of step stepID in its current dispatch.
func (g *pipelineGrid) key(stepID string, item int) string {
	return stepID + "\x00" + strconv.Itoa(g.dispatches[stepID]) + "\x00" + strconv.Itoa(item)
}

// add folds a pipeline task's event in; a new item takes row next (the
// trace's next line) and add reports that it did.
func (g *pipelineGrid) add(ev *engine.Event, item, stage, next int) (created bool) {
	g.init()
	key := g.key(ev.StepID, item)
	r := g.rows[key]
	if r == nil {
		r = &itemRow{stepID: ev.StepID, item: item, row: next, seq: ev.Seq}
		g.rows[key] = r
		g.order = append(g.order, r)
		created = true
		g.width[ev.StepID] = max(g.width[ev.StepID], len(strconv.Itoa(item)))
	}
	r.add(stage, ev)
	return created
}

// call takes in a runner call's event (a trace record) made for a task of
// an item the grid shows: its output becomes the stage's (what enter
// shows when the stage did not fail), and call reports that the call
// needs no row of its own.
func (g *pipelineGrid) call(ev *engine.Event, output string) bool {
	call, _ := ev.Data.(engine.Trace)
	item, stage, ok := pipelineTask(ev.StepID, call.TaskID)
	if !ok {
		return false
	}
	r := g.rows[g.key(ev.StepID, item)]
	if r == nil {
		return false
	}
	if stage < len(r.stages) {
		r.stages[stage].output = output
	}
	return true
}

// render writes the item rows into their places in out and drops those
// the filter does not match (the trace's other rows were filtered as they
// came).
func (g *pipelineGrid) render(c *common, out []traceLine, filter string) []traceLine {
	if len(g.order) == 0 {
		return out
	}
	keep := make([]bool, len(out))
	for i := range keep {
		keep[i] = true
	}
	for _, r := range g.order {
		out[r.row] = r.line(c, c.detailStages[r.stepID], g.width[r.stepID])
		keep[r.row] = matches(filter, out[r.row].text)
	}
	kept := out[:0]
	for i, tl := range out {
		if keep[i] {
			kept = append(kept, tl)
		}
	}
	return kept
}
