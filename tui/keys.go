package tui

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"

	"github.com/stratum-go/stratum/engine/config"
)

// KeyMap is every key binding of the console, defined once and grouped:
// the global keys, the list keys every pane shares, the decision keys (the
// Gates pane and every decision dialog), the dialog keys, and one group per
// pane (its tab key and the keys of its own, declared in the pane's file).
// Each binding's name in the `keys:` section of config.yaml is given by
// Actions.
//
// The groups are embedded, so k.Quit is k.GlobalKeys.Quit. The pane groups
// hold pointers: build each KeyMap with DefaultKeyMap (or KeyMapFrom)
// rather than copying one and changing the copy.
type KeyMap struct {
	GlobalKeys
	ListKeys
	DecideKeys
	DialogKeys
	// Panes are the panes' groups, in tab order.
	Panes []PaneKeys
}

// GlobalKeys work in every pane.
type GlobalKeys struct {
	Help, Filter, Command, NextPane, PrevPane, Back, Quit key.Binding
	// Copy copies the full id of the selected flow to the clipboard.
	Copy key.Binding
}

// ListKeys move in (and open the selected row of) the focused pane's list.
// In a pane with a detail (Gates, Trace) the page keys, and top and bottom
// while the detail is open, scroll the detail; Pager reads it in $PAGER.
type ListKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom, Open key.Binding
	Pager                                         key.Binding
}

// DecideKeys decide a gate: in the Gates pane and in decision dialogs,
// which may open over any pane.
type DecideKeys struct {
	Approve, Revise, Kill key.Binding
}

// DialogKeys are the keys of dialogs.
type DialogKeys struct {
	Confirm, Edit key.Binding
}

// PaneKeys is one pane's group: the key that focuses it (action: its title
// in lower case) and the bindings of its own, if any.
type PaneKeys struct {
	Title string
	Focus key.Binding
	own   keyGroup
}

// keyGroup is a pane's own bindings (a struct declared in the pane's file).
type keyGroup interface {
	// actions names each binding for the `keys:` section of config.yaml.
	actions() []action
}

// action is one named, remappable binding.
type action struct {
	name string
	b    *key.Binding
}

// bind is a binding whose help shows its keys.
func bind(help string, keys ...string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(strings.Join(keys, "/"), help))
}

// DefaultKeyMap returns the default bindings.
func DefaultKeyMap() KeyMap { return newKeyMap(registeredPanes) }

// newKeyMap returns the default bindings of a console with panes defs:
// each pane's tab key is its position (1, 2, …).
func newKeyMap(defs []paneDef) KeyMap {
	k := KeyMap{
		GlobalKeys: GlobalKeys{
			Help:     bind("help", "?"),
			Filter:   bind("filter", "/"),
			Command:  bind("command", ":"),
			NextPane: bind("pane", "tab"),
			PrevPane: bind("previous pane", "shift+tab"),
			Back:     bind("back", "esc"),
			Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
			Copy:     bind("copy flow id", "y"),
		},
		ListKeys: ListKeys{
			Up:       bind("up", "up", "k"),
			Down:     bind("down", "down", "j"),
			PageUp:   bind("page up", "pgup", "ctrl+u"),
			PageDown: bind("page down", "pgdown", "ctrl+d"),
			Top:      bind("top", "home", "g"),
			Bottom:   bind("bottom", "end", "G"),
			Open:     bind("open/expand", "enter"),
			Pager:    bind("pager", "o"),
		},
		DecideKeys: DecideKeys{
			Approve: bind("approve", "a"),
			Revise:  bind("revise", "r"),
			Kill:    bind("kill", "x"),
		},
		DialogKeys: DialogKeys{
			Confirm: bind("confirm", "enter"),
			Edit:    bind("edit rationale", "e"),
		},
	}
	for i, d := range defs {
		pk := PaneKeys{Title: d.title, Focus: bind(strings.ToLower(d.title), strconv.Itoa(i+1))}
		if d.keys != nil {
			pk.own = d.keys()
		}
		k.Panes = append(k.Panes, pk)
	}
	return k
}

// paneKeys is the group of the pane titled title (nil when there is none).
func (k *KeyMap) paneKeys(title string) *PaneKeys {
	for i := range k.Panes {
		if k.Panes[i].Title == title {
			return &k.Panes[i]
		}
	}
	return nil
}

// Actions maps the action names used in config.yaml to the bindings.
func (k *KeyMap) Actions() map[string]*key.Binding {
	acts := map[string]*key.Binding{
		"help": &k.Help, "filter": &k.Filter, "command": &k.Command,
		"next_pane": &k.NextPane, "prev_pane": &k.PrevPane, "back": &k.Back, "quit": &k.Quit, "copy": &k.Copy,
		"up": &k.Up, "down": &k.Down, "page_up": &k.PageUp, "page_down": &k.PageDown,
		"top": &k.Top, "bottom": &k.Bottom, "open": &k.Open, "pager": &k.Pager,
		"approve": &k.Approve, "revise": &k.Revise, "kill": &k.Kill,
		"confirm": &k.Confirm, "edit": &k.Edit,
	}
	for i := range k.Panes {
		p := &k.Panes[i]
		acts[strings.ToLower(p.Title)] = &p.Focus
		if p.own != nil {
			for _, a := range p.own.actions() {
				acts[a.name] = a.b
			}
		}
	}
	return acts
}

// keyError is a refused binding of one action.
type keyError struct{ action, msg string }

