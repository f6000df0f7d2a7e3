package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/engine/state"
)

// judgeRow is a judge turn's row in the Trace pane (a judge_verdict
// event): the step, whether its predicates were met, and which were not;
// its detail is every predicate's verdict, confidence and statement, the
// deciding tier's reason and the evidence cited, one citation a line (a
// verifier's predicate that cites nothing says so).
// failed says the turn was not met.
func judgeRow(stepID string, v *state.JudgeVerdict) (text, detail string, failed bool) {
	if v == nil {
		return "⚖ " + stepID + " judged", "", false
	}
	verdict := "met"
	if !v.Met {
		verdict = "not met"
	}
	text = fmt.Sprintf("⚖ %s judged %s (turn %d)", stepID, verdict, v.Turn)
	met := 0
	var open []string
	for _, p := range v.Predicates {
		if p.Verdict == "met" {
			met++
			continue
		}
		open = append(open, p.ID+" "+verdictText(p.Verdict))
	}
	if len(open) == 0 {
		text += fmt.Sprintf(": %d/%d predicates met", met, len(v.Predicates))
	} else {
		text += ": " + strings.Join(open, ", ")
	}
	var b strings.Builder
	for i, p := range v.Predicates {
		if i > 0 {
			b.WriteByte('\n')
		}
		mark := "✓"
		if p.Verdict != "met" {
			mark = "✗"
		}
		fmt.Fprintf(&b, "%s %s %s · confidence %s", mark, p.ID, verdictText(p.Verdict), strconv.Itoa(p.Confidence))
		if p.Statement != "" {
			b.WriteString(" · " + p.Statement)
		}
		if p.Reason != "" {
			b.WriteString("\n  reason: " + p.Reason)
		}
		if len(p.Evidence) == 0 && p.Type != "deterministic" { // tier 1 decides by its expression, citing nothing
			b.WriteString("\n  no evidence cited")
		}
		for _, e := range p.Evidence {
			fmt.Fprintf(&b, "\n  evidence %s (%s): “%s”", e.Source, e.Tier, strings.ReplaceAll(e.Quote, "\n", " ⏎ "))
		}
	}
	return text, b.String(), !v.Met
}

// verdictText is a predicate verdict as words ("not met", not "not_met").
func verdictText(v string) string { return strings.ReplaceAll(v, "_", " ") }
