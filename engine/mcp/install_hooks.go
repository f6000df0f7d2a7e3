package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Hooks (install --hooks): three Claude Code hooks in the project's
// .claude/settings.json that keep a project memory file,
// .claude/memory/MEMORY.md, as the original's hooks do. Each runs
// `<command> hook NAME` (RunHook); install adds them as text edits and
// uninstall removes them again, so the rest of the file keeps its bytes.

// hookEvent pairs a Claude Code hook event with the hook that handles it.
type hookEvent struct {
	event string // the settings.json key
	name  string // the argument of `stratum hook`
}

// hookEvents are the hooks install --hooks registers, in the order it adds them.
var hookEvents = []hookEvent{
	{"SessionStart", HookSessionStart},
	{"Stop", HookSessionStop},
	{"PostToolUseFailure", HookPostToolFailure},
}

// settingsPath is the project's Claude Code settings file.
func settingsPath(root string) string { return filepath.Join(root, ".claude", "settings.json") }

// hookCommand is the shell command of one hook.
func hookCommand(command, name string) string { return shellWord(command) + " hook " + name }

// shellWord quotes s for sh when it holds anything but safe characters.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// hookEntry is the settings.json entry of one hook, on one line.
func hookEntry(command, name string) string {
	return `{"matcher": "", "hooks": [{"type": "command", "command": ` + jsonString(hookCommand(command, name)) + `}]}`
}

// ourHook returns the command of an entry install writes for the named
// hook: {"matcher": "", "hooks": [{"type": "command", "command": "… hook NAME"}]}.
func ourHook(v any, name string) (string, bool) {
	e, ok := v.(map[string]any)
	if !ok || len(e) != 2 || e["matcher"] != "" {
		return "", false
	}
	hs, ok := e["hooks"].([]any)
	if !ok || len(hs) != 1 {
		return "", false
	}
	h, ok := hs[0].(map[string]any)
	cmd, _ := h["command"].(string)
	if !ok || len(h) != 2 || h["type"] != "command" || !strings.HasSuffix(cmd, " hook "+name) {
		return "", false
	}
	return cmd, true
}

// checkSettings checks that settings.json has the shape the edits need:
// an object whose hooks, when present, is an object of arrays.
func checkSettings(path string, old []byte) error {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(old))
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("%s is not valid JSON (%v); fix or remove it, it was left untouched", path, err)
	}
	if dec.More() {
		return fmt.Errorf("%s has data after its JSON object; fix it, it was left untouched", path)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return fmt.Errorf("%s is not a JSON object; fix it, it was left untouched", path)
	}
	if root["hooks"] == nil {
		return nil
	}
	hooks, ok := root["hooks"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s: hooks is not an object; fix it, it was left untouched", path)
	}
	for _, h := range hookEvents {
		if v := hooks[h.event]; v != nil {
			if _, ok := v.([]any); !ok {
				return fmt.Errorf("%s: hooks.%s is not an array; fix it, it was left untouched", path, h.event)
			}
		}
	}
	return nil
}

// planHooks computes settings.json with the three hooks.
func planHooks(path, command string) (fileChange, error) {
	f := fileChange{Path: path, Action: ActionCreated}
	old, err := readExisting(path)
	if err != nil {
		return f, err
	}
	if old == nil || len(bytes.TrimSpace(old)) == 0 {
		if old != nil {
			f.Action = ActionUpdated
		}
		hooks := map[string]any{}
		for _, h := range hookEvents {
			var entry any
			if err := json.Unmarshal([]byte(hookEntry(command, h.name)), &entry); err != nil {
				return f, err
			}
			hooks[h.event] = []any{entry}
		}
		f.Content, err = encodeIndented(map[string]any{"hooks": hooks})
		return f, err
	}
	if err := checkSettings(path, old); err != nil {
		return f, err
	}
	text := string(old)
	for _, h := range hookEvents {
		if text, err = addHook(text, h, command); err != nil {
			return f, fmt.Errorf("%s: %v; it was left untouched", path, err)
		}
	}
	f.Action, f.Content = ActionUpdated, text
	if text == string(old) {
		f.Action = ActionUnchanged
	}
	return f, nil
}

