package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// .mcp.json: install adds (or updates) mcpServers.stratum and uninstall
// removes it, both as text edits, so the rest of the file keeps its bytes.

// mcpDoc is a parsed .mcp.json.
type mcpDoc struct {
	text    string
	root    jsonObject
	servers *jsonObject    // mcpServers, when present and an object
	entry   map[string]any // mcpServers.stratum, when present
}

// readMCPDoc parses .mcp.json; nil when the file is absent or blank.
func readMCPDoc(path string, old []byte) (*mcpDoc, error) {
	if old == nil || len(bytes.TrimSpace(old)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(old))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON (%v); fix or remove it, it was left untouched", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s has data after its JSON object; fix it, it was left untouched", path)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object; fix it, it was left untouched", path)
	}
	d := &mcpDoc{text: string(old)}
	var err error
	if d.root, err = parseObjectAt(d.text, 0); err != nil {
		return nil, fmt.Errorf("%s: %v; it was left untouched", path, err)
	}
	sv, ok := doc["mcpServers"]
	if !ok || sv == nil {
		return d, nil
	}
	servers, ok := sv.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: mcpServers is not an object; fix it, it was left untouched", path)
	}
	m, _ := d.root.member("mcpServers")
	so, err := parseObjectAt(d.text, m.valStart)
	if err != nil {
		return nil, fmt.Errorf("%s: %v; it was left untouched", path, err)
	}
	d.servers = &so
	if ev, ok := servers[ServerName]; ok && ev != nil {
		entry, ok := ev.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: mcpServers.%s is not an object; fix it, it was left untouched", path, ServerName)
		}
		d.entry = entry
	}
	return d, nil
}

// ourEntry is the server entry install writes: with home, an env block
// with STRATUM_HOME (merged into the entry's existing env: its other
// variables are kept).
func ourEntry(command, home string, existing map[string]any) map[string]any {
	e := map[string]any{"command": command, "args": []any{"mcp"}}
	if home != "" {
		env := map[string]any{}
		if old, ok := existing["env"].(map[string]any); ok {
			for k, v := range old {
				env[k] = v
			}
		}
		env["STRATUM_HOME"] = home
		e["env"] = env
	}
	return e
}

// isOurEntry reports whether an entry runs `<something> mcp`: what install
// writes (the command is the binary's path or --command).
func isOurEntry(entry map[string]any) bool {
	return reflect.DeepEqual(entry["args"], []any{"mcp"})
}

// planMCPJSON computes the new .mcp.json.
func planMCPJSON(path, command, home string) (fileChange, error) {
	f := fileChange{Path: path, Action: ActionCreated}
	old, err := readExisting(path)
	if err != nil {
		return f, err
	}
	d, err := readMCPDoc(path, old)
	if err != nil {
		return f, err
	}
	var existing map[string]any
	if d != nil {
		existing = d.entry
	}
	want := ourEntry(command, home, existing)
	if d == nil {
		if old != nil {
			f.Action = ActionUpdated
		}
		b, err := encodeIndented(map[string]any{"mcpServers": map[string]any{ServerName: want}})
		f.Content = b
		return f, err
	}
	f.Action = ActionUpdated
	switch {
	case d.entry != nil:
		same := true
		for k, v := range want {
			if !reflect.DeepEqual(d.entry[k], v) {
				same = false
			}
			d.entry[k] = v
		}
		if same {
			f.Action, f.Content = ActionUnchanged, d.text
			return f, nil
		}
		m, _ := d.servers.member(ServerName)
		f.Content = d.text[:m.valStart] + encodeEntry(d.entry) + d.text[m.valEnd:]
	case d.servers != nil:
		f.Content = insertMember(d.text, *d.servers, ServerName, encodeEntry(want))
	default:
		servers := "{" + jsonString(ServerName) + ": " + encodeEntry(want) + "}"
		if m, i := d.root.member("mcpServers"); i >= 0 { // "mcpServers": null
			f.Content = d.text[:m.valStart] + servers + d.text[m.valEnd:]
		} else {
			f.Content = insertMember(d.text, d.root, "mcpServers", servers)
		}
	}
	return f, nil
}

// unplanMCPJSON computes .mcp.json without the stratum entry. A file left
// configuring nothing ({} or an empty mcpServers) is removed; an entry that
// is not `… mcp` was not written by install and is kept.
func unplanMCPJSON(path string) (fileChange, error) {
	f := fileChange{Path: path, Action: ActionUnchanged}
	old, err := readExisting(path)
	if err != nil || old == nil {
		return f, err
	}
	d, err := readMCPDoc(path, old)
	if err != nil {
		return f, err
	}
	if d == nil || d.entry == nil {
		f.Content = string(old)
		return f, nil
	}
	if !isOurEntry(d.entry) {
		f.Action, f.Content = ActionKept, d.text
		f.Note = fmt.Sprintf("mcpServers.%s does not run `… mcp`: not written by stratum install", ServerName)
		return f, nil
	}
	_, i := d.servers.member(ServerName)
	text := removeMember(d.text, *d.servers, i)
	if servers, err := parseObjectAt(text, d.servers.start); err == nil && len(servers.members) == 0 {
		root, err := parseObjectAt(text, 0)
		if err != nil {
			return f, fmt.Errorf("%s: %v", path, err)
		}
		_, j := root.member("mcpServers")
		text = removeMember(text, root, j)
	}
	f.Action, f.Content = ActionUpdated, text
	if isEmptyObject(strings.TrimSpace(text)) {
		f.Action, f.Content = ActionRemoved, ""
	}
	return f, nil
}

// encodeEntry renders a server entry on one line, command and args first.
func encodeEntry(entry map[string]any) string {
	keys := make([]string, 0, len(entry))
	for k := range entry {
		if k != "command" && k != "args" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range []string{"args", "command"} {
		if _, ok := entry[k]; ok {
			keys = append([]string{k}, keys...)
		}
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = jsonString(k) + ": " + compactJSON(entry[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func jsonString(s string) string { return compactJSON(s) }

// compactJSON encodes v on one line, without HTML escaping.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "null"
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// encodeIndented encodes a new file's content.
func encodeIndented(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(v)
	return buf.String(), err
}
