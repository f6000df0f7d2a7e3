package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/watch"
)

// View renders exactly height lines of at most width cells; Bubble Tea's
// renderer diffs them against the previous frame (no full clears).
func (m *Model) View() string {
	if m.quitting {
		return ""
	}
	w, h := m.width, m.height
	lines := make([]string, 0, h)
	lines = append(lines, m.headerLine(), m.tabsLine())
	bodyH := m.bodyHeight()
	var body []string
	if n := len(m.dialogs); n > 0 {
		body = m.dialogBody(m.dialogs[n-1], bodyH)
	} else {
		body = m.paneBody(m.focus, bodyH)
	}
	for len(body) < bodyH {
		body = append(body, "")
	}
	lines = append(lines, body[:bodyH]...)
	lines = append(lines, m.statusLine(), m.helpLine())
	for i := range lines {
		lines[i] = truncate(lines[i], w)
	}
	return strings.Join(lines[:min(len(lines), max(h, 1))], "\n")
}

// bodyHeight is the rows between the two header lines and the two footer lines.
func (m *Model) bodyHeight() int { return max(1, m.height-4) }

func (m *Model) headerLine() string {
	running, waiting := 0, len(m.reviews)
	for _, f := range m.flows {
		if f.Status == engine.StatusRunning {
			running++
		}
	}
	s := m.st
	left := s.Title.Render("stratum") + "  " +
		s.Running.Render(fmt.Sprintf("%d running", running)) + " · " +
		s.Waiting.Render(fmt.Sprintf("%d waiting gate%s", waiting, plural(waiting))) + " · " +
		fmt.Sprintf("%d flows", len(m.flows))
	switch {
	case m.loadErr != nil:
		left += "  " + s.Error.Render("store: "+m.loadErr.Error())
	case !m.loaded:
		left += "  " + s.Muted.Render("loading…")
	}
	return left
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (m *Model) tabsLine() string {
	parts := make([]string, 0, numPanes)
	for i, name := range paneNames {
		label := fmt.Sprintf("%d %s", i+1, name)
		if paneID(i) == paneGates && len(m.reviews) > 0 {
			label += fmt.Sprintf("(%d)", len(m.reviews))
		}
		if f := m.filters[i]; f != "" {
			label += " /" + f
		}
		if paneID(i) == m.focus {
			parts = append(parts, m.st.TabActive.Render("["+label+"]"))
		} else {
			parts = append(parts, m.st.TabInactive.Render(" "+label+" "))
		}
	}
	return strings.Join(parts, "")
}

func (m *Model) statusLine() string {
	switch m.inputMode {
	case inputFilter:
		return "/" + m.input.View()
	case inputCommand:
		return ":" + m.input.View()
	}
	if m.statusErr {
		return m.st.Error.Render("✗ " + m.status)
	}
	return m.st.Muted.Render(m.status)
}

func (m *Model) helpLine() string {
	var parts []string
	add := func(k, desc string) { parts = append(parts, m.st.Key.Render(k)+" "+desc) }
	switch m.focus {
	case paneGates:
		add(keyName(m.keys.Approve), "approve")
		add(keyName(m.keys.Revise), "revise")
		add(keyName(m.keys.Kill), "kill")
	case paneCheckpoints:
		add(keyName(m.keys.Commit), "commit")
		add(keyName(m.keys.Revert), "revert")
	case paneTrace, paneFlows:
		add(keyName(m.keys.Open), "open")
	}
	for _, b := range m.keys.ShortHelp() {
		add(b.Help().Key, b.Help().Desc)
	}
	return m.st.Footer.Render(strings.Join(parts, " · "))
}

func (m *Model) dialogBody(d dialog, height int) []string {
	inner := min(m.width-4, 96)
	box := m.st.Dialog.Width(inner).Render(d.view(m, inner-2))
	placed := lipgloss.PlaceHorizontal(m.width, lipgloss.Center, box)
	lines := strings.Split(placed, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	top := (height - len(lines)) / 2
	out := make([]string, top, height)
	return append(out, lines...)
}

func (m *Model) paneBody(p paneID, height int) []string {
	switch p {
	case paneFlows:
		return m.flowsView(height)
	case paneTrace:
		return m.traceView(height)
	case paneGates:
		return m.gatesView(height)
	case paneCheckpoints:
		return m.checkpointsView(height)
	case paneIterations:
		return m.iterationsView(height)
	case paneSpecs:
		return m.specsView(height)
	}
	return nil
}

// rowCount is the number of selectable rows of a pane.
func (m *Model) rowCount(p paneID) int {
	switch p {
	case paneFlows:
		return len(m.visibleFlows())
	case paneTrace:
		return len(m.traceLines())
	case paneGates:
		return len(m.visibleReviews())
	case paneCheckpoints:
		return len(m.checkpoints())
	case paneIterations:
		return len(m.iterationRows())
	case paneSpecs:
		return len(m.visibleSpecs())
	}
	return 0
}

// rows renders a scrolled list: header line, then rows with the cursor row
// highlighted.
func (m *Model) rows(p paneID, height int, header string, n int, row func(i int) string) []string {
	out := []string{m.st.Header.Render("  " + header)}
	h := height - 1
	l := &m.lists[p]
	start := l.window(h, n)
	for i := start; i < n && i < start+h; i++ {
		line := "  " + row(i)
		if i == l.cursor {
			// The cursor is marked by a glyph too, so it shows without colour.
			line = m.st.Selected.Render(padRight("› "+ansi.Strip(line[2:]), m.width))
		}
		out = append(out, line)
	}
	return out
}

// ---- Flows ----

func matches(filter string, fields ...string) bool {
	if filter == "" {
		return true
	}
	f := strings.ToLower(filter)
	for _, s := range fields {
		if strings.Contains(strings.ToLower(s), f) {
			return true
		}
	}
	return false
}

func (m *Model) visibleFlows() []engine.FlowSummary {
	f := m.filters[paneFlows]
	if f == "" {
		return m.flows
	}
	var out []engine.FlowSummary
	for _, s := range m.flows {
		if matches(f, s.FlowID, s.FlowName, string(s.Status), s.CurrentStep, s.Driver) {
			out = append(out, s)
		}
	}
	return out
}

func statusIcon(s engine.FlowStatus) string {
	switch s {
	case engine.StatusRunning:
		return "▶"
	case engine.StatusAwaitingGate:
		return "⏸"
	case engine.StatusComplete:
		return "✓"
	case engine.StatusKilled:
		return "☠"
	case engine.StatusFailed, engine.StatusBudgetExhausted:
		return "✗"
	}
	return "·"
}

func (m *Model) flowsView(height int) []string {
	fl := m.visibleFlows()
	if len(fl) == 0 {
		msg := "No flows yet. Start one with `stratum plan`, `stratum run` or an agent over MCP."
		if m.filters[paneFlows] != "" {
			msg = "No flow matches the filter (esc clears it)."
		}
		return []string{m.st.Muted.Render(msg)}
	}
	wide := m.width >= 110
	now := m.now()
	nameW := 18
	if wide {
		nameW = 24
	}
	header := fmt.Sprintf("%-16s %-*s %-14s %5s %5s %-6s %-6s", "STATUS", nameW, "FLOW", "STEP", "K/N", "ROUND", "AGE", "DRIVER")
	if wide {
		header += fmt.Sprintf(" %-8s %s", "ID", "UPDATED")
	}
	return m.rows(paneFlows, height, header, len(fl), func(i int) string {
		f := fl[i]
		status := m.st.status(f.Status).Render(padRight(statusIcon(f.Status)+" "+string(f.Status), 16))
		kn := fmt.Sprintf("%d/%d", f.StepNumber, f.TotalSteps)
		if f.TotalSteps == 0 {
			kn = fmt.Sprintf("%d/-", f.StepNumber)
		}
		driver := f.Driver
		if driver == "" {
			driver = "-"
		}
		line := fmt.Sprintf("%s %-*s %-14s %5s %5d %-6s %-6s", status, nameW, truncate(f.FlowName, nameW), truncate(f.CurrentStep, 14),
			kn, f.Round, age(now.Sub(f.CreatedAt)), driver)
		if wide {
			line += fmt.Sprintf(" %-8s %s ago", shortID(f.FlowID), age(now.Sub(f.UpdatedAt)))
		}
		return line
	})
}

// age renders a duration compactly: 45s, 3m, 2h, 4d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// ---- Trace ----

type traceLine struct {
	seq    uint64
	text   string
	detail string // shown when expanded
	style  func(...string) string
}

// traceLines builds the trace of the detail flow from its events: attempts,
// durations (from the step records), violations, cost (runner trace
// records), gate decisions, checkpoints and iteration reports.
func (m *Model) traceLines() []traceLine {
	if m.detail == nil {
		return nil
	}
	st := m.detail
	durations := map[string]int64{}
	for _, r := range st.Records {
		if r.Type == engine.RecordStep {
			durations[r.StepID] = r.DurationMS
		}
	}
	f := m.filters[paneTrace]
	out := make([]traceLine, 0, len(m.detailEvents))
	for _, ev := range m.detailEvents {
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
			tl.style = m.st.OK.Render
		case engine.EventStepFailed:
			text = fmt.Sprintf("✗ %s attempt %v %v: %s", ev.StepID, d["attempt"], d["status"], joinAny(d["violations"]))
			if ex, _ := d["exhausted"].(bool); ex {
				text += " (retries exhausted)"
			}
			detail = joinAnyLines(d["violations"])
			tl.style = m.st.Failed.Render
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
			if c, ok := d["cost_usd"].(float64); ok {
				text += fmt.Sprintf(" $%.4f", c)
			}
			if tr != nil {
				detail = jsonText(tr["output"])
			}
		case engine.EventGateOpened:
			text = fmt.Sprintf("⏸ gate %s opened", ev.StepID)
			tl.style = m.st.Waiting.Render
		case engine.EventGateResolved:
			text = fmt.Sprintf("⚑ gate %s %v", ev.StepID, d["outcome"])
			if r, ok := d["reviewer"].(string); ok && r != "" {
				text += " by " + r
			}
			if c, ok := d["channel"].(string); ok && c != "" {
				text += " (" + c + ")"
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
		if !matches(f, tl.text) {
			continue
		}
		out = append(out, tl)
	}
	return out
}

func (m *Model) detailHeader() string {
	st := m.detail
	if st == nil {
		if m.detailID == "" {
			return m.st.Muted.Render("No flow selected (pick one in Flows).")
		}
		return m.st.Muted.Render("Loading flow " + shortID(m.detailID) + "…")
	}
	h := fmt.Sprintf("%s %s · %s · round %d", shortID(st.FlowID), st.FlowName, m.st.status(st.Status).Render(statusIcon(st.Status)+" "+string(st.Status)), st.Round)
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

func (m *Model) traceView(height int) []string {
	lines := m.traceLines()
	out := []string{m.detailHeader()}
	if m.detail == nil {
		return out
	}
	if len(lines) == 0 {
		return append(out, m.st.Muted.Render("No events recorded for this flow."))
	}
	// Expanded lines take extra rows; render within the height.
	l := &m.lists[paneTrace]
	h := height - 1
	start := l.window(h, len(lines))
	for i := start; i < len(lines) && len(out) < height; i++ {
		tl := lines[i]
		marker := "  "
		if tl.detail != "" {
			marker = "▸ "
			if m.expanded[tl.seq] {
				marker = "▾ "
			}
		}
		text := "  " + marker + tl.text
		if i == l.cursor {
			text = m.st.Selected.Render(padRight("› "+marker+tl.text, m.width))
		} else if tl.style != nil {
			text = tl.style(text)
		}
		out = append(out, text)
		if m.expanded[tl.seq] && tl.detail != "" {
			for _, dl := range strings.Split(tl.detail, "\n") {
				if len(out) >= height {
					break
				}
				out = append(out, "      "+m.st.Muted.Render(dl))
			}
		}
	}
	return out
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

func anyStrings(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

func joinAny(v any) string      { return strings.Join(anyStrings(v), "; ") }
func joinAnyLines(v any) string { return strings.Join(anyStrings(v), "\n") }

// lastViolations are the violations of the detail flow's most recent failed
// attempt (what led to the gate), when the detail is that flow.
func lastViolations(m *Model, flowID string) string {
	if m.detail == nil || m.detail.FlowID != flowID {
		return ""
	}
	for i := len(m.detailEvents) - 1; i >= 0; i-- {
		ev := m.detailEvents[i]
		if ev.Type == engine.EventStepFailed {
			return ev.StepID + ": " + joinAny(ev.Data["violations"])
		}
		if ev.Type == engine.EventGateResolved {
			return ""
		}
	}
	return ""
}

// ---- Gates ----

func (m *Model) visibleReviews() []review.PendingReview {
	f := m.filters[paneGates]
	if f == "" {
		return m.reviews
	}
	var out []review.PendingReview
	for _, r := range m.reviews {
		if matches(f, r.FlowID, r.FlowName, r.StepID, r.Question) {
			out = append(out, r)
		}
	}
	return out
}

// deadlineText counts down to the gate's deadline.
func deadlineText(r review.PendingReview, now time.Time) string {
	if r.Deadline == nil {
		return "no deadline"
	}
	left := r.Deadline.Sub(now)
	if left <= 0 {
		return "deadline passed (" + string(r.OnTimeout) + ")"
	}
	left = left.Truncate(time.Second)
	return fmt.Sprintf("%s left, then %s", left, r.OnTimeout)
}

func (m *Model) gatesView(height int) []string {
	rs := m.visibleReviews()
	if len(rs) == 0 {
		msg := "No gate is waiting for a decision."
		if m.filters[paneGates] != "" {
			msg = "No gate matches the filter (esc clears it)."
		}
		return []string{m.st.Muted.Render(msg)}
	}
	now := m.now()
	listH := min(len(rs)+1, max(2, height/3))
	out := m.rows(paneGates, listH, fmt.Sprintf("%-20s %-14s %5s %-8s %s", "FLOW", "GATE", "ROUND", "ID", "DEADLINE"), len(rs), func(i int) string {
		r := rs[i]
		return fmt.Sprintf("%-20s %-14s %5d %-8s %s", truncate(r.FlowName, 20), truncate(r.StepID, 14), r.Round, shortID(r.FlowID), deadlineText(r, now))
	})
	r, _ := m.selectedReview()
	out = append(out, "")
	out = append(out, m.st.Header.Render("Gate "+r.StepID+" of "+r.FlowName+fmt.Sprintf(" · round %d · opened %s ago · %s", r.Round, age(now.Sub(r.OpenedAt)), deadlineText(r, now))))
	out = append(out, wrapLines(r.Question, m.width)...)
	if v := lastViolations(m, r.FlowID); v != "" {
		out = append(out, m.st.Warning.Render("violations: "+v))
	}
	if prev, ok := r.Artifacts["previous_decisions"].([]map[string]any); ok && len(prev) > 0 {
		for _, p := range prev {
			out = append(out, m.st.Muted.Render(fmt.Sprintf("round %v: %v by %v: %v", p["round"], p["outcome"], p["reviewer"], p["rationale"])))
		}
	}
	if outs, ok := r.Artifacts["step_outputs"].(map[string]any); ok && len(outs) > 0 {
		out = append(out, m.st.Header.Render("Outputs"))
		keys := make([]string, 0, len(outs))
		for k := range outs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b, _ := json.Marshal(outs[k])
			out = append(out, "  "+k+": "+string(b))
		}
	}
	return out
}

// ---- Checkpoints ----

func (m *Model) checkpoints() []*engine.Checkpoint {
	if m.detail == nil {
		return nil
	}
	out := make([]*engine.Checkpoint, 0, len(m.detail.Checkpoints))
	for _, c := range m.detail.Checkpoints {
		if matches(m.filters[paneCheckpoints], c.Label) {
			out = append(out, c)
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

func (m *Model) checkpointsView(height int) []string {
	out := []string{m.detailHeader()}
	if m.detail == nil {
		return out
	}
	cps := m.checkpoints()
	if len(cps) == 0 {
		return append(out, m.st.Muted.Render(fmt.Sprintf("No checkpoints. Press %s to commit one.", keyName(m.keys.Commit))))
	}
	now := m.now()
	return append(out, m.rows(paneCheckpoints, height-1, fmt.Sprintf("%-24s %-10s %5s %6s %s", "LABEL", "CREATED", "ROUND", "STEPS", "AT STEP"), len(cps), func(i int) string {
		c := cps[i]
		return fmt.Sprintf("%-24s %-10s %5d %6d %d", truncate(c.Label, 24), age(now.Sub(c.CreatedAt))+" ago", c.Round, len(c.Records), c.CurrentIdx+1)
	})...)
}

// ---- Iterations ----

type iterRow struct {
	step  string
	e     engine.IterationEntry
	accum int
}

func (m *Model) iterationRows() []iterRow {
	if m.detail == nil {
		return nil
	}
	steps := make([]string, 0, len(m.detail.Iterations))
	for s := range m.detail.Iterations {
		steps = append(steps, s)
	}
	sort.Strings(steps)
	var out []iterRow
	for _, s := range steps {
		acc := 0
		for _, e := range m.detail.Iterations[s] {
			if e.NewCount != nil {
				acc += *e.NewCount
			}
			if matches(m.filters[paneIterations], s, e.Outcome) {
				out = append(out, iterRow{step: s, e: e, accum: acc})
			}
		}
	}
	return out
}

func (m *Model) iterationsView(height int) []string {
	out := []string{m.detailHeader()}
	if m.detail == nil {
		return out
	}
	if a := m.detail.ActiveIteration; a != nil {
		out = append(out, m.st.Running.Render(fmt.Sprintf("▶ %s: iteration %d of %d running", a.StepID, a.Count, a.MaxIterations)))
	}
	rows := m.iterationRows()
	if len(rows) == 0 {
		return append(out, m.st.Muted.Render("No iteration reports for this flow."))
	}
	opt := func(p *int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return append(out, m.rows(paneIterations, height-len(out), fmt.Sprintf("%-16s %4s %5s %5s %5s %6s %s", "STEP", "#", "ROUND", "NEW", "DRY", "ITEMS", "OUTCOME"), len(rows), func(i int) string {
		r := rows[i]
		items := "-"
		if r.e.NewCount != nil {
			items = fmt.Sprint(r.accum)
		}
		line := fmt.Sprintf("%-16s %4d %5d %5s %5s %6s %s", truncate(r.step, 16), r.e.Iteration, r.e.Round, opt(r.e.NewCount), opt(r.e.DryStreak), items, r.e.Outcome)
		if r.e.Score != nil {
			line += fmt.Sprintf(" score %.3g", *r.e.Score)
		}
		return line
	})...)
}

// ---- Specs ----

func (m *Model) visibleSpecs() []watch.Update {
	out := make([]watch.Update, 0, len(m.specs))
	for _, u := range m.specs {
		if matches(m.filters[paneSpecs], u.Path) {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func specValid(u watch.Update) bool { return u.Spec != nil && !u.Diags.HasErrors() }

func (m *Model) specsView(height int) []string {
	us := m.visibleSpecs()
	if len(us) == 0 {
		return []string{m.st.Muted.Render("No *.stratum.yaml files under the watched directories.")}
	}
	listH := min(len(us)+1, max(2, height/2))
	out := m.rows(paneSpecs, listH, "SPEC", len(us), func(i int) string {
		u := us[i]
		if specValid(u) {
			s := m.st.OK.Render("✓") + " " + u.Path
			if n := len(u.Spec.Flows); n > 0 {
				s += m.st.Muted.Render(fmt.Sprintf("  %d flow%s", n, plural(n)))
			}
			return s
		}
		return m.st.Error.Render("✗") + " " + u.Path + m.st.Muted.Render(fmt.Sprintf("  %d problem%s", len(u.Diags), plural(len(u.Diags))))
	})
	sel := us[min(m.lists[paneSpecs].cursor, len(us)-1)]
	out = append(out, "")
	if len(sel.Diags) == 0 {
		out = append(out, m.st.OK.Render("valid, no diagnostics"))
	}
	for _, d := range sel.Diags {
		style := m.st.Error
		if d.Severity == specs.SeverityWarning {
			style = m.st.Warning
		}
		line := fmt.Sprintf("%d:%d %s %s: %s", d.Line, d.Column, style.Render(string(d.Severity)), d.Code, d.Message)
		if d.Suggestion != "" {
			line += " (" + d.Suggestion + ")"
		}
		out = append(out, wrapLines(line, m.width)...)
	}
	return out
}

// ---- text helpers ----

func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

func padRight(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

func wrap(s string, w int) string { return strings.Join(wrapLines(s, w), "\n") }

func wrapLines(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	return strings.Split(ansi.Wrap(s, w, ""), "\n")
}

func jsonCompact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
