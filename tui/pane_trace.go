package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// tracePaneDef registers the Trace pane: the live records of the detail
// flow (attempts, durations, violations, cost, decisions); enter expands a
// record to its output.
var tracePaneDef = paneDef{title: "Trace", new: func(keyGroup) pane { return &tracePane{expanded: map[uint64]bool{}} }}

type tracePane struct {
	paneBase
	expanded map[uint64]bool // records expanded, by event sequence number
	// top is the first row on screen (rows: entries and the lines of the
	// expanded ones), kept so that the selected entry is always on screen.
	top int
	// detail scrolls the selected entry's expanded lines when they do not
	// fit; reading is the entry it scrolls.
	detail  scrollView
	reading uint64
}

var (
	_ detailPane = (*tracePane)(nil)
	_ reader     = (*tracePane)(nil)
	_ pagerPane  = (*tracePane)(nil)
)

func (p *tracePane) showsDetail() {}

type traceLine struct {
	seq    uint64
	text   string
	detail string // shown when expanded
	style  func(...string) string
}

// lines builds the trace of the detail flow from its events: attempts,
// durations, violations, cost (runner trace records), gate decisions,
// checkpoints and iteration reports.
//
// Attempts are counted in each round (a revise starts a round: the step's
// first attempt in it is attempt 1 again), and a step's duration is the
// execution time of that attempt: the runner's calls for it when it
// made any, else from the attempt's dispatch (or the previous attempt's
// failure) to its report, in that round — never counted from an earlier
// round's dispatch or across a gate's wait.
func (p *tracePane) lines(c *common) []traceLine {
	if c.detail == nil {
		return nil
	}
	r := newTraceRound(c)
	out := make([]traceLine, 0, len(c.detailEvents))
	taskRow := map[string]int{} // a fan-out task's row: its latest state
	var grid pipelineGrid       // a pipeline item's row, rendered at the end
	for i := range c.detailEvents {
		ev := &c.detailEvents[i]
		if ev.Type == engine.EventParallelTask {
			task, _ := ev.Data.(engine.ParallelTask)
			if item, stage, ok := pipelineTask(ev.StepID, task.TaskID); ok {
				if grid.add(ev, item, stage, len(out)) {
					out = append(out, traceLine{})
				}
				continue
			}
			tl := taskLine(c, ev, &task)
			key := ev.StepID + "\x00" + task.TaskID
			if i, ok := taskRow[key]; ok {
				out[i] = tl
				continue
			}
			if !matches(p.filter, tl.text) {
				continue
			}
			taskRow[key] = len(out)
			out = append(out, tl)
			continue
		}
		if ev.Type == engine.EventStepDispatched {
			grid.dispatched(ev.StepID)
		}
		tl := traceLine{seq: ev.Seq}
		text, detail := r.describe(ev, &tl)
		if ev.Type == engine.EventTrace && grid.call(ev, detail) {
			continue // a pipeline task's call: its item's row tells it
		}
		tl.text = ev.Time.UTC().Format("15:04:05") + " " + clean(strings.TrimRight(text, " "))
		tl.detail = clean(detail)
		if !matches(p.filter, tl.text) {
			continue
		}
		out = append(out, tl)
	}
	return grid.render(c, out, p.filter)
}

// taskLine is a fan-out task's row, styled by its state.
func taskLine(c *common, ev *engine.Event, task *engine.ParallelTask) traceLine {
	tl := traceLine{seq: ev.Seq}
	text, detail := taskText(ev.StepID, task)
	switch task.State {
	case state.TaskComplete:
		tl.style = c.st.OK.Render
	case state.TaskFailed, state.TaskCancelled:
		tl.style = c.st.Failed.Render
	}
	tl.text = ev.Time.UTC().Format("15:04:05") + " " + clean(text)
	tl.detail = clean(detail)
	return tl
}

// traceRound is what the trace counts within a review round: the failed
// attempts of each step, when each step's current attempt began, and the
// runner's call time in it. A revise starts a new round.
type traceRound struct {
	c        *common
	round    int
	attempts map[string]int
	started  map[string]time.Time
	callMS   map[string]int64
}

func newTraceRound(c *common) *traceRound {
	r := &traceRound{c: c}
	r.reset()
	return r
}

func (r *traceRound) reset() {
	r.attempts, r.started, r.callMS = map[string]int{}, map[string]time.Time{}, map[string]int64{}
}

// took is the duration of the step's current attempt, ending at ev.
func (r *traceRound) took(ev *engine.Event) string {
	defer delete(r.callMS, ev.StepID)
	if ms := r.callMS[ev.StepID]; ms > 0 {
		return " " + (time.Duration(ms) * time.Millisecond).String()
	}
	t0, ok := r.started[ev.StepID]
	if !ok || !ev.Time.After(t0) {
		return ""
	}
	return " " + ev.Time.Sub(t0).Round(time.Millisecond).String()
}

