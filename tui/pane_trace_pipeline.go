package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// A pipeline step's tasks (<step>::item<i>::stage<j>[::lane<k>]) are shown
// as a grid: one trace row per item — its current stage, that stage's
// state and duration, and a mark per stage (✓ complete, ↷ skipped, ✗
// failed or cancelled, ▶ running, · not yet) — so hundreds of items read as
// hundreds of rows, not items × stages.

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

// itemRow is what the trace knows of one pipeline item: each stage's
// latest state (lanes folded into their stage: the worst one), and the
// latest event of its furthest stage.
type itemRow struct {
	states []string
	last   engine.ParallelTask
	stage  int
}

// add folds a task event of the item's stage in.
func (r *itemRow) add(stage int, d engine.ParallelTask) {
	for len(r.states) <= stage {
		r.states = append(r.states, "")
	}
	if cur := r.states[stage]; cur == "" || stateRank(d.State) >= stateRank(cur) || !state.TaskTerminal(cur) {
		r.states[stage] = d.State
	}
	if stage >= r.stage {
		r.stage, r.last = stage, d
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

// line is the item's trace row.
func (r *itemRow) line(c *common, ev *engine.Event, stepID string, item int) traceLine {
	var marks strings.Builder
	failed := false
	for _, s := range r.states {
		marks.WriteString(stageMark(s))
		failed = failed || s == state.TaskFailed || s == state.TaskCancelled
	}
	text := fmt.Sprintf("⇶ %s item %d %s stage %d %s", stepID, item, marks.String(), r.stage+1, r.last.State)
	if r.last.DurationMS > 0 {
		text += " " + (time.Duration(r.last.DurationMS) * time.Millisecond).String()
	}
	tl := traceLine{seq: ev.Seq, text: ev.Time.UTC().Format("15:04:05") + " " + clean(text)}
	detail := strings.Join(r.last.Violations, "\n")
	if detail == "" {
		detail = r.last.Error
	}
	tl.detail = clean(detail)
	done := len(r.states) > 0
	for _, s := range r.states {
		done = done && (s == state.TaskComplete || s == state.TaskSkipped)
	}
	switch {
	case failed:
		tl.style = c.st.Failed.Render
	case done && state.TaskTerminal(r.last.State):
		tl.style = c.st.OK.Render
	}
	return tl
}
