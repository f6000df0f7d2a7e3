package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"unicode/utf8"
)

// ServerName is the name stratum registers itself under in MCP client
// configurations.
const ServerName = "stratum"

// InstallOptions say where and how to register the server.
type InstallOptions struct {
	// Dir is where the project-root search starts (default: the working
	// directory). The root is the nearest directory at or above Dir that
	// holds .git; without one, Dir itself.
	Dir string
	// Command is the server's executable (default: the absolute path of the
	// running binary, or "stratum" when it cannot be found).
	Command string
	// Codex also registers the server in Codex's config.toml.
	Codex bool
	// CodexHome is Codex's home (default $CODEX_HOME, else ~/.codex).
	CodexHome string
	// DryRun computes every change without writing anything.
	DryRun bool
}

// Install actions.
const (
	ActionCreated   = "created"
	ActionUpdated   = "updated"
	ActionUnchanged = "unchanged"
)

// InstalledFile is one configuration file Install wrote (or would write).
type InstalledFile struct {
	Path    string `json:"path"`
	Action  string `json:"action"`  // created, updated or unchanged
	Content string `json:"content"` // the file's full new content
}

// InstallReport says what Install did.
type InstallReport struct {
	ProjectRoot string          `json:"project_root"`
	Command     string          `json:"command"`
	DryRun      bool            `json:"dry_run"`
	Files       []InstalledFile `json:"files"`
}

// Install registers `<command> mcp` as the "stratum" MCP server in the
// project's Claude Code .mcp.json and, with Codex set, in Codex's
// config.toml. It is idempotent and keeps every other entry: other servers,
// unknown keys, other fields of an existing stratum entry. A file that
// exists but cannot be understood is an error and is left untouched; nothing
// is written unless every file could be prepared.
func Install(opts InstallOptions) (InstallReport, error) {
	var rep InstallReport
	dir := opts.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return rep, fmt.Errorf("install: %w", err)
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return rep, fmt.Errorf("install: %w", err)
	}
	rep.ProjectRoot = projectRoot(dir)
	rep.Command = opts.Command
	if rep.Command == "" {
		rep.Command = defaultCommand()
	}
	rep.DryRun = opts.DryRun

	mcpPath := filepath.Join(rep.ProjectRoot, ".mcp.json")
	f, err := planMCPJSON(mcpPath, rep.Command)
	if err != nil {
		return rep, err
	}
	rep.Files = append(rep.Files, f)
	if opts.Codex {
		home := opts.CodexHome
		if home == "" {
			home = os.Getenv("CODEX_HOME")
		}
		if home == "" {
			uh, err := os.UserHomeDir()
			if err != nil {
				return rep, fmt.Errorf("install: locating Codex's config: %w (set CODEX_HOME)", err)
			}
			home = filepath.Join(uh, ".codex")
		}
		f, err := planCodexTOML(filepath.Join(home, "config.toml"), rep.Command)
		if err != nil {
			return rep, err
		}
		rep.Files = append(rep.Files, f)
	}
	if opts.DryRun {
		return rep, nil
	}
	for _, f := range rep.Files {
		if f.Action == ActionUnchanged {
			continue
		}
		if err := writeFileAtomic(f.Path, []byte(f.Content), 0o644); err != nil {
			return rep, fmt.Errorf("install: writing %s: %w", f.Path, err)
		}
	}
	return rep, nil
}

// projectRoot walks up from dir to the nearest directory holding .git.
func projectRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// defaultCommand is the absolute path of the running binary.
func defaultCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return ServerName
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe
}

// readExisting returns a file's content, or nil when it does not exist.
func readExisting(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	return b, nil
}

