package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// The console's commands: every read or write of the store, every wait on a
// channel and every run happens here, in a tea.Cmd, never in Update. A
// command captures what it needs when it is built and touches no field of
// the model when it runs; its result comes back as a message.

// snapshotCmd reads the counts and the Flows window in one pass over the
// listing (flowPass), and the pending gates.
func (m *Model) snapshotCmd() tea.Cmd {
	src, q := m.opt.Source, m.passQuery()
	return func() tea.Msg {
		ctx := context.Background()
		w, err := flowPass(ctx, src, q)
		if err != nil {
			return snapshotMsg{err: err}
		}
		reviews, err := src.PendingReviews(ctx)
		return snapshotMsg{flows: w, reviews: reviews, err: err}
	}
}

// flowPagesCmd reads pages window pages of the Flows listing from page
// first's mark (after), skipping skip pages first, for the pass gen.
func (m *Model) flowPagesCmd(gen int, filter string, first int, after state.ListCursor, skip, pages int) tea.Cmd {
	src := m.opt.Source
	return func() tea.Msg {
		rows, marks, err := readPages(context.Background(), src, filter, after, skip, pages)
		return flowPagesMsg{gen: gen, start: (first + skip) * windowPage, rows: rows, first: first, marks: marks,
			short: len(rows) < pages*windowPage, err: err}
	}
}

// detailCmd reads the detail flow: its state (with its stored spec's
// pipeline stages), its events, its stored summary (the one-row page at
// its place in the listing, which the window may not hold) and the root
// of its line of parents (what `run --resume` continues).
func (m *Model) detailCmd(flowID string) tea.Cmd {
	src := m.opt.Source
	return func() tea.Msg {
		ctx := context.Background()
		fs, err := src.FlowWithSpec(ctx, flowID)
		if err != nil {
			return detailMsg{flowID: flowID, err: err}
		}
		st := fs.State
		evs, err := src.FlowEvents(ctx, flowID)
		if err != nil {
			return detailMsg{flowID: flowID, err: err}
		}
		parent := ""
		if st.ParentFlowID != nil {
			parent = *st.ParentFlowID
		}
		msg := detailMsg{flowID: flowID, state: st, events: evs, root: rootOf(ctx, src, flowID, parent), stages: pipelineStages(fs.Flow)}
		// Just past the flow in the listing order: the next row is its own.
		at := state.ListCursor{CreatedAt: st.CreatedAt, FlowID: st.FlowID + "\x00"}
		if sums, err := src.ListFlows(ctx, engine.ListFilter{After: at, Limit: 1}); err == nil && len(sums) == 1 && sums[0].FlowID == flowID {
			msg.sum = &sums[0]
		}
		return msg
	}
}

// rootOf is the root of the line of parents above a flow whose parent is
// parent ("" for none: the flow itself, id), read from the store; a
// parent that cannot be read ends the walk.
func rootOf(ctx context.Context, src Source, id, parent string) string {
	for range maxParents {
		if parent == "" {
			break
		}
		id = parent
		st, err := src.Get(ctx, id)
		if err != nil || st.ParentFlowID == nil {
			break
		}
		parent = *st.ParentFlowID
	}
	return id
}

// reloadCmd reloads the snapshot, or marks it dirty when a load is in flight.
func (m *Model) reloadCmd() tea.Cmd {
	if m.loading {
		m.dirty = true
		return nil
	}
	m.loading = true
	return m.snapshotCmd()
}

// refilterCmd is a pass over the flows' listing for the Flows pane's new
// filter, without reading the gates again; coalesced with any load in
// flight as reloadCmd is (the reload that follows it reads the new filter).
func (m *Model) refilterCmd() tea.Cmd {
	if m.loading {
		m.dirty = true
		return nil
	}
	m.loading = true
	src, q := m.opt.Source, m.passQuery()
	return func() tea.Msg {
		w, err := flowPass(context.Background(), src, q)
		return snapshotMsg{flows: w, flowsOnly: true, err: err}
	}
}

