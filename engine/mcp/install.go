package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratum-go/stratum/engine/run"
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
	// running binary, or "stratum" when it cannot be found). Without it,
	// Install refuses when the running binary is a temporary `go run`
	// build (ErrTemporaryBinary): the path would vanish.
	Command string
	// StratumHome, when set (main passes $STRATUM_HOME), is written into
	// the server entry's env block of .mcp.json, and with Codex into the
	// table's env in config.toml, as STRATUM_HOME (made absolute), so the
	// server the client starts opens the same store as this shell.
	StratumHome string
	// Codex also registers the server in Codex's config.toml and writes the
	// execution-model block into the project's AGENTS.md.
	Codex bool
	// CodexHome is Codex's home (default $CODEX_HOME, else ~/.codex).
	CodexHome string
	// Hooks also registers the three hooks (HookNames) in the project's
	// .claude/settings.json: they run `<command> hook NAME` and keep the
	// project memory file (MemoryFile).
	Hooks bool
	// DryRun computes every change without writing anything.
	DryRun bool
}

// UninstallOptions say what to remove.
type UninstallOptions struct {
	Dir       string // as InstallOptions.Dir
	Codex     bool   // also remove the Codex registration and the AGENTS.md block
	CodexHome string // as InstallOptions.CodexHome
	// KeepSkills leaves the skills in .claude/skills.
	KeepSkills bool
	DryRun     bool
}

// Actions on a file.
const (
	ActionCreated   = "created"
	ActionUpdated   = "updated"
	ActionUnchanged = "unchanged"
	ActionRemoved   = "removed" // uninstall deleted the file
	ActionKept      = "kept"    // the file is not what stratum wrote: left as it is (see Note)
)

// InstalledFile is one file Install or Uninstall wrote, removed or left
// alone (or would, in a dry run).
type InstalledFile struct {
	Path    string `json:"path"`
	Action  string `json:"action"`
	Content string `json:"content"` // the file's full new content ("" when removed)
	Note    string `json:"note,omitempty"`
	// prune: directories to remove, innermost first, when the removal
	// leaves them empty.
	prune []string
}

type fileChange = InstalledFile

// InstallReport says what Install or Uninstall did.
type InstallReport struct {
	ProjectRoot string          `json:"project_root"`
	Command     string          `json:"command,omitempty"`
	DryRun      bool            `json:"dry_run"`
	Files       []InstalledFile `json:"files"`
	// Notes are things found that stratum does not change by itself.
	Notes []string `json:"notes,omitempty"`
}

// Install sets a project up for stratum:
//
//   - `<command> mcp` as the "stratum" MCP server in .mcp.json (and, with
//     Codex, in Codex's config.toml);
//   - the execution-model block between markers in CLAUDE.md (and, with
//     Codex, AGENTS.md): appended to a file without it, replaced in place
//     otherwise;
//   - the skills under .claude/skills (see Skills);
//   - with Hooks, the hooks in .claude/settings.json (see RunHook).
//
// It is idempotent and edits files as text: other servers, keys and lines,
// and everything outside the markers, keep their bytes. A file that exists
// but cannot be understood is an error and nothing is written unless every
// file could be prepared.
func Install(opts InstallOptions) (InstallReport, error) {
	rep, err := newReport(opts.Dir, opts.DryRun)
	if err != nil {
		return rep, fmt.Errorf("install: %w", err)
	}
	rep.Command = opts.Command
	if rep.Command == "" {
		if rep.Command, err = defaultCommand(); err != nil {
			return rep, fmt.Errorf("install: %w", err)
		}
	}
	home := opts.StratumHome
	if home != "" {
		if home, err = filepath.Abs(home); err != nil {
			return rep, fmt.Errorf("install: STRATUM_HOME: %w", err)
		}
	}
	root := rep.ProjectRoot
	plans := []func() (fileChange, error){
		func() (fileChange, error) { return planMCPJSON(filepath.Join(root, ".mcp.json"), rep.Command, home) },
	}
	if opts.Codex {
		codex, err := codexHome(opts.CodexHome)
		if err != nil {
			return rep, fmt.Errorf("install: %w", err)
		}
		plans = append(plans, func() (fileChange, error) {
			return planCodexTOML(filepath.Join(codex, "config.toml"), rep.Command, home)
		})
	}
	plans = append(plans, func() (fileChange, error) { return planBlock(filepath.Join(root, "CLAUDE.md")) })
	if opts.Codex {
		plans = append(plans, func() (fileChange, error) { return planBlock(filepath.Join(root, "AGENTS.md")) })
	}
	for _, s := range embeddedSkills() {
		plans = append(plans, func() (fileChange, error) { return planSkill(root, s) })
	}
	if opts.Hooks {
		plans = append(plans, func() (fileChange, error) { return planHooks(settingsPath(root), rep.Command) })
	}
	if err := rep.run("install", plans, false); err != nil {
		return rep, err
	}
	rep.Notes = originalLeftovers(root)
	return rep, rep.apply("install")
}

