package tui

import (
	"bytes"
	"encoding/json"
	"fmt"

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
	status := c.st.status(st.Status).Render(statusIcon(st.Status) + " " + string(st.Status))
	if sum := c.summaryOf(st.FlowID); sum != nil && sum.Stalled(c.now()) {
		status = c.st.Warning.Render("⚠ stalled (run --resume)")
		if st.IsLibrary() {
			status = c.st.Warning.Render("⚠ stalled (its Go program exited)")
		}
	}
	// The full id: what `stratum query flow`, `stratum gate` and
	// `stratum run --resume` take (copy it with y).
	h := fmt.Sprintf("%s %s · %s · round %d", clean(st.FlowID), clean(st.FlowName), status, st.Round)
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

// summaryOf is the listed summary of flow id (nil when not listed).
func (c *common) summaryOf(id string) *engine.FlowSummary {
	for i := range c.flows {
		if c.flows[i].FlowID == id {
			return &c.flows[i]
		}
	}
	return nil
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

// dataText is an event's data as the log holds it (the keys its type
// writes), indented; "" when it has none.
func dataText(ev engine.Event) string {
	fields, err := ev.DataFields()
	if err != nil || len(fields) == 0 {
		return ""
	}
	obj := []byte{'{'}
	for i, f := range fields {
		if i > 0 {
			obj = append(obj, ',')
		}
		k, _ := json.Marshal(f.Key)
		obj = append(append(append(obj, k...), ':'), f.JSON...)
	}
	obj = append(obj, '}')
	var b bytes.Buffer
	if json.Indent(&b, obj, "", "  ") != nil {
		return ""
	}
	return b.String()
}