func (e *keyError) Error() string { return "keys." + e.action + ": " + e.msg }

// ApplyOverrides rebinds actions: each value is one key or a list of keys
// ("ctrl+a", "A", "f2"). An unknown action, an empty key list, enter bound
// to a decision (approve, revise, kill: enter only ever moves a decision
// dialog to its confirmation) or a key two actions would share where both
// work is an error naming the action; nothing is changed then.
func (k *KeyMap) ApplyOverrides(over map[string][]string) error {
	return k.applyOverrides(over, func(string) string { return "" })
}

// applyOverrides is ApplyOverrides; pos names where an action was set
// (file:line, "" when unknown), for the message of a clash.
func (k *KeyMap) applyOverrides(over map[string][]string, pos func(action string) string) error {
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
			if s == "enter" && (name == "approve" || name == "revise" || name == "kill") {
				return &keyError{name, "enter cannot decide a gate (it only moves a decision dialog to its confirmation, where the decision's own key records it)"}
			}
		}
	}
	saved := make(map[string]key.Binding, len(names))
	for _, name := range names {
		b := acts[name]
		saved[name] = *b
		*b = key.NewBinding(key.WithKeys(over[name]...), key.WithHelp(strings.Join(over[name], "/"), b.Help().Desc))
	}
	if err := k.clash(over, pos); err != nil {
		for name, b := range saved {
			*acts[name] = b
		}
		return err
	}
	return nil
}

// scopes are the sets of actions that work at the same time: in each pane
// the global keys, the panes' tab keys, the list keys, the decision keys
// (they open the waiting gate's dialog from any pane) and the pane's own
// keys; in a decision dialog the decision keys, confirm, edit and back.
func (k *KeyMap) scopes() map[string][]string {
	shared := []string{"help", "filter", "command", "next_pane", "prev_pane", "back", "quit", "copy",
		"up", "down", "page_up", "page_down", "top", "bottom", "open", "pager", "approve", "revise", "kill"}
	for _, p := range k.Panes {
		shared = append(shared, strings.ToLower(p.Title))
	}
	out := map[string][]string{"a decision dialog": {"approve", "revise", "kill", "confirm", "edit", "back"}}
	for _, p := range k.Panes {
		scope := append([]string(nil), shared...)
		if p.own != nil {
			for _, a := range p.own.actions() {
				scope = append(scope, a.name)
			}
		}
		out["the "+p.Title+" pane"] = scope
	}
	return out
}

// clash is the first key two actions of one scope share, as an error on
// the configured one of them (over).
func (k *KeyMap) clash(over map[string][]string, pos func(string) string) error {
	acts := k.Actions()
	scopes := k.scopes()
	scopeNames := make([]string, 0, len(scopes))
	for n := range scopes {
		scopeNames = append(scopeNames, n)
	}
	sort.Strings(scopeNames)
	for _, sn := range scopeNames {
		owner := map[string]string{} // key -> action
		for _, name := range scopes[sn] {
			for _, ks := range acts[name].Keys() {
				other, taken := owner[ks]
				if !taken {
					owner[ks] = name
					continue
				}
				if other == name {
					continue
				}
				blame, with := name, other
				if _, ok := over[blame]; !ok {
					blame, with = other, name
				}
				where := ""
				if p := pos(with); p != "" {
					where = " (" + p + ")"
				}
				return &keyError{blame, fmt.Sprintf("%q is also the key of %s%s in %s; two actions cannot share a key where both work", ks, with, where, sn)}
			}
		}
	}
	return nil
}

// KeyMapFrom returns DefaultKeyMap with the configured bindings (the
// `keys:` section of the config files, read by engine/config) applied. An
// invalid map (ApplyOverrides) is refused with an error naming where the
// action was set (file:line); the defaults are returned with it.
func KeyMapFrom(keys map[string]config.Keys) (KeyMap, error) {
	km := DefaultKeyMap()
	over := make(map[string][]string, len(keys))
	for action, k := range keys {
		over[action] = k.Keys
	}
	if err := km.applyOverrides(over, func(a string) string { return keys[a].Pos }); err != nil {
		var ke *keyError
		if errors.As(err, &ke) && keys[ke.action].Pos != "" {
			return DefaultKeyMap(), fmt.Errorf("config %s: %w", keys[ke.action].Pos, err)
		}
		return DefaultKeyMap(), err
	}
	return km, nil
}

// ShortHelp is the global part of the footer (the focused pane's
// ShortHelp comes first).
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.NextPane, k.Filter, k.Command, k.Help, k.Quit}
}

// FullHelp is the `?` help, grouped: moving in lists; the panes; deciding
// gates and the panes' own keys; the app.
func (k KeyMap) FullHelp() [][]key.Binding {
	panes := make([]key.Binding, 0, len(k.Panes)+2)
	act := []key.Binding{k.Approve, k.Revise, k.Kill, shortHelp(k.Open, "expand")}
	for _, p := range k.Panes {
		panes = append(panes, p.Focus)
		if p.own != nil {
			for _, a := range p.own.actions() {
				act = append(act, *a.b)
			}
		}
	}
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Open, k.Pager},
		append(panes, k.NextPane, k.PrevPane),
		act,
		{k.Filter, k.Command, k.Copy, k.Help, k.Back, k.Quit},
	}
}

// shortHelp is b as the footer shows it: its first key and a short
// description.
func shortHelp(b key.Binding, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(keyName(b), desc))
}