// describe is the text and detail of one event's row; it sets the row's
// style and advances the round's counts.
func (r *traceRound) describe(ev *engine.Event, tl *traceLine) (text, detail string) {
	c, st := r.c, r.c.detail
	switch ev.Type {
	case engine.EventStepDispatched:
		d, _ := ev.Data.(engine.StepDispatched)
		r.started[ev.StepID] = ev.Time
		text = "→ " + ev.StepID + " dispatched"
		if n, ok := c.detailStages[ev.StepID]; ok {
			// A pipeline dispatches as a parallel_dispatch (its task graph).
			text += fmt.Sprintf(" (pipeline, %d stage%s)", n, plural(n))
		} else if d.StepMode != "" {
			text += " (" + d.StepMode + ")"
		}
	case engine.EventStepDone:
		text = fmt.Sprintf("✓ %s done (attempt %d)", ev.StepID, r.attempts[ev.StepID]+1) + r.took(ev)
		if d, _ := ev.Data.(engine.StepDone); d.CacheHit {
			text = "✓ " + ev.StepID + " done (from the result cache)"
		}
		delete(r.attempts, ev.StepID)
		delete(r.started, ev.StepID)
		detail = jsonText(st.StepOutputs[ev.StepID])
		tl.style = c.st.OK.Render
	case engine.EventStepFailed:
		d, _ := ev.Data.(engine.StepFailed)
		r.attempts[ev.StepID]++
		text = fmt.Sprintf("✗ %s attempt %d %s", ev.StepID, r.attempts[ev.StepID], strings.ReplaceAll(d.Status, "_", " ")) + r.took(ev) + ": " + strings.Join(d.Violations, "; ")
		r.started[ev.StepID] = ev.Time // the next attempt starts now
		if d.Exhausted {
			text += " (retries exhausted)"
		}
		detail = strings.Join(d.Violations, "\n")
		tl.style = c.st.Failed.Render
	case engine.EventTrace:
		text, detail = r.call(ev, tl)
	case engine.EventJudgeVerdict:
		d, _ := ev.Data.(engine.JudgeVerdict)
		var failed bool
		text, detail, failed = judgeRow(ev.StepID, d.Judge)
		tl.style = c.st.OK.Render
		if failed {
			tl.style = c.st.Failed.Render
		}
	case engine.EventGateOpened:
		d, _ := ev.Data.(engine.GateOpened)
		text = fmt.Sprintf("⏸ gate %s opened", ev.StepID)
		if r.round > 0 {
			text += fmt.Sprintf(" (round %d)", r.round)
		}
		if d.PolicyFailed != "" {
			text += fmt.Sprintf(" (policy %s cannot approve it: %s)", d.Policy, d.PolicyFailed)
		}
		text += libraryReviewNote(st, ev.StepID)
		tl.style = c.st.Waiting.Render
	case engine.EventGateResolved:
		d, _ := ev.Data.(engine.GateResolved)
		text = fmt.Sprintf("⚑ gate %s %s", ev.StepID, d.Outcome)
		if d.Reviewer != "" {
			text += " by " + d.Reviewer
		}
		if d.Channel != "" {
			text += " (" + d.Channel + ")"
		}
		if d.Rationale != "" {
			text += ": " + d.Rationale
			detail = d.Rationale
		}
		if d.Outcome == string(review.Revise) {
			// A new round: attempts count from 1 again.
			r.round++
			r.reset()
			text += fmt.Sprintf(" → round %d", r.round)
		}
	default:
		text = fmt.Sprintf("· %s %s", strings.ReplaceAll(string(ev.Type), "_", " "), ev.StepID)
		detail = dataText(*ev)
	}
	return text, detail
}

// call is a runner call's row: attempt, duration, tokens, cost; the trace
// record (function, model, output) when the runner kept one. A Go
// program's Call is libraryCallRow's.
func (r *traceRound) call(ev *engine.Event, tl *traceLine) (text, detail string) {
	d, _ := ev.Data.(engine.Trace)
	if r.c.detail.IsLibrary() {
		// A Go program's Call: one entry with all its attempts.
		text, detail, failed := libraryCallRow(ev.StepID, &d)
		if failed {
			tl.style = r.c.st.Failed.Render
		}
		return text, detail
	}
	text = "· " + ev.StepID + " call"
	if d.Trace != nil && d.Trace.Function != "" {
		text = "· " + ev.StepID + " " + d.Trace.Function
	}
	if d.Trace != nil && d.Trace.Model != "" {
		text += " [" + d.Trace.Model + "]"
	}
	text += fmt.Sprintf(" attempt %d", r.attempts[ev.StepID]+1)
	text += " " + (time.Duration(d.DurationMS) * time.Millisecond).String()
	if d.TaskID == "" {
		// A fan-out's tasks call side by side: their calls' time summed
		// is not the step's (took counts its dispatch to its end).
		r.callMS[ev.StepID] += d.DurationMS
	}
	if d.Tokens > 0 {
		text += fmt.Sprintf(" %d tokens", d.Tokens)
	}
	if d.CostUSD != nil && *d.CostUSD > 0 { // a free call (a command) shows no cost, as in `stratum run`
		text += fmt.Sprintf(" $%.4f", *d.CostUSD)
	}
	if d.Trace != nil {
		detail = jsonText(d.Trace.Output)
	}
	return text, detail
}

