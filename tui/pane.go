package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs/watch"
)

// registeredPanes are the console's panes in tab order: the one place a
// pane is registered. Adding a pane is one new file (pane_NAME.go: the
// pane's type, its paneDef and, if it has keys of its own, their group) and
// one entry here; its tab, tab key (its position), `:` command, footer,
// help and config actions follow from the definition.
var registeredPanes = []paneDef{
	flowsPaneDef,
	tracePaneDef,
	gatesPaneDef,
	checkpointsPaneDef,
	iterationsPaneDef,
	specsPaneDef,
}

// pane is one tab of the console: a small component the root model drives.
// A pane holds only its view state (cursor, filter, size, what is
// expanded); the data comes from common, which the root keeps current from
// the results of its commands, so a pane is never stale and never does I/O.
type pane interface {
	// Title names the pane: its tab, its `:` command and, in lower case,
	// the action of its tab key.
	Title() string
	// SetSize gives the pane the size of the body it renders into. Only the
	// root reacts to tea.WindowSizeMsg; it computes the layout once.
	SetSize(width, height int)
	// Len is the number of selectable rows for the shared state c (after
	// the pane's filter). The root calls it whenever c changes, to keep the
	// cursor in range, and for its list keys.
	Len(c *common) int
	// View renders the body from c: at most the height given to SetSize.
	View(c *common) []string
	// Update handles a key the root did not: the root handles global and
	// list keys first, and dialogs take every key while they are open. It
	// may open dialogs and set the status line through m; any I/O is in
	// the command it returns.
	Update(m *Model, msg tea.KeyMsg) tea.Cmd
	// ShortHelp is the pane's part of the footer (the global keys follow).
	ShortHelp(c *common) []key.Binding
	// base is the state every pane has: title, size, cursor and filter.
	base() *paneBase
}

// Optional pane behaviours, found by the root with type assertions.
type (
	// flowSelector is a pane whose rows are about flows (Flows, Gates): while
	// it is focused, the detail panes show the flow it selects; moving its
	// cursor or filtering it reloads that detail.
	flowSelector interface {
		selectedFlow(c *common) string
		// selectFlow puts the cursor on flow id's row, if it has one.
		selectFlow(c *common, id string)
	}
	// detailPane is a pane that shows the detail flow (Trace, Checkpoints,
	// Iterations): its cursor goes back to the top when that flow changes.
	detailPane interface {
		showsDetail()
	}
	// badged is a pane whose tab shows a count, e.g. Gates(2).
	badged interface {
		badge(c *common) string
	}
	// reader is a pane with a detail that scrolls (Gates: the selected
	// gate's context; Trace: the open entry). The root offers it every
	// list key first; scroll reports whether the detail took it.
	reader interface {
		scroll(c *common, msg tea.KeyMsg) bool
	}
	// pagerPane is a pane whose selection can be read in $PAGER: text is
	// its full content, uncut and without styles ("" when nothing is
	// selected).
	pagerPane interface {
		pagerText(c *common) (title, text string)
	}
)

// scrollView is a window over a detail's lines: the one place detail
// scrolling is done, for every pane with a reader.
type scrollView struct {
	offset int
	// n and height are the lines and the room of the last render, which
	// the keys scroll by.
	n, height int
	// keysText, when set, replaces the keys the last row names (a
	// dialog's: no pager there).
	keysText string
}

// overflows reports whether the last render had more lines than room.
func (v *scrollView) overflows() bool { return v.n > v.height }

// key scrolls by msg: the page keys by a page (less one line, for
// context), g/G (Top, Bottom) to the ends, and, when lines is set, the
// line keys by one. It reports whether msg was such a key.
func (v *scrollView) key(k KeyMap, msg tea.KeyMsg, lines bool) bool {
	page := max(1, v.height-2)
	switch {
	case key.Matches(msg, k.PageDown):
		v.offset += page
	case key.Matches(msg, k.PageUp):
		v.offset -= page
	case key.Matches(msg, k.Top):
		v.offset = 0
	case key.Matches(msg, k.Bottom):
		v.offset = v.n
	case lines && key.Matches(msg, k.Down):
		v.offset++
	case lines && key.Matches(msg, k.Up):
		v.offset--
	default:
		return false
	}
	v.clamp()
	return true
}

func (v *scrollView) clamp() {
	v.offset = max(0, min(v.offset, v.n-v.height))
}

// window renders lines in height rows: all of them when they fit, else
// height-1 of them from the offset and a last row saying where the window
// is and how to move it (ends: whether top and bottom go to its ends).
func (v *scrollView) window(c *common, lines []string, height, width int, ends bool) []string {
	if height <= 0 {
		return nil
	}
	if len(lines) <= height {
		v.n, v.height, v.offset = len(lines), height, 0
		return lines
	}
	room := height - 1
	v.n, v.height = len(lines), room
	v.clamp()
	out := append([]string(nil), lines[v.offset:v.offset+room]...)
	k := c.keys
	more := fmt.Sprintf("lines %d–%d of %d · ", v.offset+1, v.offset+room, len(lines))
	if v.keysText != "" {
		return append(out, c.st.Muted.Render(truncate(more+v.keysText, width)))
	}
	more += fmt.Sprintf("%s/%s page", keyName(k.PageDown), keyName(k.PageUp))
	if ends {
		more += fmt.Sprintf(" · %s/%s ends", keyName(k.Top), keyName(k.Bottom))
	}
	more += " · " + keyName(k.Pager) + " pager"
	return append(out, c.st.Muted.Render(truncate(more, width)))
}