// reloadDetailCmd (re)loads the detail of the flow the focus is about.
func (m *Model) reloadDetailCmd() tea.Cmd {
	id := m.focusFlowID()
	if id == "" {
		m.detailID, m.detail, m.detailEvents, m.detailSum, m.detailRoot = "", nil, nil, nil, ""
		return nil
	}
	if m.detailLoading {
		m.detailDirty = true
		return nil
	}
	if id != m.detailID {
		m.detailID, m.detail, m.detailEvents, m.detailSum, m.detailRoot = id, nil, nil, nil, ""
		for _, p := range m.panes {
			if _, ok := p.(detailPane); ok {
				p.base().l = listState{}
			}
		}
	}
	m.detailLoading = true
	return m.detailCmd(id)
}

// waitEventsCmd is the re-arming wait on Source.Watch's batches: Update
// issues it again after each one.
func (m *Model) waitEventsCmd() tea.Cmd {
	ch := m.opt.Events
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		evs, ok := <-ch
		if !ok {
			return eventsEndMsg{}
		}
		return eventsMsg(evs)
	}
}

func (m *Model) waitSpecsCmd() tea.Cmd {
	ch := m.opt.Specs
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		u, ok := <-ch
		if !ok {
			return nil
		}
		return specMsg(u)
	}
}

func (m *Model) waitReviewsCmd() tea.Cmd {
	ch := m.opt.Reviews
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		r, ok := <-ch
		if !ok {
			return nil
		}
		return reviewMsg(r)
	}
}

