package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs"
)

// View renders exactly height lines of at most width cells; Bubble Tea's
// renderer diffs them against the previous frame (no full clears). The
// layout is two header lines (counts, tabs), the body (the focused pane, or
// the top dialog), and two footer lines (status, help).
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
		body = m.focused().View(&m.common)
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
	// Only flows something drives count as running; a flow whose runner
	// is gone is counted apart (it needs `stratum run --resume`). The
	// counts are the last pass's over the listing (flowCounts).
	k := &m.flows.counts
	running, stalled := k.at(m.now())
	waiting := len(m.reviews)
	s := m.st
	if m.loadErr != nil {
		// The counts would be stale: say the store is unreachable instead,
		// or, when a newer stratum migrated it under this console, that
		// only a restart with the newer stratum reads it again.
		what := "✗ store unreachable"
		if errors.Is(m.loadErr, engine.ErrNewerStore) {
			what = "✗ the store was written by a newer stratum: quit and start the newer stratum tui (or upgrade)"
		}
		left := s.Title.Render("stratum") + "  " + s.Error.Render(what)
		if !m.lastLoadAt.IsZero() {
			left += " " + s.Muted.Render("(last read "+m.lastLoadAt.UTC().Format("15:04:05")+", the panes show that)")
		}
		if m.opt.Backend != "" {
			left += "  " + s.Muted.Render("on "+clean(m.opt.Backend))
		}
		return left + "  " + s.Error.Render(clean(m.loadErr.Error()))
	}
	left := s.Title.Render("stratum") + "  " +
		s.Running.Render(fmt.Sprintf("%d running", running)) + " · "
	if stalled > 0 {
		left += s.Warning.Render(fmt.Sprintf("%d stalled", stalled)) + " · "
	}
	left += s.Waiting.Render(fmt.Sprintf("%d waiting gate%s", waiting, plural(waiting))) + " · " +
		fmt.Sprintf("%d flows", k.total)
	if m.opt.Backend != "" {
		left += "  " + s.Muted.Render("on "+clean(m.opt.Backend))
	}
	if !m.loaded {
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
	parts := make([]string, 0, len(m.panes))
	for i, p := range m.panes {
		label := fmt.Sprintf("%d %s", i+1, p.Title())
		if b, ok := p.(badged); ok {
			label += b.badge(&m.common)
		}
		if f := p.base().filter; f != "" {
			label += " /" + f
		}
		if i == m.focus {
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
	if m.now().Sub(m.statusAt) >= m.opt.StatusTTL {
		return "" // expired: an old message would read as news
	}
	return m.st.Muted.Render(m.status)
}

// helpLine is the footer: the focused pane's ShortHelp, then the globals,
// as many whole entries as fit the width; `? help` and `q quit` always
// stay (the help lists everything).
//
// A dialog's footer is its own keys, and the `/` or `:` line's is enter
// and esc: the main screen's keys do not work there.
func (m *Model) helpLine() string {
	entries := append(m.focused().ShortHelp(&m.common), m.keys.ShortHelp()...)
	switch {
	case len(m.dialogs) > 0:
		entries = m.dialogs[len(m.dialogs)-1].help(m)
	case m.inputMode == inputFilter:
		entries = []key.Binding{hint("enter", "apply"), hint("esc", "clear")}
	case m.inputMode == inputCommand:
		entries = []key.Binding{hint("enter", "run"), hint("esc", "cancel")}
	}
	text := func(b key.Binding) string { return b.Help().Key + " " + b.Help().Desc }
	const sep = " · "
	sepW := ansi.StringWidth(sep)
	always := func(b key.Binding) bool {
		return b.Help() == m.keys.Help.Help() || b.Help() == m.keys.Quit.Help()
	}
	used := 0
	for _, b := range entries {
		if always(b) {
			used += ansi.StringWidth(text(b)) + sepW
		}
	}
	keep := make([]bool, len(entries))
	for i, b := range entries {
		if always(b) {
			keep[i] = true
			continue
		}
		if w := ansi.StringWidth(text(b)) + sepW; used+w <= m.width+sepW {
			keep[i], used = true, used+w
		}
	}
	var parts []string
	for i, b := range entries {
		if keep[i] {
			parts = append(parts, m.st.Key.Render(b.Help().Key)+" "+b.Help().Desc)
		}
	}
	return m.st.Footer.Render(strings.Join(parts, sep))
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

// clean makes untrusted text (names, questions, outputs, violations,
// rationales, error messages) safe to render: specs.EscapeControl on each
// line, keeping the line breaks. Apply it to raw text, never to styled text.
func clean(s string) string {
	return specs.EscapeControlLines(s)
}

func wrap(s string, w int) string { return strings.Join(wrapLines(s, w), "\n") }

func wrapLines(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	// A line of at most w bytes is at most w cells: nothing to wrap (the
	// common case, and ansi.Wrap is most of a long detail's frame).
	if len(s) <= w && !strings.Contains(s, "\n") {
		return []string{s}
	}
	return strings.Split(ansi.Wrap(s, w, ""), "\n")
}

// pagerWidth is the width text for $PAGER is wrapped at (the pager wraps
// or scrolls sideways itself).
const pagerWidth = 1 << 16

// plainText is title and lines as the pager gets them: no styles.
func plainText(title string, lines []string) string {
	var b strings.Builder
	b.WriteString(title + "\n\n")
	for _, l := range lines {
		b.WriteString(ansi.Strip(l) + "\n")
	}
	return b.String()
}

func jsonCompact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
