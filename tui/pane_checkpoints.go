package tui

import (
	"errors"
	"fmt"
	"sort"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine/state"
)

// checkpointsPaneDef registers the Checkpoints pane: the detail flow's
// checkpoints; commit one (n), revert to the selected one with confirmation
// (v).
var checkpointsPaneDef = definePane("Checkpoints", defaultCheckpointKeys, newCheckpointsPane)

// checkpointKeys are the Checkpoints pane's own keys.
type checkpointKeys struct {
	Commit, Revert key.Binding
}

func defaultCheckpointKeys() *checkpointKeys {
	return &checkpointKeys{
		Commit: bind("commit checkpoint", "n"),
		Revert: bind("revert to checkpoint", "v"),
	}
}

func (k *checkpointKeys) actions() []action {
	return []action{{"commit", &k.Commit}, {"revert", &k.Revert}}
}

type checkpointsPane struct {
	paneBase
	keys *checkpointKeys
}

func newCheckpointsPane(k *checkpointKeys) pane { return &checkpointsPane{keys: k} }

var _ detailPane = (*checkpointsPane)(nil)

func (p *checkpointsPane) showsDetail() {}

// checkpoints are the detail flow's checkpoints, oldest first.
func (p *checkpointsPane) checkpoints(c *common) []*state.Checkpoint {
	if c.detail == nil {
		return nil
	}
	out := make([]*state.Checkpoint, 0, len(c.detail.Checkpoints))
	for _, cp := range c.detail.Checkpoints {
		if matches(p.filter, cp.Label) {
			out = append(out, cp)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].Label < out[j].Label
	})
	return out
}

func (p *checkpointsPane) Len(c *common) int { return len(p.checkpoints(c)) }

func (p *checkpointsPane) Update(m *Model, msg tea.KeyMsg) tea.Cmd {
	id := m.focusFlowID()
	if id == "" {
		return nil
	}
	switch {
	case key.Matches(msg, p.keys.Commit):
		m.pushDialog(newLabelDialog(id))
	case key.Matches(msg, p.keys.Revert):
		cps := p.checkpoints(&m.common)
		if len(cps) == 0 {
			m.setStatus("", errors.New("no checkpoint to revert to"))
			return nil
		}
		m.pushDialog(&confirmDialog{flowID: id, label: cps[p.l.cursor].Label})
	}
	return nil
}

func (p *checkpointsPane) ShortHelp(*common) []key.Binding {
	return []key.Binding{shortHelp(p.keys.Commit, "commit"), shortHelp(p.keys.Revert, "revert")}
}

func (p *checkpointsPane) View(c *common) []string {
	out := []string{c.detailHeader()}
	if c.detail == nil {
		return out
	}
	cps := p.checkpoints(c)
	if len(cps) == 0 {
		return append(out, c.st.Muted.Render(fmt.Sprintf("No checkpoints. Press %s to commit one.", keyName(p.keys.Commit))))
	}
	now := c.now()
	total := 0
	if sum := c.summaryOf(c.detail.FlowID); sum != nil {
		total = sum.TotalSteps
	}
	return append(out, p.rows(c, p.height-1, fmt.Sprintf("%-24s %-10s %5s %6s %s", "LABEL", "CREATED", "ROUND", "STEPS", "AT STEP"), len(cps), func(i int) string {
		cp := cps[i]
		return fmt.Sprintf("%-24s %-10s %5d %6d %s", truncate(clean(cp.Label), 24), age(now.Sub(cp.CreatedAt))+" ago", cp.Round, len(cp.Records), atStep(cp, total))
	})...)
}

// atStep is where a checkpoint stands: the step it would run next (1-based,
// of total), or, past the last step or once the flow ended, that the flow
// had ended there — never a step number the flow does not have.
func atStep(cp *state.Checkpoint, total int) string {
	switch {
	case cp.TerminalStatus != nil && *cp.TerminalStatus != "":
		return clean(*cp.TerminalStatus)
	case total > 0 && cp.CurrentIdx >= total:
		return "complete"
	case total > 0:
		return fmt.Sprintf("%d of %d", cp.CurrentIdx+1, total)
	}
	return fmt.Sprint(cp.CurrentIdx + 1)
}
