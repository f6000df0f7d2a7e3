package mcp

import (
	"fmt"
	"regexp"
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
			return nil, fmt.Errorf("%s:%d: the %s server is configured with dotted keys or an inline table; edit it by hand (engine/mcp/MCP.md in the stratum repository shows the table), the file was left untouched", path, i+1, ServerName)
		}
	}
	return c, nil
}

// planCodexTOML computes the new Codex config.toml.
// With home set (this shell's $STRATUM_HOME, absolute), the table's env
// carries STRATUM_HOME too, as .mcp.json's env block does, so that the
// server Codex starts opens the same store as the reviewer's TUI: an
// existing one-line `env = { … }` gets the key added or its value
// replaced, other keys kept.
func planCodexTOML(path, command, home string) (fileChange, error) {
	f := fileChange{Path: path, Action: ActionCreated}
	old, err := readExisting(path)
	if err != nil {
		return f, err
	}
	cmdLine := "command = " + tomlString(command)
	argsLine := `args = ["mcp"]`
	envLine := ""
	if home != "" {
		envLine = "env = { STRATUM_HOME = " + tomlString(home) + " }"
	}
	fresh := codexTable + "\n" + cmdLine + "\n" + argsLine + "\n"
	if envLine != "" {
		fresh += envLine + "\n"
	}
	if old == nil {
		f.Content = fresh
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
		f.Content = c.join(strings.Split(text+sep+fresh, "\n"))
		return f, nil
	}
	if home != "" && c.hasEnvSubtable() {
		return f, fmt.Errorf("%s: the %s server's env is a [%s.env] table; add STRATUM_HOME = %s to it by hand, the file was left untouched",
			path, ServerName, strings.Trim(codexTable, "[]"), tomlString(home))
	}
	// Replace (or add) command and args inside the existing table.
	out := append([]string{}, lines[:start+1]...)
	var haveCmd, haveArgs, haveEnv bool
	for _, l := range lines[start+1 : end] {
		key, _, isKV := strings.Cut(strings.TrimSpace(l), "=")
		switch strings.TrimSpace(key) {
		case "env":
			if isKV && home != "" && !haveEnv {
				nl, err := withStratumHome(l, home)
				if err != nil {
					return f, fmt.Errorf("%s: %v in %s; edit it by hand, the file was left untouched", path, err, codexTable)
				}
				out = append(out, nl)
				haveEnv = true
				continue
			}
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
	if envLine != "" && !haveEnv {
		add = append(add, envLine)
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

// hasEnvSubtable reports a [mcp_servers.stratum.env] table.
func (c *codexConfig) hasEnvSubtable() bool {
	for _, l := range c.lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			if h := tableHeader(t); h == "mcp_servers."+ServerName+".env" || h == `mcp_servers."`+ServerName+`".env` {
				return true
			}
		}
	}
	return false
}

// stratumHomeKey matches the STRATUM_HOME key of an inline table with its
// (basic string) value.
var stratumHomeKey = regexp.MustCompile(`STRATUM_HOME\s*=\s*"(?:[^"\\]|\\.)*"`)

// withStratumHome sets STRATUM_HOME in a one-line `env = { … }`: the
// value replaced when the key is there, else the key added first.
func withStratumHome(line, home string) (string, error) {
	open, close := strings.Index(line, "{"), strings.LastIndex(line, "}")
	if open < 0 || close < open {
		return "", fmt.Errorf("env is not a one-line inline table")
	}
	kv := "STRATUM_HOME = " + tomlString(home)
	if loc := stratumHomeKey.FindStringIndex(line); loc != nil {
		return line[:loc[0]] + kv + line[loc[1]:], nil
	}
	if strings.Contains(line[open:close], "STRATUM_HOME") {
		return "", fmt.Errorf("env's STRATUM_HOME is not a plain string")
	}
	inner := strings.TrimSpace(line[open+1 : close])
	if inner == "" {
		return line[:open] + "{ " + kv + " }" + line[close+1:], nil
	}
	return line[:open] + "{ " + kv + ", " + inner + " }" + line[close+1:], nil
}

// tomlEnvKey matches key = "value" (or 'value') inside a one-line env
// table; the first group is the quoted value.
func tomlEnvKey(key string) *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta(key) + `\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*')`)
}
