package tui

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// notesPaneDef is a pane defined the way every pane is: a type, its own key
// group and a paneDef. TestAddPane registers it with one more entry in the
// list of panes and nothing else.
var notesPaneDef = definePane("Notes", defaultNoteKeys, func(k *noteKeys) pane { return &notesPane{keys: k} })

type noteKeys struct{ Pin key.Binding }

func defaultNoteKeys() *noteKeys { return &noteKeys{Pin: bind("pin a note", "p")} }

func (k *noteKeys) actions() []action { return []action{{"pin", &k.Pin}} }

type notesPane struct {
	paneBase
	keys   *noteKeys
	pinned []string
}

// Len: one row per flow in the shared state, whose names the pane lists.
func (p *notesPane) Len(c *common) int { return len(c.flows.rows) }

func (p *notesPane) View(c *common) []string {
	return p.rows(c, p.height, "NOTE", len(c.flows.rows), func(i int) string { return "about " + c.flows.rows[i].FlowName })
}

func (p *notesPane) Update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, p.keys.Pin) {
		p.pinned = append(p.pinned, m.flows.rows[p.l.cursor].FlowName)
		m.setStatus("pinned "+m.flows.rows[p.l.cursor].FlowName, nil)
	}
	return nil
}

func (p *notesPane) ShortHelp(*common) []key.Binding {
	return []key.Binding{shortHelp(p.keys.Pin, "pin")}
}

// TestAddPane: a pane registered in the list gets a tab, a tab key (its
// position), a `:` command, remappable actions named after it, its footer
// and `?` help entries, its rows from the shared state and its own keys.
func TestAddPane(t *testing.T) {
	defs := append(registeredPanes[:len(registeredPanes):len(registeredPanes)], notesPaneDef)
	km := newKeyMap(defs)
	if err := km.ApplyOverrides(map[string][]string{"pin": {"P"}}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	m := New(Options{Source: f.src, Keys: km, Reviewer: "alice", Styles: DefaultStyles(NewRenderer(os.Stdout, true)), Tick: -1, panes: defs})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	drive(m, m.Init())
	if !strings.Contains(m.tabsLine(), " 7 Notes ") {
		t.Fatalf("no tab for the new pane: %q", m.tabsLine())
	}
	press(m, "7")
	notes, i := paneOf[*notesPane](t, m)
	if m.focus != i {
		t.Fatalf("7 focused pane %d, want %d", m.focus, i)
	}
	frame := m.View()
	if !strings.Contains(frame, "[7 Notes]") || !strings.Contains(frame, "› about deploy") || !strings.Contains(frame, "about hunt") {
		t.Fatalf("the new pane's body is missing:\n%s", frame)
	}
	if !strings.Contains(m.helpLine(), "P pin · tab pane") {
		t.Fatalf("footer %q", m.helpLine())
	}
	press(m, "p") // remapped to P: nothing
	press(m, "down", "P")
	if len(notes.pinned) != 1 || notes.pinned[0] != "hunt" || m.status != "pinned hunt" {
		t.Fatalf("pinned %v, status %q", notes.pinned, m.status)
	}
	press(m, "?")
	if help := m.View(); !regexp.MustCompile(`7 +notes`).MatchString(help) || !regexp.MustCompile(`P +pin a note`).MatchString(help) || !strings.Contains(help, "specs, notes, filter") {
		t.Fatalf("help lacks the new pane:\n%s", help)
	}
	press(m, "esc", "1", ":")
	typeText(m, "notes")
	press(m, "enter")
	if m.focus != i {
		t.Fatalf(":notes focused pane %d", m.focus)
	}
	// The registered panes themselves are untouched.
	if len(registeredPanes) != 6 || len(DefaultKeyMap().Panes) != 6 {
		t.Fatal("the test changed the registered panes")
	}
}

// TestActionNames: the action names of config.yaml's `keys:` section are
// the same as before the keys were grouped by pane, and a pane's own
// action remaps the binding that pane uses.
func TestActionNames(t *testing.T) {
	km := DefaultKeyMap()
	acts := km.Actions()
	want := strings.Fields("help filter command next_pane prev_pane back quit copy up down page_up page_down top bottom open pager " +
		"flows trace gates checkpoints iterations specs approve revise kill commit revert confirm edit")
	if len(acts) != len(want) {
		t.Errorf("%d actions, want %d", len(acts), len(want))
	}
	for _, name := range want {
		if acts[name] == nil {
			t.Errorf("action %s is gone", name)
		}
	}
	if err := km.ApplyOverrides(map[string][]string{"commit": {"C"}, "checkpoints": {"f4"}}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	m := New(Options{Source: f.src, Keys: km, Reviewer: "alice", Styles: DefaultStyles(NewRenderer(os.Stdout, true)), Tick: -1})
	drive(m, m.Init())
	press(m, "down", "4")
	if _, cp := paneOf[*checkpointsPane](t, m); m.focus == cp {
		t.Fatal("4 still focuses Checkpoints after remapping it")
	}
	press(m, "f4", "n")
	if _, cp := paneOf[*checkpointsPane](t, m); m.focus != cp || len(m.dialogs) != 0 {
		t.Fatalf("f4: pane %d; n after remapping commit: %d dialogs", m.focus, len(m.dialogs))
	}
	press(m, "C")
	if _, ok := m.dialogs[0].(*labelDialog); !ok || !strings.Contains(m.View(), "Commit a checkpoint") {
		t.Fatal("C did not open the commit dialog")
	}
}