// Uninstall removes what Install added, and nothing else: the stratum
// server entry (an entry that does not run `… mcp` is kept), the marked
// blocks, the skills whose SKILL.md is still what install wrote (an
// edited one is kept and reported) and the hooks install --hooks added. A file left configuring nothing (an
// .mcp.json without servers or other keys, a CLAUDE.md that held only the
// block, an empty config.toml) is removed, as are the skill directories,
// .claude/skills and .claude when that leaves them empty. Files it cannot
// parse are errors, and then nothing is changed.
func Uninstall(opts UninstallOptions) (InstallReport, error) {
	rep, err := newReport(opts.Dir, opts.DryRun)
	if err != nil {
		return rep, fmt.Errorf("uninstall: %w", err)
	}
	root := rep.ProjectRoot
	plans := []func() (fileChange, error){
		func() (fileChange, error) { return unplanMCPJSON(filepath.Join(root, ".mcp.json")) },
	}
	if opts.Codex {
		home, err := codexHome(opts.CodexHome)
		if err != nil {
			return rep, fmt.Errorf("uninstall: %w", err)
		}
		plans = append(plans, func() (fileChange, error) { return unplanCodexTOML(filepath.Join(home, "config.toml")) })
	}
	plans = append(plans, func() (fileChange, error) { return unplanBlock(filepath.Join(root, "CLAUDE.md")) })
	if opts.Codex {
		plans = append(plans, func() (fileChange, error) { return unplanBlock(filepath.Join(root, "AGENTS.md")) })
	}
	if !opts.KeepSkills {
		for _, s := range embeddedSkills() {
			plans = append(plans, func() (fileChange, error) { return unplanSkill(root, s) })
		}
	}
	plans = append(plans, func() (fileChange, error) { return unplanHooks(settingsPath(root)) })
	if err := rep.run("uninstall", plans, true); err != nil {
		return rep, err
	}
	return rep, rep.apply("uninstall")
}

func newReport(dir string, dryRun bool) (InstallReport, error) {
	rep := InstallReport{DryRun: dryRun, Files: []InstalledFile{}}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return rep, err
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return rep, err
	}
	rep.ProjectRoot = ProjectRoot(dir)
	return rep, nil
}

// run computes every change; skipAbsent leaves files that do not exist
// out of the report.
func (rep *InstallReport) run(verb string, plans []func() (fileChange, error), skipAbsent bool) error {
	for _, plan := range plans {
		f, err := plan()
		if err != nil {
			return fmt.Errorf("%s: %w", verb, err)
		}
		if skipAbsent && f.Action == ActionUnchanged && f.Content == "" {
			if _, err := os.Stat(f.Path); errors.Is(err, os.ErrNotExist) {
				continue
			}
		}
		rep.Files = append(rep.Files, f)
	}
	return nil
}

// apply writes and removes the planned files (nothing in a dry run).
func (rep *InstallReport) apply(verb string) error {
	if rep.DryRun {
		return nil
	}
	for _, f := range rep.Files {
		switch f.Action {
		case ActionCreated, ActionUpdated:
			if err := writeFileAtomic(f.Path, []byte(f.Content), 0o644); err != nil {
				return fmt.Errorf("%s: writing %s: %w", verb, f.Path, err)
			}
		case ActionRemoved:
			if err := os.Remove(f.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s: removing %s: %w", verb, f.Path, err)
			}
			for _, d := range f.prune {
				if os.Remove(d) != nil { // not empty (or gone): stop there
					break
				}
			}
		}
	}
	return nil
}

// InstallCommand is `stratum install`: Install, then its report printed
// on w (Write). Exit 1 when the install failed; status 0 with an error is
// a failure to write the report.
func InstallCommand(opts InstallOptions, w io.Writer, asJSON bool) (status int, err error) {
	rep, err := Install(opts)
	return rep.status(err, w, asJSON)
}