// planMCPJSON computes the new .mcp.json.
func planMCPJSON(path, command string) (InstalledFile, error) {
	f := InstalledFile{Path: path, Action: ActionCreated}
	old, err := readExisting(path)
	if err != nil {
		return f, err
	}
	doc := map[string]any{}
	if old != nil {
		f.Action = ActionUpdated
		if len(bytes.TrimSpace(old)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(old))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				return f, fmt.Errorf("install: %s is not valid JSON (%v); fix or remove it, it was left untouched", path, err)
			}
			if dec.More() {
				return f, fmt.Errorf("install: %s has data after its JSON object; fix it, it was left untouched", path)
			}
			m, ok := v.(map[string]any)
			if !ok {
				return f, fmt.Errorf("install: %s is not a JSON object; fix it, it was left untouched", path)
			}
			doc = m
		}
	}
	servers := map[string]any{}
	if v, ok := doc["mcpServers"]; ok && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return f, fmt.Errorf("install: %s: mcpServers is not an object; fix it, it was left untouched", path)
		}
		servers = m
	}
	entry := map[string]any{}
	if v, ok := servers[ServerName]; ok && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return f, fmt.Errorf("install: %s: mcpServers.%s is not an object; fix it, it was left untouched", path, ServerName)
		}
		entry = m
	}
	want := map[string]any{"command": command, "args": []any{"mcp"}}
	same := true
	for k, v := range want {
		if !reflect.DeepEqual(entry[k], v) {
			same = false
		}
		entry[k] = v
	}
	servers[ServerName] = entry
	doc["mcpServers"] = servers
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return f, fmt.Errorf("install: encoding %s: %w", path, err)
	}
	f.Content = buf.String()
	if old != nil && same {
		f.Action = ActionUnchanged
		f.Content = string(old)
	}
	return f, nil
}

// codexTable is the TOML table Install manages in Codex's config.
const codexTable = "[mcp_servers." + ServerName + "]"

// planCodexTOML computes the new Codex config.toml. TOML is edited as
// text (no TOML library): the [mcp_servers.stratum] table's command and args
// lines are set, other lines and tables are kept byte for byte.
func planCodexTOML(path, command string) (InstalledFile, error) {
	f := InstalledFile{Path: path, Action: ActionCreated}
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
	if !utf8.Valid(old) {
		return f, fmt.Errorf("install: %s is not valid UTF-8; fix it, it was left untouched", path)
	}
	text := strings.ReplaceAll(string(old), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	start, end := -1, len(lines)
	inServers := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			header := tableHeader(t)
			if header == "" {
				return f, fmt.Errorf("install: %s:%d: malformed table header %q; fix it, it was left untouched", path, i+1, t)
			}
			if start >= 0 && end == len(lines) {
				end = i
			}
			inServers = header == "mcp_servers"
			if header == "mcp_servers."+ServerName || header == `mcp_servers."`+ServerName+`"` {
				if start >= 0 {
					return f, fmt.Errorf("install: %s: %s appears twice; fix it, it was left untouched", path, codexTable)
				}
				start, end = i, len(lines)
			}
			continue
		}
		key, _, isKV := strings.Cut(t, "=")
		key = strings.TrimSpace(key)
		if isKV && (strings.HasPrefix(key, "mcp_servers."+ServerName) || (inServers && (key == ServerName || strings.HasPrefix(key, ServerName+".")))) {
			return f, fmt.Errorf("install: %s:%d: the %s server is configured with dotted keys or an inline table; edit it by hand (see the README), the file was left untouched", path, i+1, ServerName)
		}
	}
	if start < 0 {
		sep := "\n"
		if strings.HasSuffix(text, "\n") || text == "" {
			sep = ""
		}
		if text != "" {
			sep += "\n"
		}
		f.Content = text + sep + codexTable + "\n" + cmdLine + "\n" + argsLine + "\n"
		return f, nil
	}
	// Replace (or add) command and args inside the existing table.
	out := append([]string{}, lines[:start+1]...)
	var haveCmd, haveArgs bool
	body := lines[start+1 : end]
	for _, l := range body {
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
					return f, fmt.Errorf("install: %s: a multi-line args array in %s; edit it by hand, the file was left untouched", path, codexTable)
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
	f.Content = strings.Join(out, "\n")
	if f.Content == text {
		f.Action = ActionUnchanged
		f.Content = string(old)
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