func (p *tracePane) Len(c *common) int { return len(p.lines(c)) }

// Update: enter expands or folds the selected record.
func (p *tracePane) Update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, m.keys.Open) {
		if lines := p.lines(&m.common); len(lines) > 0 {
			seq := lines[p.l.cursor].seq
			p.expanded[seq] = !p.expanded[seq]
		}
	}
	return nil
}

func (p *tracePane) ShortHelp(c *common) []key.Binding {
	h := []key.Binding{shortHelp(c.keys.Open, "open")}
	if p.detail.overflows() {
		h = append(h, shortHelp(c.keys.PageDown, "scroll"))
	}
	return append(h, shortHelp(c.keys.Pager, "pager"))
}

// selectedLine is the entry under the cursor.
func (p *tracePane) selectedLine(c *common) (traceLine, bool) {
	lines := p.lines(c)
	if len(lines) == 0 {
		return traceLine{}, false
	}
	return lines[min(p.l.cursor, len(lines)-1)], true
}

// scroll: while the selected entry is expanded and its lines do not fit,
// the page keys and top and bottom scroll them.
func (p *tracePane) scroll(c *common, msg tea.KeyMsg) bool {
	tl, ok := p.selectedLine(c)
	if !ok || !p.expanded[tl.seq] || tl.seq != p.reading || !p.detail.overflows() {
		return false
	}
	return p.detail.key(c.keys, msg, false)
}

// pagerText is the selected entry and its whole output (or violations).
func (p *tracePane) pagerText(c *common) (string, string) {
	tl, ok := p.selectedLine(c)
	if !ok || c.detail == nil {
		return "", ""
	}
	title := "flow " + c.detail.FlowID + " · " + ansi.Strip(tl.text)
	var lines []string
	if tl.detail != "" {
		lines = strings.Split(tl.detail, "\n")
	}
	return title, plainText(title, lines)
}

// View renders the entries and the lines of the expanded ones, wrapped,
// as rows, and shows the rows around the selected entry: the selection
// never leaves the screen. An expanded selected entry longer than the
// screen shows a window of its lines, scrolled with the page keys.
func (p *tracePane) View(c *common) []string {
	height := p.height
	lines := p.lines(c)
	out := []string{c.detailHeader()}
	if c.detail == nil {
		return out
	}
	if len(lines) == 0 {
		return append(out, c.st.Muted.Render("No events recorded for this flow."))
	}
	h := height - 1
	if h <= 0 {
		return out
	}
	p.l.clamp(len(lines))
	cur := p.l.cursor
	if lines[cur].seq != p.reading {
		p.reading, p.detail = lines[cur].seq, scrollView{}
	}
	var rows []string
	curStart, curEnd := 0, 0
	for i, tl := range lines {
		marker := "  "
		if tl.detail != "" {
			marker = "▸ "
			if p.expanded[tl.seq] {
				marker = "▾ "
			}
		}
		text := "  " + marker + tl.text
		if i == cur {
			curStart = len(rows)
			text = c.st.Selected.Render(padRight("› "+marker+ansi.Strip(tl.text), p.width))
		} else if tl.style != nil {
			text = tl.style(text)
		}
		rows = append(rows, text)
		if p.expanded[tl.seq] && tl.detail != "" {
			var body []string
			for _, dl := range strings.Split(tl.detail, "\n") {
				for _, w := range wrapLines(dl, max(1, p.width-6)) {
					body = append(body, "      "+c.st.Muted.Render(w))
				}
			}
			if i == cur {
				body = p.detail.window(c, body, h-1, p.width, true)
			}
			rows = append(rows, body...)
		}
		if i == cur {
			curEnd = len(rows)
		}
	}
	// Keep the selected entry (and its window) on screen.
	if curStart < p.top {
		p.top = curStart
	}
	if curEnd > p.top+h {
		p.top = curEnd - h
	}
	p.top = max(0, min(p.top, len(rows)-h))
	end := min(len(rows), p.top+h)
	return append(out, rows[p.top:end]...)
}

// taskText is the row of a fan-out task: state, run, duration, worktree
// or branch; its detail is why it failed.
func taskText(stepID string, d *engine.ParallelTask) (string, string) {
	text := fmt.Sprintf("⇉ %s task %s %s", stepID, d.TaskID, d.State)
	if d.Runs > 0 {
		text += fmt.Sprintf(" (run %d)", d.Runs)
	}
	if d.DurationMS > 0 {
		text += " " + (time.Duration(d.DurationMS) * time.Millisecond).String()
	}
	switch {
	case d.Branch != "":
		text += " " + d.Branch
	case d.Worktree != "":
		text += " " + d.Worktree
	}
	detail := strings.Join(d.Violations, "\n")
	if detail == "" {
		detail = d.Error
	}
	return text, detail
}