// addHook adds (or updates the command of) one hook's entry.
func addHook(text string, h hookEvent, command string) (string, error) {
	entry := hookEntry(command, h.name)
	root, err := parseObjectAt(text, 0)
	if err != nil {
		return "", err
	}
	m, i := root.member("hooks")
	switch {
	case i < 0:
		return insertMember(text, root, "hooks", "{"+jsonString(h.event)+": ["+entry+"]}"), nil
	case text[m.valStart:m.valEnd] == "null":
		return text[:m.valStart] + "{" + jsonString(h.event) + ": [" + entry + "]}" + text[m.valEnd:], nil
	}
	hooks, err := parseObjectAt(text, m.valStart)
	if err != nil {
		return "", err
	}
	em, j := hooks.member(h.event)
	switch {
	case j < 0:
		return insertMember(text, hooks, h.event, "["+entry+"]"), nil
	case text[em.valStart:em.valEnd] == "null":
		return text[:em.valStart] + "[" + entry + "]" + text[em.valEnd:], nil
	}
	arr, err := parseArrayAt(text, em.valStart)
	if err != nil {
		return "", err
	}
	want := hookCommand(command, h.name)
	for _, e := range arr.elems {
		var v any
		if json.Unmarshal([]byte(text[e[0]:e[1]]), &v) != nil {
			continue
		}
		if cmd, ok := ourHook(v, h.name); ok {
			if cmd == want {
				return text, nil
			}
			return text[:e[0]] + entry + text[e[1]:], nil // the binary moved
		}
	}
	return insertElement(text, arr, entry), nil
}

// unplanHooks computes settings.json without the hooks install added. An
// event left without entries is removed, hooks too when it is left empty,
// and the file when it is left configuring nothing.
func unplanHooks(path string) (fileChange, error) {
	f := fileChange{Path: path, Action: ActionUnchanged}
	old, err := readExisting(path)
	if err != nil || old == nil || len(bytes.TrimSpace(old)) == 0 {
		f.Content = string(old)
		return f, err
	}
	if err := checkSettings(path, old); err != nil {
		return f, err
	}
	text := string(old)
	for i := len(hookEvents) - 1; i >= 0; i-- {
		if text, err = removeHook(text, hookEvents[i]); err != nil {
			return f, fmt.Errorf("%s: %v; it was left untouched", path, err)
		}
	}
	f.Content = text
	switch {
	case text == string(old):
	case isEmptyObject(strings.TrimSpace(text)):
		f.Action, f.Content = ActionRemoved, ""
		f.prune = []string{filepath.Dir(path)}
	default:
		f.Action = ActionUpdated
	}
	return f, nil
}

// removeHook removes one hook's entries (and what that leaves empty).
func removeHook(text string, h hookEvent) (string, error) {
	removed := false
	for {
		root, err := parseObjectAt(text, 0)
		if err != nil {
			return "", err
		}
		m, i := root.member("hooks")
		if i < 0 || text[m.valStart] != '{' {
			return text, nil
		}
		hooks, err := parseObjectAt(text, m.valStart)
		if err != nil {
			return "", err
		}
		em, j := hooks.member(h.event)
		if j < 0 || text[em.valStart] != '[' {
			return text, nil
		}
		arr, err := parseArrayAt(text, em.valStart)
		if err != nil {
			return "", err
		}
		if removed && len(arr.elems) == 0 {
			text = removeMember(text, hooks, j)
			if hooks, err = parseObjectAt(text, m.valStart); err != nil || len(hooks.members) > 0 {
				return text, err
			}
			if root, err = parseObjectAt(text, 0); err != nil {
				return "", err
			}
			return removeMember(text, root, i), nil
		}
		k := lastOurHook(text, arr, h.name)
		if k < 0 {
			return text, nil
		}
		text, removed = removeElement(text, arr, k), true
	}
}

// lastOurHook is the index of the last element of arr that install wrote
// for the named hook, or -1.
func lastOurHook(text string, arr jsonArray, name string) int {
	for k := len(arr.elems) - 1; k >= 0; k-- {
		var v any
		e := arr.elems[k]
		if json.Unmarshal([]byte(text[e[0]:e[1]]), &v) == nil {
			if _, ok := ourHook(v, name); ok {
				return k
			}
		}
	}
	return -1
}
