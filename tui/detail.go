package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
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
		if st.ParentFlowID != nil {
			status = c.st.Warning.Render("⚠ stalled (resume its parent)")
		}
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

// resumeTarget is the flow `stratum run --resume` continues flow id
// through: id itself, or for a child flow (which run --resume refuses) the
// root of its line of parents: read with the detail flow, else as far as
// the window lists them.
func (c *common) resumeTarget(id string) string {
	if id == c.detailID && c.detailRoot != "" {
		return c.detailRoot
	}
	for range maxParents {
		sum := c.summaryOf(id)
		if sum == nil || sum.ParentFlowID == "" {
			break
		}
		id = sum.ParentFlowID
	}
	return id
}

// maxParents bounds the walk up a line of parents (a corrupt store could
// hold a cycle).
const maxParents = 64

// resumeCommand is the command that continues stalled flow f: `stratum run
// --resume` of f, or of its root parent (target) when f is a child flow;
// a Go program's flow is never resumed (child says whether it went to a
// parent).
func resumeCommand(invocation string, target func(id string) string, f *state.FlowSummary) (cmd string, child bool) {
	if f.Driver == state.DriverLibrary {
		return "", false
	}
	if invocation == "" {
		invocation = "stratum"
	}
	root := target(f.FlowID)
	return invocation + " run --resume " + root, root != f.FlowID
}

// summaryOf is the summary of flow id in the Flows window, or the detail
// flow's (nil when neither is it).
func (c *common) summaryOf(id string) *state.FlowSummary {
	for i := range c.flows.rows {
		if c.flows.rows[i].FlowID == id {
			return &c.flows.rows[i]
		}
	}
	if c.detailSum != nil && c.detailSum.FlowID == id {
		return c.detailSum
	}
	return nil
}

// jsonText is v pretty-printed for reading: indented like JSON (without
// the commas), except that a string holding line breaks is written as its
// lines (after `|`, indented under its key), so a multi-line output reads
// as text, not as one line of \n escapes. The result is raw: pass it
// through clean before rendering.
func jsonText(v any) string {
	if v == nil {
		return ""
	}
	var b strings.Builder
	writeValue(&b, v, "")
	return b.String()
}

// writeValue writes v at indent (jsonText).
func writeValue(b *strings.Builder, v any, indent string) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "\n") {
			b.WriteString(jsonCompact(x))
			return
		}
		b.WriteString("|")
		for _, l := range strings.Split(strings.TrimSuffix(x, "\n"), "\n") {
			b.WriteString("\n" + indent + "  " + l)
		}
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("{")
		for _, k := range keys {
			b.WriteString("\n" + indent + "  " + jsonCompact(k) + ": ")
			writeValue(b, x[k], indent+"  ")
		}
		b.WriteString("\n" + indent + "}")
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[")
		for _, e := range x {
			b.WriteString("\n" + indent + "  ")
			writeValue(b, e, indent+"  ")
		}
		b.WriteString("\n" + indent + "]")
	case json.RawMessage:
		var y any
		if err := json.Unmarshal(x, &y); err != nil {
			b.WriteString(string(x))
			return
		}
		writeValue(b, y, indent)
	default:
		// Other types (numbers, bools, structs): through JSON, so a
		// struct's strings get the same treatment.
		raw, err := json.Marshal(x)
		if err != nil {
			b.WriteString(fmt.Sprint(x))
			return
		}
		var y any
		if json.Unmarshal(raw, &y) != nil {
			b.WriteString(string(raw))
			return
		}
		switch y.(type) {
		case map[string]any, []any, string:
			writeValue(b, y, indent)
		default:
			b.WriteString(string(raw))
		}
	}
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
