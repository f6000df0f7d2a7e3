package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/specs"
)

// `stratum doctor`: does the stratum server an agent's client starts run
// this shell's binary on this shell's store? A reviewer's TUI and the
// agent's server must share one store, or gates never show up; a stale
// binary path makes the client fail to start the server at all.

// DoctorOptions is the shell's side of the comparison.
type DoctorOptions struct {
	Dir       string // the project directory (its root holds .mcp.json)
	CodexHome string // as InstallOptions.CodexHome
	// Binary is this shell's stratum ("": the running executable, its
	// symbolic links resolved).
	Binary string
	// Getenv reads this shell's environment (STRATUM_HOME, STRATUM_STORE,
	// PATH for a bare command name); nil: os.Getenv.
	Getenv func(string) string
	// Invocation runs this stratum in the fixes printed ("stratum" when
	// empty).
	Invocation string
}

// DoctorCheck is one finding.
type DoctorCheck struct {
	Config string `json:"config"` // the client configuration file
	Check  string `json:"check"`  // "server", "binary" or "store"
	OK     bool   `json:"ok"`
	// Skipped: nothing to check (a project with no .mcp.json is not set
	// up for an agent); OK is set.
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"`
}

// DoctorReport is every finding; OK when all checks passed.
type DoctorReport struct {
	OK     bool          `json:"ok"`
	Checks []DoctorCheck `json:"checks"`
}

// serverEntry is what a client configuration says about the stratum
// server: its command and the environment it sets.
type serverEntry struct {
	command string
	env     map[string]string
}

// Doctor compares the stratum server of the project's .mcp.json and, when
// it registers one, of Codex's config.toml with this shell: the command
// must be this binary, and STRATUM_HOME / STRATUM_STORE the ones this
// shell uses. A missing .mcp.json entry is a failed check; a Codex config
// without a stratum table is not looked at, and a project without
// .mcp.json is not set up for an agent: one skipped check says so.
func Doctor(opts DoctorOptions) (DoctorReport, error) {
	if opts.Binary == "" {
		if exe, err := os.Executable(); err == nil {
			if r, err := filepath.EvalSymlinks(exe); err == nil {
				exe = r
			}
			opts.Binary = exe
		}
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return DoctorReport{}, err
	}
	inv := opts.Invocation
	if inv == "" {
		inv = "stratum"
	}
	rep := DoctorReport{OK: true, Checks: []DoctorCheck{}}
	add := func(c DoctorCheck) {
		rep.Checks = append(rep.Checks, c)
		rep.OK = rep.OK && c.OK
	}
	mcpPath := filepath.Join(ProjectRoot(dir), ".mcp.json")
	entry, err := mcpJSONEntry(mcpPath)
	_, statErr := os.Stat(mcpPath)
	switch {
	case errors.Is(statErr, fs.ErrNotExist):
		add(DoctorCheck{Config: mcpPath, Check: "server", OK: true, Skipped: true,
			Detail: "no .mcp.json: this project is not set up for an agent (" + inv + " install sets it up)"})
	case err != nil:
		add(DoctorCheck{Config: mcpPath, Check: "server", Detail: err.Error(), Fix: "fix the file, then run " + inv + " install"})
	case entry == nil:
		add(DoctorCheck{Config: mcpPath, Check: "server", Detail: "no stratum server is registered",
			Fix: "run " + inv + " install in this shell"})
	default:
		compareEntry(mcpPath, entry, opts.Binary, inv, getenv, add)
	}
	if home, err := codexHome(opts.CodexHome); err == nil {
		path := filepath.Join(home, "config.toml")
		switch entry, err := codexEntry(path); {
		case err != nil:
			add(DoctorCheck{Config: path, Check: "server", Detail: err.Error(), Fix: "fix the file, then run " + inv + " install --codex"})
		case entry != nil:
			compareEntry(path, entry, opts.Binary, inv, getenv, add)
		}
	}
	return rep, nil
}

