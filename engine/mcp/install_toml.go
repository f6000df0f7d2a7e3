package mcp

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Codex's config.toml is edited as text (no TOML library): install sets the
// [mcp_servers.stratum] table's command and args lines, uninstall removes
// the table; other lines and tables keep their bytes, CRLF files stay CRLF.

// codexTable is the TOML table Install manages in Codex's config.
const codexTable = "[mcp_servers." + ServerName + "]"

// codexConfig is a parsed config.toml: its lines (LF-split, the line
// ending remembered) and the stratum table's line range.
type codexConfig struct {
	lines      []string
	crlf       bool
	start, end int // the table's header line and the line after its body; start -1 when absent
}

func (c *codexConfig) join(lines []string) string {
	s := strings.Join(lines, "\n")
	if c.crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// parseCodexConfig finds the stratum table; a file it cannot edit safely is
// an error.
func parseCodexConfig(path string, old []byte) (*codexConfig, error) {
	if !utf8.Valid(old) {
		return nil, fmt.Errorf("%s is not valid UTF-8; fix it, it was left untouched", path)
	}
	c := &codexConfig{crlf: strings.Contains(string(old), "\r\n"), start: -1}
	c.lines = strings.Split(strings.ReplaceAll(string(old), "\r\n", "\n"), "\n")
	c.end = len(c.lines)
	inServers := false
	for i, l := range c.lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			header := tableHeader(t)
			if header == "" {
				return nil, fmt.Errorf("%s:%d: malformed table header %q; fix it, it was left untouched", path, i+1, t)
			}
			if c.start >= 0 && c.end == len(c.lines) {
				c.end = i
			}
			inServers = header == "mcp_servers"
			if header == "mcp_servers."+ServerName || header == `mcp_servers."`+ServerName+`"` {
				if c.start >= 0 {
					return nil, fmt.Errorf("%s: %s appears twice; fix it, it was left untouched", path, codexTable)
				}
				c.start, c.end = i, len(c.lines)
			}
			continue
		}
		key, _, isKV := strings.Cut(t, "=")
		key = strings.TrimSpace(key)
		if isKV && (strings.HasPrefix(key, "mcp_servers."+ServerName) || (inServers && (key == ServerName || strings.HasPrefix(key, ServerName+".")))) {
			return nil, fmt.Errorf("%s:%d: the %s server is configured with dotted keys or an inline table; edit it by hand (see the README), the file was left untouched", path, i+1, ServerName)
		}
	}
	return c, nil
}

// planCodexTOML computes the new Codex config.toml.
func planCodexTOML(path, command string) (fileChange, error) {
	f := fileChange{Path: path, Action: ActionCreated}
	old, err := readExisting(path)
	if err != nil {
		return f, err
	}
	cmdLine := "command = " + tomlString(command)
	argsLine := `args = ["mcp"]`
	if old == nil {
		f.Content = codexTable + "\n" + cmdLine + "\n" + argsLine + "\n"
		return f, nil
	}
	f.Action = ActionUpdated
	c, err := parseCodexConfig(path, old)
	if err != nil {
		return f, err
	}
	lines, start, end := c.lines, c.start, c.end
	if start < 0 {
		text := strings.Join(lines, "\n")
		sep := "\n"
		if strings.HasSuffix(text, "\n") || text == "" {
			sep = ""
		}
		if text != "" {
			sep += "\n"
		}
		f.Content = c.join(strings.Split(text+sep+codexTable+"\n"+cmdLine+"\n"+argsLine+"\n", "\n"))
		return f, nil
	}
	// Replace (or add) command and args inside the existing table.
	out := append([]string{}, lines[:start+1]...)
	var haveCmd, haveArgs bool
	for _, l := range lines[start+1 : end] {
		key, _, isKV := strings.Cut(strings.TrimSpace(l), "=")
		switch strings.TrimSpace(key) {
		case "command":
			if isKV && !haveCmd {
				out = append(out, cmdLine)
				haveCmd = true
				continue
			}
		case "args":
			if isKV && !haveArgs {
				if !strings.Contains(l, "]") {
					return f, fmt.Errorf("%s: a multi-line args array in %s; edit it by hand, the file was left untouched", path, codexTable)
				}
				out = append(out, argsLine)
				haveArgs = true
				continue
			}
		}
		out = append(out, l)
	}
	var add []string
	if !haveCmd {
		add = append(add, cmdLine)
	}
	if !haveArgs {
		add = append(add, argsLine)
	}
	// Missing keys go after the table's last non-blank line.
	at := len(out)
	for at > start+1 && strings.TrimSpace(out[at-1]) == "" {
		at--
	}
	out = append(out[:at], append(add, out[at:]...)...)
	out = append(out, lines[end:]...)
	f.Content = c.join(out)
	if f.Content == string(old) {
		f.Action = ActionUnchanged
	}
	return f, nil
}

// unplanCodexTOML computes config.toml without the stratum table (its
// header through its last non-blank line, and the blank line install put
// before it). A file left empty is removed.
func unplanCodexTOML(path string) (fileChange, error) {
	f := fileChange{Path: path, Action: ActionUnchanged}
	old, err := readExisting(path)
	if err != nil || old == nil {
		return f, err
	}
	c, err := parseCodexConfig(path, old)
	if err != nil {
		return f, err
	}
	f.Content = string(old)
	if c.start < 0 {
		return f, nil
	}
	last := c.end
	for last > c.start+1 && strings.TrimSpace(c.lines[last-1]) == "" {
		last--
	}
	first := c.start
	if first > 0 && strings.TrimSpace(c.lines[first-1]) == "" {
		first--
	}
	rest := append(append([]string{}, c.lines[:first]...), c.lines[last:]...)
	f.Action, f.Content = ActionUpdated, c.join(rest)
	if strings.TrimSpace(f.Content) == "" {
		f.Action, f.Content = ActionRemoved, ""
	}
	return f, nil
}

// tableHeader returns the name inside a [table] or [[array]] header line
// (comments allowed after it), or "" when the line is malformed.
func tableHeader(t string) string {
	if i := strings.Index(t, "#"); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	open, close := "[", "]"
	if strings.HasPrefix(t, "[[") {
		open, close = "[[", "]]"
	}
	if !strings.HasSuffix(t, close) || len(t) <= len(open)+len(close) {
		return ""
	}
	name := strings.TrimSpace(t[len(open) : len(t)-len(close)])
	if name == "" || strings.ContainsAny(name, "[]") {
		return ""
	}
	var parts []string
	for _, p := range strings.Split(name, ".") {
		parts = append(parts, strings.TrimSpace(p))
	}
	return strings.Join(parts, ".")
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
