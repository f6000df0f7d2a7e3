package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"
)

// tracePaneDef registers the Trace pane: the live records of the detail
// flow (attempts, durations, violations, cost, decisions); enter expands a
// record to its output.
var tracePaneDef = paneDef{title: "Trace", new: func(keyGroup) pane { return &tracePane{expanded: map[uint64]bool{}} }}

type tracePane struct {
	paneBase
	expanded map[uint64]bool // records expanded, by event sequence number
}

var _ detailPane = (*tracePane)(nil)

func (p *tracePane) showsDetail() {}

type traceLine struct {
	seq    uint64
	text   string
	detail string // shown when expanded
	style  func(...string) string
}

// lines builds the trace of the detail flow from its events: attempts,
// durations (from the step records), violations, cost (runner trace
// records), gate decisions, checkpoints and iteration reports.
func (p *tracePane) lines(c *common) []traceLine {
	if c.detail == nil {
		return nil
	}
	st := c.detail
	durations := map[string]int64{}
	for _, r := range st.Records {
		if r.Type == engine.RecordStep {
			durations[r.StepID] = r.DurationMS
		}
	}
	out := make([]traceLine, 0, len(c.detailEvents))
	for _, ev := range c.detailEvents {
		tl := traceLine{seq: ev.Seq}
		d := ev.Data
		var text, detail string
		switch ev.Type {
		case engine.EventStepDone:
			text = fmt.Sprintf("✓ %s done (attempt %v)", ev.StepID, d["attempts"])
			if ms, ok := durations[ev.StepID]; ok && ms > 0 {
				text += fmt.Sprintf(" %s", time.Duration(ms)*time.Millisecond)
			}
			detail = jsonText(st.StepOutputs[ev.StepID])
			tl.style = c.st.OK.Render
		case engine.EventStepFailed:
			text = fmt.Sprintf("✗ %s attempt %v %v: %s", ev.StepID, d["attempt"], d["status"], joinAny(d["violations"]))
			if ex, _ := d["exhausted"].(bool); ex {
				text += " (retries exhausted)"
			}
			detail = joinAnyLines(d["violations"])
			tl.style = c.st.Failed.Render
		case engine.EventTrace:
			// A runner call: attempt, duration, tokens, cost; the trace
			// record (function, model, output) when the runner kept one.
			tr, _ := d["trace"].(map[string]any)
			text = "· " + ev.StepID + " call"
			if fn, _ := tr["function"].(string); fn != "" {
				text = "· " + ev.StepID + " " + fn
			}
			if model, _ := tr["model"].(string); model != "" {
				text += " [" + model + "]"
			}
			if a, ok := d["attempt"].(float64); ok && a > 0 {
				text += fmt.Sprintf(" attempt %d", int(a))
			}
			if ms, ok := d["duration_ms"].(float64); ok {
				text += " " + (time.Duration(ms) * time.Millisecond).String()
			}
			if tok, ok := d["tokens"].(float64); ok && tok > 0 {
				text += fmt.Sprintf(" %d tokens", int(tok))
			}
			if cost, ok := d["cost_usd"].(float64); ok {
				text += fmt.Sprintf(" $%.4f", cost)
			}
			if tr != nil {
				detail = jsonText(tr["output"])
			}
		case engine.EventGateOpened:
			text = fmt.Sprintf("⏸ gate %s opened", ev.StepID)
			tl.style = c.st.Waiting.Render
		case engine.EventGateResolved:
			text = fmt.Sprintf("⚑ gate %s %v", ev.StepID, d["outcome"])
			if r, ok := d["reviewer"].(string); ok && r != "" {
				text += " by " + r
			}
			if ch, ok := d["channel"].(string); ok && ch != "" {
				text += " (" + ch + ")"
			}
			if r, ok := d["rationale"].(string); ok && r != "" {
				text += ": " + r
				detail = r
			}
		default:
			text = fmt.Sprintf("· %s %s", ev.Type, ev.StepID)
			if len(d) > 0 {
				detail = jsonText(d)
			}
		}
		tl.text = ev.Time.UTC().Format("15:04:05") + " " + text
		tl.detail = detail
		if !matches(p.filter, tl.text) {
			continue
		}
		out = append(out, tl)
	}
	return out
}

func (p *tracePane) Len(c *common) int { return len(p.lines(c)) }

// Update: enter expands or folds the selected record.
func (p *tracePane) Update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, m.keys.Open) {
		if lines := p.lines(&m.common); len(lines) > 0 {
			seq := lines[p.l.cursor].seq
			p.expanded[seq] = !p.expanded[seq]
		}
	}
	return nil
}

func (p *tracePane) ShortHelp(c *common) []key.Binding {
	return []key.Binding{shortHelp(c.keys.Open, "open")}
}

func (p *tracePane) View(c *common) []string {
	height := p.height
	lines := p.lines(c)
	out := []string{c.detailHeader()}
	if c.detail == nil {
		return out
	}
	if len(lines) == 0 {
		return append(out, c.st.Muted.Render("No events recorded for this flow."))
	}
	// Expanded lines take extra rows; render within the height.
	l := &p.l
	h := height - 1
	start := l.window(h, len(lines))
	for i := start; i < len(lines) && len(out) < height; i++ {
		tl := lines[i]
		marker := "  "
		if tl.detail != "" {
			marker = "▸ "
			if p.expanded[tl.seq] {
				marker = "▾ "
			}
		}
		text := "  " + marker + tl.text
		if i == l.cursor {
			text = c.st.Selected.Render(padRight("› "+marker+tl.text, p.width))
		} else if tl.style != nil {
			text = tl.style(text)
		}
		out = append(out, text)
		if p.expanded[tl.seq] && tl.detail != "" {
			for _, dl := range strings.Split(tl.detail, "\n") {
				if len(out) >= height {
					break
				}
				out = append(out, "      "+c.st.Muted.Render(dl))
			}
		}
	}
	return out
}
