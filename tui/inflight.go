package tui

import (
	"context"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// Work in flight: the Flows pane marks a running flow whose step is under
// way right now — dispatched (to `stratum run`'s executor, an agent over
// MCP, a shell) and not yet reported — with how long it has been
// (`▶ running 12s`), so a long LLM call or agent step does not look like
// an idle flow. The marks follow the store's events as they arrive (the
// Watch batches the console already reloads on): step_dispatched starts
// one, the step's report, a gate opening, the flow's end or a revert ends
// it. Nothing polls. The flows already in flight when the console starts
// are read once from their states' dispatch times (seedInflightCmd).

// inflightStep is the step of a flow under way and since when.
type inflightStep struct {
	stepID string
	since  time.Time
}

// inflightSeedMax bounds the states the console reads at start to find the
// flows already in flight: the running flows of its first window.
const inflightSeedMax = 200

// noteInflight applies a batch of store events to the marks. A flow an
// event has spoken for is not overwritten by the seed, which may be older.
func (c *common) noteInflight(evs []engine.Event) {
	for _, ev := range evs {
		c.inflightSeen[ev.FlowID] = true
		switch ev.Type {
		case engine.EventStepDispatched:
			c.inflight[ev.FlowID] = inflightStep{stepID: ev.StepID, since: ev.Time}
		case engine.EventStepDone, engine.EventStepFailed, engine.EventStepSkipped, engine.EventGateOpened,
			engine.EventGateResolved, engine.EventCheckpoint, engine.EventFlowFinished:
			delete(c.inflight, ev.FlowID)
		}
	}
}

// inflightOf is the step of summary f under way, if any: only a running
// flow that something drives (a stalled flow's step is not in flight, its
// runner is gone) and whose mark names its current step.
func (c *common) inflightOf(f *state.FlowSummary, now time.Time) (inflightStep, bool) {
	in, ok := c.inflight[f.FlowID]
	if !ok || f.Status != state.StatusRunning || f.Stalled(now) || (f.CurrentStep != "" && in.stepID != f.CurrentStep) {
		return inflightStep{}, false
	}
	return in, true
}

// elapsedText is how long work has been under way: 12s, 4m05s, 1h02m.
func elapsedText(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

type inflightSeedMsg map[string]inflightStep

// seedInflightCmd reads, for each running flow of steps (flow id → its
// current step, from its summary), when that step was dispatched, from the
// flow's state: it is in flight when it was dispatched and has not
// reported (state.FlowState.DispatchedAt).
func (m *Model) seedInflightCmd(steps map[string]string) tea.Cmd {
	if len(steps) == 0 {
		return nil
	}
	src := m.opt.Source
	return func() tea.Msg {
		out := inflightSeedMsg{}
		for id, step := range steps {
			st, err := src.Get(context.Background(), id)
			if err != nil || st.Status != state.StatusRunning {
				continue
			}
			if at, ok := st.DispatchedAt[step]; ok {
				out[id] = inflightStep{stepID: step, since: at}
			}
		}
		return out
	}
}

// handleInflightSeed keeps the seed's marks of the flows no event has
// spoken for since the console started.
func (m *Model) handleInflightSeed(msg inflightSeedMsg) {
	for id, in := range msg {
		if !m.inflightSeen[id] {
			m.inflight[id] = in
		}
	}
}

// runningSteps are the running flows of the Flows window (at most
// inflightSeedMax) and their current steps.
func (c *common) runningSteps() map[string]string {
	steps := map[string]string{}
	for i := range c.flows.rows {
		if f := &c.flows.rows[i]; f.Status == state.StatusRunning && f.CurrentStep != "" && len(steps) < inflightSeedMax {
			steps[f.FlowID] = f.CurrentStep
		}
	}
	return steps
}