// compareEntry checks one registered server against this shell.
func compareEntry(config string, e *serverEntry, binary, inv string, getenv func(string) string, add func(DoctorCheck)) {
	add(DoctorCheck{Config: config, Check: "server", OK: true, Detail: "a stratum server is registered: " + e.command + " mcp"})
	fix := "run " + inv + " install" + codexFlag(config) + " in this shell"
	got, err := resolveCommand(e.command, getenv("PATH"))
	switch {
	case err != nil:
		add(DoctorCheck{Config: config, Check: "binary", Detail: fmt.Sprintf("the client would start %q, which %v", e.command, err), Fix: fix})
	case binary != "" && !sameFile(got, binary):
		add(DoctorCheck{Config: config, Check: "binary", Detail: fmt.Sprintf("the client starts %s, this shell runs %s", got, binary), Fix: fix})
	default:
		add(DoctorCheck{Config: config, Check: "binary", OK: true, Detail: "the client starts this shell's binary: " + got})
	}
	for _, v := range []string{"STRATUM_STORE", "STRATUM_HOME"} {
		mine, theirs := getenv(v), e.env[v]
		if v == "STRATUM_HOME" {
			mine, theirs = absOrEmpty(mine), absOrEmpty(theirs)
		}
		if mine == theirs {
			what := "unset in both"
			if mine != "" {
				what = mine
			}
			add(DoctorCheck{Config: config, Check: "store", OK: true, Detail: fmt.Sprintf("%s is the same for the client's server and this shell: %s", v, what)})
			continue
		}
		add(DoctorCheck{Config: config, Check: "store",
			Detail: fmt.Sprintf("%s: the client's server gets %s, this shell has %s: they use different stores, so the agent's gates never reach this shell's TUI", v, orUnset(theirs), orUnset(mine)),
			Fix:    fix + " (it writes this shell's STRATUM_HOME into the entry's env)"})
	}
}

func codexFlag(config string) string {
	if strings.HasSuffix(config, ".toml") {
		return " --codex"
	}
	return ""
}

func orUnset(s string) string {
	if s == "" {
		return "it unset"
	}
	return strconv.Quote(s)
}

func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return filepath.Clean(a)
	}
	return p
}

// resolveCommand finds the file a client runs for command: a path as it
// is, a bare name on PATH.
func resolveCommand(command, path string) (string, error) {
	if command == "" {
		return "", fmt.Errorf("is empty")
	}
	if strings.ContainsRune(command, filepath.Separator) {
		if _, err := os.Stat(command); err != nil {
			return "", fmt.Errorf("does not exist")
		}
		return command, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, command)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("is not on PATH (%w)", exec.ErrNotFound)
}

func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// mcpJSONEntry reads mcpServers.stratum of .mcp.json; nil when the file or
// the entry is absent.
func mcpJSONEntry(path string) (*serverEntry, error) {
	old, err := readExisting(path)
	if err != nil || old == nil {
		return nil, err
	}
	d, err := readMCPDoc(path, old)
	if err != nil || d == nil || d.entry == nil {
		return nil, err
	}
	e := &serverEntry{env: map[string]string{}}
	e.command, _ = d.entry["command"].(string)
	if env, ok := d.entry["env"].(map[string]any); ok {
		for k, v := range env {
			if s, ok := v.(string); ok {
				e.env[k] = s
			} else if n, ok := v.(json.Number); ok {
				e.env[k] = n.String()
			}
		}
	}
	return e, nil
}

// codexEntry reads the [mcp_servers.stratum] table of Codex's config; nil
// when the file or the table is absent.
func codexEntry(path string) (*serverEntry, error) {
	old, err := readExisting(path)
	if err != nil || old == nil {
		return nil, err
	}
	c, err := parseCodexConfig(path, old)
	if err != nil || c.start < 0 {
		return nil, err
	}
	e := &serverEntry{env: map[string]string{}}
	for _, l := range c.lines[c.start+1 : c.end] {
		key, val, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "command":
			e.command = tomlUnquote(strings.TrimSpace(val))
		case "env":
			for _, k := range []string{"STRATUM_HOME", "STRATUM_STORE"} {
				if m := tomlEnvKey(k).FindStringSubmatch(val); m != nil {
					e.env[k] = tomlUnquote(m[1])
				}
			}
		}
	}
	return e, nil
}

// tomlUnquote reads a TOML basic or literal string (what install writes
// and what people type); anything else is returned as it is.
func tomlUnquote(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return s[1 : len(s)-1]
	}
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// Write prints the report: one line per check (text), or the JSON object.
func (rep DoctorReport) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	for _, c := range rep.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		line := fmt.Sprintf("%s %s: %s: %s", mark, c.Config, c.Check, c.Detail)
		if c.Fix != "" {
			line += " — " + c.Fix
		}
		if _, err := fmt.Fprintln(w, specs.EscapeControl(line)); err != nil {
			return err
		}
	}
	return nil
}
