package tui

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"

	"github.com/stratum-go/stratum/engine/config"
)

// KeyMap is every key binding of the console, defined once. Each field's
// name in the `keys:` section of config.yaml is given by Actions.
type KeyMap struct {
	// Global.
	Help, Filter, Command, NextPane, PrevPane, Back, Quit key.Binding
	// Lists.
	Up, Down, PageUp, PageDown, Top, Bottom, Open key.Binding
	// Panes by number.
	Flows, Trace, Gates, Checkpoints, Iterations, Specs key.Binding
	// Gates.
	Approve, Revise, Kill key.Binding
	// Checkpoints.
	Commit, Revert key.Binding
	// Dialogs.
	Confirm, Edit key.Binding
}

// DefaultKeyMap returns the default bindings.
func DefaultKeyMap() KeyMap {
	b := func(help string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(strings.Join(keys, "/"), help))
	}
	return KeyMap{
		Help:        b("help", "?"),
		Filter:      b("filter", "/"),
		Command:     b("command", ":"),
		NextPane:    b("pane", "tab"),
		PrevPane:    b("previous pane", "shift+tab"),
		Back:        b("back", "esc"),
		Quit:        key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Up:          b("up", "up", "k"),
		Down:        b("down", "down", "j"),
		PageUp:      b("page up", "pgup", "ctrl+u"),
		PageDown:    b("page down", "pgdown", "ctrl+d"),
		Top:         b("top", "home", "g"),
		Bottom:      b("bottom", "end", "G"),
		Open:        b("open/expand", "enter"),
		Flows:       b("flows", "1"),
		Trace:       b("trace", "2"),
		Gates:       b("gates", "3"),
		Checkpoints: b("checkpoints", "4"),
		Iterations:  b("iterations", "5"),
		Specs:       b("specs", "6"),
		Approve:     b("approve", "a"),
		Revise:      b("revise", "r"),
		Kill:        b("kill", "x"),
		Commit:      b("commit checkpoint", "n"),
		Revert:      b("revert to checkpoint", "v"),
		Confirm:     b("confirm", "enter"),
		Edit:        b("edit rationale", "e"),
	}
}

// Actions maps the action names used in config.yaml to the bindings.
func (k *KeyMap) Actions() map[string]*key.Binding {
	return map[string]*key.Binding{
		"help": &k.Help, "filter": &k.Filter, "command": &k.Command,
		"next_pane": &k.NextPane, "prev_pane": &k.PrevPane, "back": &k.Back, "quit": &k.Quit,
		"up": &k.Up, "down": &k.Down, "page_up": &k.PageUp, "page_down": &k.PageDown,
		"top": &k.Top, "bottom": &k.Bottom, "open": &k.Open,
		"flows": &k.Flows, "trace": &k.Trace, "gates": &k.Gates, "checkpoints": &k.Checkpoints,
		"iterations": &k.Iterations, "specs": &k.Specs,
		"approve": &k.Approve, "revise": &k.Revise, "kill": &k.Kill,
		"commit": &k.Commit, "revert": &k.Revert, "confirm": &k.Confirm, "edit": &k.Edit,
	}
}

// keyError is a refused binding of one action.
type keyError struct{ action, msg string }

func (e *keyError) Error() string { return "keys." + e.action + ": " + e.msg }

// ApplyOverrides rebinds actions: each value is one key or a list of keys
// ("ctrl+a", "A", "f2"). An unknown action or an empty key list is an error
// naming it; nothing is changed then.
func (k *KeyMap) ApplyOverrides(over map[string][]string) error {
	acts := k.Actions()
	names := make([]string, 0, len(over))
	for name := range over {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := acts[name]; !ok {
			known := make([]string, 0, len(acts))
			for n := range acts {
				known = append(known, n)
			}
			sort.Strings(known)
			return &keyError{name, "unknown action (known: " + strings.Join(known, ", ") + ")"}
		}
		if len(over[name]) == 0 {
			return &keyError{name, "no keys given"}
		}
		for _, s := range over[name] {
			if strings.TrimSpace(s) == "" {
				return &keyError{name, "empty key"}
			}
		}
	}
	for _, name := range names {
		b := acts[name]
		*b = key.NewBinding(key.WithKeys(over[name]...), key.WithHelp(strings.Join(over[name], "/"), b.Help().Desc))
	}
	return nil
}

// KeyMapFrom returns DefaultKeyMap with the configured bindings (the
// `keys:` section of the config files, read by engine/config) applied. An
// unknown action or an empty key list is an error naming where it was set
// (file:line); nothing is changed then.
func KeyMapFrom(keys map[string]config.Keys) (KeyMap, error) {
	km := DefaultKeyMap()
	over := make(map[string][]string, len(keys))
	for action, k := range keys {
		over[action] = k.Keys
	}
	if err := km.ApplyOverrides(over); err != nil {
		var ke *keyError
		if errors.As(err, &ke) && keys[ke.action].Pos != "" {
			return DefaultKeyMap(), fmt.Errorf("config %s: %w", keys[ke.action].Pos, err)
		}
		return DefaultKeyMap(), err
	}
	return km, nil
}

// ShortHelp is the one-line help of the footer.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.NextPane, k.Filter, k.Command, k.Help, k.Quit}
}

// FullHelp is the `?` help, grouped: navigation, panes, gates and
// checkpoints, app.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Open},
		{k.Flows, k.Trace, k.Gates, k.Checkpoints, k.Iterations, k.Specs, k.NextPane, k.PrevPane},
		{k.Approve, k.Revise, k.Kill, k.Commit, k.Revert},
		{k.Filter, k.Command, k.Help, k.Back, k.Quit},
	}
}
