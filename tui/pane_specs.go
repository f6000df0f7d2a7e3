package tui

import (
	"errors"
	"fmt"
	"sort"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/watch"
)

// specsPaneDef registers the Specs pane: the spec files under watch and
// their diagnostics; enter runs a flow of a valid one (the run dialog).
var specsPaneDef = paneDef{title: "Specs", new: func(keyGroup) pane { return &specsPane{} }}

type specsPane struct{ paneBase }

func (p *specsPane) visible(c *common) []watch.Update {
	out := make([]watch.Update, 0, len(c.specs))
	for _, u := range c.specs {
		if matches(p.filter, u.Path) {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func (p *specsPane) Len(c *common) int { return len(p.visible(c)) }

func specValid(u watch.Update) bool { return u.Spec != nil && !u.Diags.HasErrors() }

// Update: enter on a valid spec opens the run dialog.
func (p *specsPane) Update(m *Model, msg tea.KeyMsg) tea.Cmd {
	if !key.Matches(msg, m.keys.Open) {
		return nil
	}
	us := p.visible(&m.common)
	if len(us) == 0 {
		return nil
	}
	u := us[min(p.l.cursor, len(us)-1)]
	switch {
	case m.opt.Runner == nil:
		m.setStatus("", errors.New("this console cannot run flows (no runner)"))
	case !specValid(u):
		m.setStatus("", errors.New(u.Path+" is invalid: fix its diagnostics first"))
	default:
		m.pushDialog(newRunDialog(u.Path, u.Spec))
	}
	return nil
}

func (p *specsPane) ShortHelp(*common) []key.Binding { return nil }

func (p *specsPane) View(c *common) []string {
	us := p.visible(c)
	if len(us) == 0 {
		return []string{c.st.Muted.Render("No *.stratum.yaml files under the watched directories.")}
	}
	listH := min(len(us)+1, max(2, p.height/2))
	out := p.rows(c, listH, "SPEC", len(us), func(i int) string {
		u := us[i]
		if specValid(u) {
			s := c.st.OK.Render("✓") + " " + clean(u.Path)
			if n := len(u.Spec.Flows); n > 0 {
				s += c.st.Muted.Render(fmt.Sprintf("  %d flow%s", n, plural(n)))
			}
			return s
		}
		return c.st.Error.Render("✗") + " " + clean(u.Path) + c.st.Muted.Render(fmt.Sprintf("  %d problem%s", len(u.Diags), plural(len(u.Diags))))
	})
	sel := us[min(p.l.cursor, len(us)-1)]
	out = append(out, "")
	if len(sel.Diags) == 0 {
		out = append(out, c.st.OK.Render("valid, no diagnostics"))
	}
	for _, d := range sel.Diags {
		style := c.st.Error
		if d.Severity == specs.SeverityWarning {
			style = c.st.Warning
		}
		line := fmt.Sprintf("%d:%d %s %s: %s", d.Line, d.Column, style.Render(string(d.Severity)), d.Code, clean(d.Message))
		if d.Suggestion != "" {
			line += " (" + clean(d.Suggestion) + ")"
		}
		out = append(out, wrapLines(line, p.width)...)
	}
	return out
}
