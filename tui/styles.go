package tui

import (
	"io"
	"os"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/stratum-go/stratum/engine/state"
)

// Styles are every style of the console, defined once from semantic
// colours. View code never builds styles inline.
type Styles struct {
	Title, Header, Muted, Selected, Focused, TabActive, TabInactive lipgloss.Style
	// Status colours, by meaning (never the only carrier of the meaning: a
	// status is always written out too).
	Running, Waiting, Complete, Failed, Killed lipgloss.Style
	OK, Error, Warning                         lipgloss.Style
	Dialog, DialogTitle, Key, Footer           lipgloss.Style
}

// noColor reports whether the environment asks for no colour (NO_COLOR set
// to anything non-empty, see no-color.org).
func noColor() bool { return os.Getenv("NO_COLOR") != "" }

// NewRenderer returns the lipgloss renderer for w: colour detected from the
// terminal, or none at all when monochrome is set.
func NewRenderer(w io.Writer, monochrome bool) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(w)
	if monochrome {
		r.SetColorProfile(termenv.Ascii)
	}
	return r
}

// DefaultStyles builds the styles on renderer r.
func DefaultStyles(r *lipgloss.Renderer) Styles {
	c := func(light, dark string) lipgloss.AdaptiveColor {
		return lipgloss.AdaptiveColor{Light: light, Dark: dark}
	}
	var (
		accent  = c("#5A3FC0", "#9D8CFF")
		muted   = c("#777777", "#8A8A8A")
		green   = c("#1B7F3B", "#5FD787")
		yellow  = c("#8A6D00", "#FFD75F")
		red     = c("#B00020", "#FF6B6B")
		blue    = c("#005FAF", "#5FAFFF")
		magenta = c("#8B008B", "#D787D7")
	)
	s := func() lipgloss.Style { return r.NewStyle() }
	return Styles{
		Title:       s().Bold(true).Foreground(accent),
		Header:      s().Bold(true),
		Muted:       s().Foreground(muted),
		Selected:    s().Reverse(true),
		Focused:     s().Foreground(accent).Bold(true),
		TabActive:   s().Bold(true).Underline(true).Foreground(accent),
		TabInactive: s().Foreground(muted),
		Running:     s().Foreground(blue),
		Waiting:     s().Foreground(yellow).Bold(true),
		Complete:    s().Foreground(green),
		Failed:      s().Foreground(red),
		Killed:      s().Foreground(magenta),
		OK:          s().Foreground(green),
		Error:       s().Foreground(red).Bold(true),
		Warning:     s().Foreground(yellow),
		Dialog:      s().Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 1),
		DialogTitle: s().Bold(true).Foreground(accent),
		Key:         s().Bold(true),
		Footer:      s().Foreground(muted),
	}
}

// status returns the style for a flow status.
func (st Styles) status(s state.FlowStatus) lipgloss.Style {
	switch s {
	case state.StatusRunning:
		return st.Running
	case state.StatusAwaitingGate:
		return st.Waiting
	case state.StatusComplete:
		return st.Complete
	case state.StatusFailed, state.StatusBudgetExhausted:
		return st.Failed
	case state.StatusKilled:
		return st.Killed
	}
	return st.Muted
}

// flowStatus is the style of a flow's status as the console shows it
// (flowStatusText): a stalled flow is a warning, not running.
func (st Styles) flowStatus(f *state.FlowSummary, now time.Time) lipgloss.Style {
	if f.Stalled(now) {
		return st.Warning
	}
	return st.status(f.Status)
}
