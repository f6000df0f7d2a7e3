package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// The Trace pane's entry for a Go program's Call (a library flow's trace
// event): the row says how many attempts were retried and how many tool
// calls were made, and whether the call streamed or failed; the expanded
// entry shows the inputs (and that they were cut to fit the store), each
// failed attempt with the violations it was retried for, each tool call
// with its arguments and its result or error, the error the call ended
// with, and the output.

// libraryCallRow is a Call's row — step id, attempts (how many failed),
// tool calls, streamed, failed, duration, tokens, cost, model: what tells
// one call from another first, so that it stays on an 80-column screen —
// its detail, and whether the call failed.
func libraryCallRow(stepID string, d *engine.Trace) (text, detail string, failed bool) {
	failed = d.ErrorKind != "" // a failed Call's event says why in Violations
	tr := d.Trace
	if tr == nil {
		tr = &state.TraceRecord{}
	}
	text = "· " + stepID
	if failed {
		text += fmt.Sprintf(" failed after %d attempt%s", d.Attempt, plural(d.Attempt))
	} else {
		text += fmt.Sprintf(" %d attempt%s", d.Attempt, plural(d.Attempt))
		if n := len(tr.Retries); n > 0 {
			text += fmt.Sprintf(" (%d failed)", n)
		}
	}
	if n := len(tr.ToolCalls); n > 0 {
		text += fmt.Sprintf(" · %d tool call%s", n, plural(n))
	}
	if tr.Streamed {
		text += " · streamed"
	}
	text += " · " + (time.Duration(d.DurationMS) * time.Millisecond).String()
	if d.Tokens > 0 {
		text += fmt.Sprintf(" %d tokens", d.Tokens)
	}
	if d.CostUSD != nil && *d.CostUSD > 0 {
		text += fmt.Sprintf(" $%.4f", *d.CostUSD)
	}
	if tr.Model != "" {
		text += " [" + tr.Model + "]"
	}
	return text, libraryCallDetail(d, failed), failed
}

// libraryCallDetail is the expanded entry of a Call.
func libraryCallDetail(d *engine.Trace, failed bool) string {
	tr := d.Trace
	var lines []string
	if tr != nil && tr.Inputs != nil {
		head := "inputs: "
		if tr.InputsTruncated {
			head = "inputs (cut to fit the store): "
		}
		lines = append(lines, head+compactJSON(tr.Inputs))
	}
	if tr != nil {
		for _, r := range tr.Retries {
			lines = append(lines, fmt.Sprintf("attempt %d retried: %s", r.Attempt, strings.Join(r.Violations, "; ")))
		}
		for i := range tr.ToolCalls {
			lines = append(lines, toolCallLine(&tr.ToolCalls[i]))
		}
	}
	if failed && len(d.Violations) > 0 {
		lines = append(lines, "failed: "+strings.Join(d.Violations, "; "))
	}
	if tr != nil && tr.Output != nil {
		lines = append(lines, "output:", jsonText(tr.Output))
	}
	return strings.Join(lines, "\n")
}

// toolCallLine is one tool call: name, where it was made, how long it
// ran, its approval, its arguments and its result or error.
func toolCallLine(tc *state.ToolCallRecord) string {
	s := fmt.Sprintf("tool %s (attempt %d, round %d) %s", tc.Name, tc.Attempt, tc.Round, (time.Duration(tc.DurationMS) * time.Millisecond).String())
	if tc.ReviewID != "" {
		// FLOW/review-N/ROUND: the flow is the one shown.
		id := tc.ReviewID
		if parts := strings.Split(id, "/"); len(parts) == 3 {
			id = parts[1]
		}
		s += " · approval " + id
	}
	s += " " + string(orRaw(tc.Args, "{}"))
	if tc.Error != "" {
		s += " ✗ " + tc.Error
	} else {
		s += " → " + string(orRaw(tc.Result, "null"))
	}
	if tc.Truncated {
		s += " (cut to fit the store)"
	}
	return s
}

func orRaw(raw json.RawMessage, empty string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(empty)
	}
	return raw
}

// compactJSON is v as one line of JSON.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