func (m *Model) tickCmd() tea.Cmd {
	if m.opt.Tick < 0 {
		return nil
	}
	return tea.Tick(m.opt.Tick, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *Model) decideCmd(r review.PendingReview, outcome review.Outcome, rationale string, option int, value json.RawMessage) tea.Cmd {
	src := m.opt.Source
	// A flow whose runner has exited does not move on by itself after the
	// decision: say so, with the command that continues it.
	resume := ""
	if sum := m.summaryOf(r.FlowID); sum != nil && sum.Stalled(m.now()) && sum.Driver != state.DriverLibrary {
		resume, _ = resumeCommand(m.invocation, m.resumeTarget, sum)
	}
	round := r.Round
	d := review.Decision{
		ReviewID: r.ReviewID, FlowID: r.FlowID, StepID: r.StepID, Round: &round,
		Outcome: outcome, Rationale: rationale, Reviewer: m.opt.Reviewer,
		ResolvedBy: review.Human, Channel: review.ChannelTUI, Option: option, Value: value,
	}
	return func() tea.Msg {
		// The engine's gate resolution applies the rules of every
		// channel (a rationale for revise and kill).
		out, err := src.GateResolve(context.Background(), d.FlowID, d)
		if e := engine.AsError(err); e != nil {
			if errors.Is(e, review.ErrRationaleRequired) {
				return actionMsg{err: e}
			}
			if e.Committed() {
				return actionMsg{text: string(outcome) + " recorded for " + r.StepID + ": " + errorText(e)}
			}
			return actionMsg{err: errors.New("gate " + r.StepID + " of " + shortID(r.FlowID) + ": " + errorText(e))}
		}
		if err != nil {
			return actionMsg{err: err}
		}
		text := pastTense(outcome) + " " + r.StepID + " of " + r.FlowName + " (" + shortID(r.FlowID) + "); " + nextText(out)
		if resume != "" && !finished(out) {
			text += "; its runner has exited: continue it with `" + resume + "`"
		}
		return actionMsg{text: text}
	}
}

// nextText says in words what a flow does after a decision (never the
// wire's token, e.g. execute_step).
func nextText(out engine.Outcome) string {
	switch o := out.(type) {
	case *engine.StepDispatch:
		return "next: step " + o.StepID
	case *engine.GateDispatch:
		return "next: gate " + o.StepID
	case *engine.ChildDispatch:
		return "next: sub-flow " + o.ChildFlowName
	case *engine.ParallelDispatch:
		return "next: parallel tasks of " + o.StepID
	case *engine.Completion:
		return "flow " + string(o.Status)
	case *engine.Stopped:
		return "flow " + strings.ReplaceAll(string(o.Status), "_", " ")
	case nil:
		return "done"
	}
	return "flow updated"
}

// finished reports whether out ends the flow (nothing to continue).
func finished(out engine.Outcome) bool {
	switch out.(type) {
	case *engine.Completion, *engine.Stopped:
		return true
	}
	return false
}

func (m *Model) checkpointCmd(revert bool, flowID, label string) tea.Cmd {
	src := m.opt.Source
	return func() tea.Msg {
		var err error
		verb := "committed"
		if revert {
			verb = "reverted to"
			_, err = src.Revert(context.Background(), flowID, label)
		} else {
			_, err = src.Commit(context.Background(), flowID, label)
		}
		if e := engine.AsError(err); e != nil {
			return actionMsg{err: errors.New(errorText(e))}
		}
		if err != nil {
			return actionMsg{err: err}
		}
		return actionMsg{text: verb + " checkpoint " + label + " of " + shortID(flowID)}
	}
}

// killCmd ends flowID by hand (:kill), as the console's reviewer.
func (m *Model) killCmd(flowID, reason string) tea.Cmd {
	src, by := m.opt.Source, m.opt.Reviewer
	return func() tea.Msg {
		out, err := src.Kill(context.Background(), flowID, by, reason)
		if e := engine.AsError(err); e != nil {
			return actionMsg{err: errors.New(errorText(e))}
		}
		if err != nil {
			return actionMsg{err: err}
		}
		n := 1
		if k, ok := out.(*engine.FlowKilled); ok {
			n = len(k.Flows)
		}
		text := "ended flow " + shortID(flowID) + " as killed"
		if n > 1 {
			text += fmt.Sprintf(" (with %d child flow%s)", n-1, plural(n-1))
		}
		return actionMsg{text: text}
	}
}

// errorText is how an engine refusal reads in the status line.
func errorText(e *engine.Error) string { return string(e.Type) + ": " + e.Message }

func pastTense(o review.Outcome) string {
	switch o {
	case review.Approve:
		return "approved"
	case review.Revise:
		return "sent back for revision:"
	case review.Kill:
		return "killed at"
	}
	return string(o)
}

// pagerCmd pipes what the focused pane has selected (a gate's context, a
// trace entry's output) to the pager (Options.Pager, $PAGER), which takes
// the terminal until it exits (tea.ExecProcess).
func (m *Model) pagerCmd() tea.Cmd {
	p, ok := m.focused().(pagerPane)
	if !ok {
		m.setStatus("", errors.New("nothing to read in a pager here (the Gates and Trace panes have)"))
		return nil
	}
	title, text := p.pagerText(&m.common)
	if text == "" {
		m.setStatus("", errors.New("nothing selected to read"))
		return nil
	}
	argv := m.opt.Pager
	if len(argv) == 0 {
		m.setStatus("", errors.New("no pager: set $PAGER"))
		return nil
	}
	return func() tea.Msg {
		c := pagerProcess(argv, text)
		return tea.ExecProcess(c, func(err error) tea.Msg {
			if err != nil {
				return actionMsg{err: errors.New("pager " + argv[0] + ": " + err.Error())}
			}
			return actionMsg{text: "read " + title + " in " + argv[0]}
		})()
	}
}

// pagerProcess is the pager argv reading text on its standard input (it
// reads keys from the terminal).
func pagerProcess(argv []string, text string) *exec.Cmd {
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin = strings.NewReader(text)
	return c
}

// copyIDCmd copies the full id of the flow the focus is about to the
// terminal's clipboard: an OSC 52 escape sequence written to the terminal
// (tmux and most terminals honour it; over SSH too).
func (m *Model) copyIDCmd() tea.Cmd {
	id, w := m.focusFlowID(), m.opt.Clipboard
	if id == "" {
		m.setStatus("", errors.New("no flow selected to copy"))
		return nil
	}
	if w == nil {
		m.setStatus("", errors.New("no terminal to copy to"))
		return nil
	}
	return func() tea.Msg {
		if _, err := io.WriteString(w, ansi.SetSystemClipboard(id)); err != nil {
			return actionMsg{err: errors.New("copy: " + err.Error())}
		}
		return actionMsg{text: "copied flow id " + id}
	}
}
