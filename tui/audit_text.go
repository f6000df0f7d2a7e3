package tui

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// WriteAuditText writes an audit for a person to read (`stratum audit
// --text`): the flow, its status, steps and duration; its records in
// order (steps, gate decisions, skips, policies); for a flow a Go program
// drives, each call as the Trace pane shows it opened — inputs, why each
// attempt was retried, tool calls, the failure, the output. What else the
// audit holds (archived rounds, iterations, child audits, the judge) is
// counted; the JSON audit has it all. Every line passes through
// specs.EscapeControl: no name or rationale can move the cursor or fake a
// line.
func WriteAuditText(w io.Writer, a *engine.AuditReport) error {
	var lines []string
	// One line each: a newline in a value is escaped like any control
	// character (specs.EscapeControl).
	add := func(format string, args ...any) {
		lines = append(lines, specs.EscapeControl(fmt.Sprintf(format, args...)))
	}
	add("flow %s %s", a.FlowID, a.FlowName)
	steps := fmt.Sprintf("%d of %d steps", a.StepsCompleted, a.TotalSteps)
	if a.TotalSteps == 0 { // a Go program's flow: no spec, no step count
		steps = fmt.Sprintf("%d record%s", a.StepsCompleted, plural(a.StepsCompleted))
	}
	add("status %s · %s · round %d · %s", a.Status, steps, a.Round, (time.Duration(a.TotalDurationMS) * time.Millisecond).String())
	if a.Gate != nil {
		add("waiting at gate %s", a.Gate.StepID)
	}
	add("trace")
	if len(a.Trace) == 0 {
		add("  (no records)")
	}
	for i := range a.Trace {
		add("  %s", recordText(&a.Trace[i]))
	}
	if a.Calls != nil {
		add("calls")
		if len(a.Calls) == 0 {
			add("  (no calls)")
		}
		for _, raw := range a.Calls {
			var tr state.TraceRecord
			if err := json.Unmarshal(raw, &tr); err != nil {
				add("  · a call that does not decode: %v", err)
				continue
			}
			c := callOfRecord(&tr)
			add("  %s", c.row())
			for _, l := range c.detail() {
				for _, part := range strings.Split(l, "\n") {
					add("      %s", part)
				}
			}
		}
	}
	var more []string
	for _, m := range []struct {
		n    int
		what string
	}{{len(a.Rounds), "archived round"}, {len(a.Iterations), "iteration loop"}, {len(a.ChildAudits), "step with child audits"}} {
		if m.n > 0 {
			more = append(more, fmt.Sprintf("%d %s%s", m.n, m.what, plural(m.n)))
		}
	}
	if a.Judge != nil {
		more = append(more, "judge verdicts")
	}
	if len(more) > 0 {
		add("also %s (stratum audit without --text)", strings.Join(more, ", "))
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

// recordText is one record of the audit's trace.
func recordText(r *state.Record) string {
	s := ""
	if !r.At.IsZero() {
		s = r.At.UTC().Format("15:04:05") + " "
	}
	switch r.Type {
	case state.RecordStep:
		s += "step " + r.StepID
		if r.StepMode != "" {
			s += " (" + r.StepMode + ")"
		}
		if r.Attempts > 0 {
			s += fmt.Sprintf(" %d attempt%s", r.Attempts, plural(r.Attempts))
		}
		s += " " + (time.Duration(r.DurationMS) * time.Millisecond).String()
		if r.CacheHit {
			s += " cache hit"
		}
		if r.ChildFlowID != nil {
			s += " child " + *r.ChildFlowID
		}
	case state.RecordGate:
		s += fmt.Sprintf("gate %s %s", r.StepID, r.Outcome)
		if r.Reviewer != "" {
			s += " by " + r.Reviewer
		}
		if via := strings.Trim(r.Channel+", "+r.ResolvedBy, ", "); via != "" {
			s += " (" + via + ")"
		}
		if r.Rationale != "" {
			s += ": " + r.Rationale
		}
	case state.RecordSkip:
		s += "skip " + r.StepID
		if r.SkipReason != "" {
			s += ": " + r.SkipReason
		}
	case state.RecordPolicy:
		s += fmt.Sprintf("policy %s %s → %s", r.StepID, r.EffectivePolicy, r.ResolvedOutcome)
	default:
		s += r.Type + " " + r.StepID
	}
	if r.Reverted {
		s += " (reverted)"
	}
	return s
}
