package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// detailHeader is the first line of the detail panes: the detail flow's
// id, name, status, round and spending.
func (c *common) detailHeader() string {
	st := c.detail
	if st == nil {
		if c.detailID == "" {
			return c.st.Muted.Render("No flow selected (pick one in Flows).")
		}
		return c.st.Muted.Render("Loading flow " + shortID(c.detailID) + "…")
	}
	h := fmt.Sprintf("%s %s · %s · round %d", shortID(st.FlowID), clean(st.FlowName), c.st.status(st.Status).Render(statusIcon(st.Status)+" "+string(st.Status)), st.Round)
	if b := st.BudgetState; b != nil {
		if b.SpentUSD > 0 || b.CostUnknown {
			cost := fmt.Sprintf("$%.4f", b.SpentUSD)
			if b.CostUnknown {
				cost += "+?"
			}
			h += " · cost " + cost
		}
		if b.SpentTokens > 0 {
			h += fmt.Sprintf(" · %d tokens", b.SpentTokens)
		}
	}
	return h
}

// lastViolations are the violations of the detail flow's most recent failed
// attempt (what led to the gate), when the detail is that flow.
func (c *common) lastViolations(flowID string) string {
	if c.detail == nil || c.detail.FlowID != flowID {
		return ""
	}
	for i := len(c.detailEvents) - 1; i >= 0; i-- {
		ev := c.detailEvents[i]
		if ev.Type == engine.EventStepFailed {
			return clean(ev.StepID + ": " + strings.Join(ev.Detail().Violations, "; "))
		}
		if ev.Type == engine.EventGateResolved {
			return ""
		}
	}
	return ""
}

func jsonText(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