// UninstallCommand is `stratum uninstall`: Uninstall, then its report
// printed on w, as InstallCommand.
func UninstallCommand(opts UninstallOptions, w io.Writer, asJSON bool) (status int, err error) {
	rep, err := Uninstall(opts)
	return rep.status(err, w, asJSON)
}

// status ends InstallCommand and UninstallCommand: err (the command
// failed, exit 1), or the report written.
func (rep InstallReport) status(err error, w io.Writer, asJSON bool) (int, error) {
	if err != nil {
		return 1, err
	}
	return 0, rep.Write(w, asJSON)
}

// Write prints the report on w: Text, or with asJSON the report as
// indented JSON (`stratum install --json`).
func (rep InstallReport) Write(w io.Writer, asJSON bool) error {
	if !asJSON {
		_, err := io.WriteString(w, rep.Text())
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(rep)
}

// Text renders the report for people.
func (rep InstallReport) Text() string {
	var b strings.Builder
	for _, f := range rep.Files {
		switch {
		case rep.DryRun && (f.Action == ActionCreated || f.Action == ActionUpdated):
			fmt.Fprintf(&b, "would write %s (%s):\n%s", f.Path, f.Action, f.Content)
			if !strings.HasSuffix(f.Content, "\n") {
				b.WriteString("\n")
			}
		case rep.DryRun && f.Action == ActionRemoved:
			fmt.Fprintf(&b, "would remove %s\n", f.Path)
		case rep.DryRun && f.Action == ActionUnchanged:
			fmt.Fprintf(&b, "%s: already up to date\n", f.Path)
		default:
			fmt.Fprintf(&b, "%s %s\n", f.Action, f.Path)
		}
		if f.Note != "" {
			fmt.Fprintf(&b, "  (%s)\n", f.Note)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

// originalLeftovers notes what the original stratum-mcp installer left in
// the project, which install does not remove by itself.
func originalLeftovers(root string) []string {
	var notes []string
	if b, err := os.ReadFile(filepath.Join(root, ".claude", "mcp.json")); err == nil && strings.Contains(string(b), `"`+ServerName+`"`) {
		notes = append(notes, ".claude/mcp.json also registers a stratum server (stratum-mcp's location); remove that entry if it is the Python server")
	}
	if b, err := os.ReadFile(filepath.Join(root, "CLAUDE.md")); err == nil && strings.Contains(string(b), "## Stratum Execution Model") {
		notes = append(notes, "CLAUDE.md still has stratum-mcp's \"## Stratum Execution Model\" section; remove it by hand, the block between the stratum markers replaces it")
	}
	if b, err := os.ReadFile(settingsPath(root)); err == nil && strings.Contains(string(b), "stratum-session-start.sh") {
		notes = append(notes, ".claude/settings.json still runs stratum-mcp's hook scripts (~/.stratum/hooks/stratum-*.sh); remove those entries, install --hooks registers `stratum hook` instead")
	}
	return notes
}

// codexHome is Codex's home directory.
func codexHome(home string) (string, error) {
	if home == "" {
		home = os.Getenv("CODEX_HOME")
	}
	if home == "" {
		uh, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locating Codex's config: %w (set CODEX_HOME)", err)
		}
		home = filepath.Join(uh, ".codex")
	}
	return home, nil
}

// ProjectRoot walks up from dir to the nearest directory holding .git (dir
// itself when none does): the project install sets up and doctor checks.
func ProjectRoot(dir string) string {
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

// ErrTemporaryBinary: install was run from a temporary `go run` build and
// no --command was given.
var ErrTemporaryBinary = errors.New("this stratum is a temporary go run build")

// executable is os.Executable; tests replace it.
var executable = os.Executable

// defaultCommand is the absolute path of the running binary; a temporary
// build (TemporaryBuild) is ErrTemporaryBinary.
func defaultCommand() (string, error) {
	exe, err := executable()
	if err != nil {
		return ServerName, nil
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	if TemporaryBuild(exe, os.Getenv("GOCACHE")) {
		return "", fmt.Errorf("%w (%s): the MCP client could not start it once it is deleted; install the binary (go install github.com/stratum-go/stratum@latest, or go build -o stratum .) and run its install, or pass --command (e.g. --command stratum to rely on PATH)", ErrTemporaryBinary, exe)
	}
	return exe, nil
}

// TemporaryBuild reports whether the binary at path is a temporary build
// of the go command (run.TemporaryBuild, the one rule).
func TemporaryBuild(path, gocache string) bool { return run.TemporaryBuild(path, gocache) }

// readExisting returns a file's content, or nil when it does not exist.
func readExisting(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, nil
}
