package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// The Trace pane's entry for a Go program's Call (a library flow's trace
// event), and the same in the text audit (audit_text.go): the row says how many attempts were retried and how many tool
// calls were made, and whether the call streamed or failed; the expanded
// entry shows the inputs (and that they were cut to fit the store), each
// failed attempt with the violations it was retried for, each tool call
// with its arguments and its result or error, the error the call ended
// with, and the output.

// callView is what a Call's row and detail are made of: from its trace
// event in the Trace pane, from its trace entry in the text audit.
type callView struct {
	stepID     string
	attempts   int
	durationMS int64
	tokens     int64
	costUSD    *float64
	failed     bool
	failure    string // why it failed, when it says
	tr         *state.TraceRecord
}

// libraryCallRow is a Call's row, its detail and whether it failed.
func libraryCallRow(stepID string, d *engine.Trace) (text, detail string, failed bool) {
	c := callView{stepID: stepID, attempts: d.Attempt, durationMS: d.DurationMS, tokens: d.Tokens, costUSD: d.CostUSD,
		failed: d.ErrorKind != "", failure: strings.Join(d.Violations, "; "), tr: d.Trace} // a failed Call's event says why in Violations
	if c.tr == nil {
		c.tr = &state.TraceRecord{}
	}
	return c.row(), strings.Join(c.detail(), "\n"), c.failed
}

// callOfRecord is the view of a Call's trace entry (an audit's calls).
func callOfRecord(tr *state.TraceRecord) callView {
	c := callView{stepID: tr.StepID, attempts: tr.Attempts, durationMS: tr.DurationMS, costUSD: tr.CostUSD,
		failed: tr.Error != "", failure: tr.Error, tr: tr}
	if tr.Usage != nil {
		c.tokens = tr.Usage.Total()
	}
	return c
}

// row is the Call's row — step id, attempts (how many failed), tool
// calls, streamed, failed, duration, tokens, cost, model: what tells one
// call from another first, so that it stays on an 80-column screen.
func (c callView) row() string {
	tr := c.tr
	text := "· " + c.stepID
	if c.failed {
		text += fmt.Sprintf(" failed after %d attempt%s", c.attempts, plural(c.attempts))
	} else {
		text += fmt.Sprintf(" %d attempt%s", c.attempts, plural(c.attempts))
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
	text += " · " + (time.Duration(c.durationMS) * time.Millisecond).String()
	if c.tokens > 0 {
		text += fmt.Sprintf(" %d tokens", c.tokens)
	}
	if c.costUSD != nil && *c.costUSD > 0 {
		text += fmt.Sprintf(" $%.4f", *c.costUSD)
	}
	if tr.Model != "" {
		text += " [" + tr.Model + "]"
	}
	return text
}

// detail is the Call's expanded entry: inputs, retries, tool calls, the
// failure, the output.
func (c callView) detail() []string {
	tr := c.tr
	var lines []string
	if tr.Inputs != nil {
		var notes []string
		if len(tr.OpaqueInputs) > 0 {
			notes = append(notes, "not in the prompt: "+strings.Join(tr.OpaqueInputs, ", "))
		}
		if tr.InputsTruncated {
			notes = append(notes, "cut to fit the store")
		}
		head := "inputs: "
		if len(notes) > 0 {
			head = "inputs (" + strings.Join(notes, "; ") + "): "
		}
		lines = append(lines, specs.EscapeControl(head+compactJSON(tr.Inputs)))
	}
	// One line each: a newline in a violation, a tool's error or the
	// failure is escaped (only the output spans lines).
	for _, r := range tr.Retries {
		lines = append(lines, specs.EscapeControl(fmt.Sprintf("attempt %d retried: %s", r.Attempt, strings.Join(r.Violations, "; "))))
	}
	for i := range tr.ToolCalls {
		lines = append(lines, specs.EscapeControl(toolCallLine(&tr.ToolCalls[i])))
	}
	if c.failed && c.failure != "" {
		lines = append(lines, specs.EscapeControl("failed: "+c.failure))
	}
	if tr.Output != nil {
		lines = append(lines, "output:", jsonText(tr.Output))
	}
	return lines
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

// libraryReviewNote is what a Go program's review adds to its gate row:
// its question and, for a tool call's approval, the tool ("" for any
// other gate).
func libraryReviewNote(st *state.FlowState, reviewID string) string {
	if !st.IsLibrary() {
		return ""
	}
	r := st.Library.Review(reviewID)
	if r == nil || r.Question == "" {
		return ""
	}
	note := ": " + r.Question
	if tool, ok := r.Artifacts["tool"].(string); ok && r.Trigger == "tool_call" {
		note += " (tool " + tool + ")"
	}
	return note
}