// paneDef registers a pane: its title, its own default bindings (nil when
// it has none) and its constructor, which gets those bindings (from the
// KeyMap, so remapped).
type paneDef struct {
	title string
	keys  func() keyGroup
	new   func(own keyGroup) pane
}

// definePane is a paneDef for a pane with keys of its own, of type K.
func definePane[K keyGroup](title string, keys func() K, newPane func(own K) pane) paneDef {
	return paneDef{
		title: title,
		keys:  func() keyGroup { return keys() },
		new:   func(own keyGroup) pane { return newPane(own.(K)) },
	}
}

// newPanes builds the panes of defs with the bindings of km: each pane's own
// group from km when km has one for it, else its defaults.
func newPanes(defs []paneDef, km *KeyMap) []pane {
	out := make([]pane, 0, len(defs))
	for _, d := range defs {
		var own keyGroup
		if pk := km.paneKeys(d.title); pk != nil && pk.own != nil {
			own = pk.own
		} else if d.keys != nil {
			own = d.keys()
		}
		p := d.new(own)
		p.base().title = d.title
		out = append(out, p)
	}
	return out
}

// findPane is the pane of type T among panes and its index (-1 if none).
func findPane[T pane](panes []pane) (T, int) {
	for i, p := range panes {
		if t, ok := p.(T); ok {
			return t, i
		}
	}
	var zero T
	return zero, -1
}

// common is what the root owns and every pane and dialog reads: the keys,
// the styles, the clock, the terminal's size and the data loaded by the
// root's commands. Only the root writes it, in Update.
type common struct {
	keys   KeyMap
	st     Styles
	now    func() time.Time
	width  int
	height int

	// flows is the window of the Flows listing and the header's counts
	// (flowwindow.go), never every flow.
	flows   flowWindow
	reviews []review.PendingReview
	// gateCtx is the loaded context of pending gates, by review id.
	gateCtx map[string]*gateContext
	specs   map[string]watch.Update
	// The detail flow: the one the detail panes show.
	detailID     string
	detail       *state.FlowState
	detailEvents []engine.Event
	// detailSum is the detail flow's stored summary and detailRoot the
	// root of its line of parents, read with it (the window may not
	// hold them).
	detailSum  *state.FlowSummary
	detailRoot string
	// detailStages are the detail flow's pipeline steps' stage counts,
	// from its stored spec (pipelineStages).
	detailStages map[string]int
	// inflight marks the flows whose step is under way, from the store's
	// events (inflight.go); inflightSeen the flows an event spoke for.
	inflight     map[string]inflightStep
	inflightSeen map[string]bool
	// invocation runs this stratum in the commands shown (Options).
	invocation string
}

// paneBase is the state every pane has; panes embed it.
type paneBase struct {
	title         string
	width, height int
	l             listState
	filter        string
}

func (b *paneBase) Title() string             { return b.title }
func (b *paneBase) SetSize(width, height int) { b.width, b.height = width, height }
func (b *paneBase) base() *paneBase           { return b }

// rows renders a scrolled list of n rows in height lines: a header line,
// then the rows with the cursor's highlighted.
func (b *paneBase) rows(c *common, height int, header string, n int, row func(i int) string) []string {
	out := []string{c.st.Header.Render("  " + header)}
	h := height - 1
	l := &b.l
	start := l.window(h, n)
	for i := start; i < n && i < start+h; i++ {
		line := "  " + row(i)
		if i == l.cursor {
			// The cursor is marked by a glyph too, so it shows without colour.
			line = c.st.Selected.Render(padRight("› "+ansi.Strip(line[2:]), b.width))
		}
		out = append(out, line)
	}
	return out
}

// empty is the one muted line of a pane with nothing to show: msg, or
// filtered when a filter hides everything.
func (b *paneBase) empty(c *common, msg, filtered string) []string {
	if b.filter != "" {
		msg = filtered
	}
	return []string{c.st.Muted.Render(msg)}
}

// listState is a cursor and a scroll offset.
type listState struct{ cursor, offset int }

func (l *listState) move(d, n int) {
	l.cursor += d
	l.clamp(n)
}

func (l *listState) clamp(n int) {
	if l.cursor >= n {
		l.cursor = n - 1
	}
	if l.cursor < 0 {
		l.cursor = 0
	}
}

// window returns the first visible row for height rows, keeping the cursor
// in view.
func (l *listState) window(height, n int) int {
	if height <= 0 {
		return 0
	}
	if l.cursor < l.offset {
		l.offset = l.cursor
	}
	if l.cursor >= l.offset+height {
		l.offset = l.cursor - height + 1
	}
	if l.offset > max(0, n-height) {
		l.offset = max(0, n-height)
	}
	return l.offset
}

// matches reports whether any field contains filter (case-insensitive).
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
