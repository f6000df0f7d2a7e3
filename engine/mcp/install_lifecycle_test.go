package mcp

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// tree is every file under the given roots, by path.
func tree(t *testing.T, roots ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range roots {
		err := filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				out[p+"/"] = "" // directories count too: uninstall must not leave new ones
				return nil
			}
			b, err := os.ReadFile(p)
			out[p] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func diffTrees(a, b map[string]string) string {
	var keys []string
	seen := map[string]bool{}
	for k := range a {
		keys, seen[k] = append(keys, k), true
	}
	for k := range b {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var d strings.Builder
	for _, k := range keys {
		va, oka := a[k]
		vb, okb := b[k]
		if oka != okb || va != vb {
			d.WriteString("  " + k + ":\n    before " + quoteOrAbsent(va, oka) + "\n    after  " + quoteOrAbsent(vb, okb) + "\n")
		}
	}
	return d.String()
}

func quoteOrAbsent(s string, ok bool) string {
	if !ok {
		return "(absent)"
	}
	return strings.ReplaceAll(s, "\n", `\n`)
}

// writeTree writes path → content files under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		writeFile(t, filepath.Join(root, p), c)
	}
}

// install → install → uninstall leaves every project (and Codex's home)
// byte for byte as it was: other servers, user text around the block, other
// skills and settings, CRLF files.
func TestInstallUninstallRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		project map[string]string
		codex   map[string]string // files in CODEX_HOME
	}{
		{name: "empty project"},
		{name: "existing content", project: map[string]string{
			".git/HEAD":                         "ref: refs/heads/main\n",
			".mcp.json":                         "{\n    \"$schema\": \"https://example.com/mcp.json\",\n    \"mcpServers\": {\n        \"other\": {\"command\": \"other\", \"args\": [\"--port\", \"8080\"]},\n        \"db\": {\n            \"command\": \"db-mcp\"\n        }\n    },\n    \"n\": 1.50\n}\n",
			"CLAUDE.md":                         "# My project\n\nUse tabs.\n",
			".claude/settings.json":             "{\"permissions\": {\"allow\": [\"Bash(go test:*)\"]}}\n",
			".claude/skills/mine/SKILL.md":      "---\nname: mine\ndescription: my own skill\n---\nDo it my way.\n",
			".claude/skills/stratum-x/SKILL.md": "---\nname: stratum-x\ndescription: not ours despite the name\n---\n",
		}},
		{name: "one-line json, no final newline", project: map[string]string{
			".mcp.json": `{"mcpServers":{"other":{"command":"x"}}}`,
			"CLAUDE.md": "no final newline\n",
		}},
		{name: "json without mcpServers", project: map[string]string{
			".mcp.json": "{\n  \"inputs\": []\n}\n",
		}},
		{name: "crlf and codex", project: map[string]string{
			"CLAUDE.md": "# Notes\r\n\r\nKeep CRLF.\r\n",
			"AGENTS.md": "# Agents\r\n\r\nRun the linter.\r\n",
		}, codex: map[string]string{
			"config.toml": "model = \"o3\"\r\n\r\n[mcp_servers.other]\r\ncommand = \"other\"\r\n",
		}},
		{name: "codex config with the table between others", codex: map[string]string{
			"config.toml": "model = \"o3\"\n\n[profiles.fast]\nmodel = \"mini\"\n",
		}},
		{name: "settings with hooks of its own", project: map[string]string{
			".claude/settings.json": "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}\n    ],\n    \"PreToolUse\": []\n  },\n  \"model\": \"opus\"\n}\n",
		}},
		{name: "one-line settings with other hooks", project: map[string]string{
			".claude/settings.json": `{"hooks":{"SessionStart":[{"matcher":"startup","hooks":[{"type":"command","command":"echo hi"}]}]}}`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			project := filepath.Join(t.TempDir(), "project")
			codex := filepath.Join(t.TempDir(), "codex")
			for _, d := range []string{project, codex} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeTree(t, project, c.project)
			writeTree(t, codex, c.codex)
			useCodex := c.codex != nil || c.project["AGENTS.md"] != ""
			before := tree(t, project, codex)

			opts := InstallOptions{Dir: project, Command: "/opt/bin/stratum", Codex: useCodex, CodexHome: codex, Hooks: true}
			rep, err := Install(opts)
			if err != nil {
				t.Fatal(err)
			}
			installed := tree(t, project, codex)
			for _, f := range rep.Files {
				if f.Action == ActionCreated || f.Action == ActionUpdated {
					if installed[f.Path] != f.Content {
						t.Errorf("%s: report and file differ", f.Path)
					}
				}
			}
			rep, err = Install(opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Files {
				if f.Action != ActionUnchanged && f.Action != ActionKept {
					t.Errorf("second install: %s %s", f.Action, f.Path)
				}
			}
			if d := diffTrees(installed, tree(t, project, codex)); d != "" {
				t.Errorf("second install changed files:\n%s", d)
			}
			if _, err := Uninstall(UninstallOptions{Dir: project, Codex: useCodex, CodexHome: codex}); err != nil {
				t.Fatal(err)
			}
			if d := diffTrees(before, tree(t, project, codex)); d != "" {
				t.Errorf("uninstall did not restore the project:\n%s", d)
			}
		})
	}
}

// The block is replaced in place: user text added before and after it
// survives install and uninstall.
func TestBlockKeepsTextAroundIt(t *testing.T) {
	project := t.TempDir()
	if _, err := Install(InstallOptions{Dir: project, Command: "stratum"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(project, "CLAUDE.md")
	block := readFile(t, path)
	stale := strings.Replace(block, "## Stratum", "## Old stratum", 1) // an older version's block
	writeFile(t, path, "# Before\n\ntext\n"+stale+"\n## After\n\nmore text\n")
	rep, err := Install(InstallOptions{Dir: project, Command: "stratum"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Before\n\ntext\n" + block + "\n## After\n\nmore text\n"; readFile(t, path) != want {
		t.Fatalf("block not replaced in place:\n%s", readFile(t, path))
	}
	if rep.Files[1].Path != path || rep.Files[1].Action != ActionUpdated {
		t.Errorf("report %+v", rep.Files[1])
	}
	if _, err := Uninstall(UninstallOptions{Dir: project}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "# Before\n\ntext\n\n## After\n\nmore text\n" {
		t.Fatalf("after uninstall:\n%q", got)
	}
}

func TestPlanBlock(t *testing.T) {
	block := blockText()
	crlf := strings.ReplaceAll(block, "\n", "\r\n")
	cases := []struct {
		name, old, want string
		action          string
	}{
		{"absent", "", block + "\n", ActionCreated},
		{"empty file", "\x00", block + "\n", ActionUpdated},
		{"appended", "text\n", "text\n" + block + "\n", ActionUpdated},
		{"no final newline", "text", "text\n" + block + "\n", ActionUpdated},
		{"crlf", "a\r\nb\r\n", "a\r\nb\r\n" + crlf + "\r\n", ActionUpdated},
		{"current", "a\n" + block + "\nb\n", "a\n" + block + "\nb\n", ActionUnchanged},
		{"block last, no newline", "a\n" + block, "a\n" + block, ActionUnchanged},
		{"old block", "a\n" + blockBegin + "\nold\n" + blockEnd + "\nb\n", "a\n" + block + "\nb\n", ActionUpdated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "CLAUDE.md")
			switch c.old {
			case "":
			case "\x00":
				writeFile(t, path, "")
			default:
				writeFile(t, path, c.old)
			}
			f, err := planBlock(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Action != c.action || f.Content != c.want {
				t.Fatalf("%s %q, want %s %q", f.Action, f.Content, c.action, c.want)
			}
		})
	}
	for name, old := range map[string]string{
		"begin twice":  blockBegin + "\n" + blockBegin + "\n" + blockEnd + "\n",
		"no end":       "a\n" + blockBegin + "\nb\n",
		"end first":    blockEnd + "\n" + blockBegin + "\n",
		"two blocks":   blockBegin + "\n" + blockEnd + "\n" + blockBegin + "\n" + blockEnd + "\n",
		"invalid utf8": "\xff\n",
	} {
		t.Run(name, func(t *testing.T) {
			project := t.TempDir()
			writeFile(t, filepath.Join(project, "CLAUDE.md"), old)
			before := tree(t, project)
			for _, run := range []func() error{
				func() error { _, err := Install(InstallOptions{Dir: project, Command: "stratum"}); return err },
				func() error { _, err := Uninstall(UninstallOptions{Dir: project}); return err },
			} {
				if err := run(); err == nil {
					t.Fatal("want an error")
				}
				if d := diffTrees(before, tree(t, project)); d != "" {
					t.Fatalf("files changed although CLAUDE.md was refused:\n%s", d)
				}
			}
		})
	}
}

// Uninstall removes only what is still as install wrote it.
func TestUninstallKeepsWhatIsNotOurs(t *testing.T) {
	project := t.TempDir()
	if _, err := Install(InstallOptions{Dir: project, Command: "stratum"}); err != nil {
		t.Fatal(err)
	}
	names := Skills()
	edited := skillPath(project, names[0])
	writeFile(t, edited, readFile(t, edited)+"\nMy own addition.\n")
	rep, err := Uninstall(UninstallOptions{Dir: project})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, f := range rep.Files {
		actions[f.Path] = f.Action
	}
	if actions[edited] != ActionKept || !strings.Contains(rep.Text(), "edited since stratum install wrote it") {
		t.Errorf("edited skill: %v\n%s", actions[edited], rep.Text())
	}
	if _, err := os.Stat(edited); err != nil {
		t.Errorf("edited skill removed: %v", err)
	}
	for _, n := range names[1:] {
		if actions[skillPath(project, n)] != ActionRemoved {
			t.Errorf("%s: %s", n, actions[skillPath(project, n)])
		}
		if _, err := os.Stat(filepath.Dir(skillPath(project, n))); !os.IsNotExist(err) {
			t.Errorf("%s: directory left behind", n)
		}
	}
	for _, p := range []string{".mcp.json", "CLAUDE.md"} {
		if actions[filepath.Join(project, p)] != ActionRemoved {
			t.Errorf("%s: %s", p, actions[filepath.Join(project, p)])
		}
	}

	// An entry install did not write (the original's Python server) is kept.
	writeFile(t, filepath.Join(project, ".mcp.json"), `{"mcpServers": {"stratum": {"command": "stratum-mcp"}}}`)
	rep, err = Uninstall(UninstallOptions{Dir: project})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files[0].Action != ActionKept || readFile(t, filepath.Join(project, ".mcp.json")) != `{"mcpServers": {"stratum": {"command": "stratum-mcp"}}}` {
		t.Errorf("foreign entry: %+v", rep.Files[0])
	}
}

func TestUninstallKeepSkillsAndDryRun(t *testing.T) {
	project := t.TempDir()
	codex := filepath.Join(t.TempDir(), "codex")
	// A dry-run install writes nothing.
	rep, err := Install(InstallOptions{Dir: project, Command: "stratum", Codex: true, CodexHome: codex, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree(t, project)) != 1 || !strings.Contains(rep.Text(), "would write") {
		t.Fatalf("dry run wrote files: %v\n%s", tree(t, project), rep.Text())
	}
	if _, err := os.Stat(codex); !os.IsNotExist(err) {
		t.Fatal("dry run created Codex's home")
	}
	if _, err := Install(InstallOptions{Dir: project, Command: "stratum", Codex: true, CodexHome: codex}); err != nil {
		t.Fatal(err)
	}
	installed := tree(t, project, codex)
	// A dry-run uninstall writes nothing either.
	rep, err = Uninstall(UninstallOptions{Dir: project, Codex: true, CodexHome: codex, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(installed, tree(t, project, codex)); d != "" || !strings.Contains(rep.Text(), "would remove") {
		t.Fatalf("dry run changed files:\n%s\n%s", d, rep.Text())
	}
	// --keep-skills leaves the skills, removes the rest.
	if _, err := Uninstall(UninstallOptions{Dir: project, Codex: true, CodexHome: codex, KeepSkills: true}); err != nil {
		t.Fatal(err)
	}
	for _, n := range Skills() {
		if _, err := os.Stat(skillPath(project, n)); err != nil {
			t.Errorf("--keep-skills removed %s", n)
		}
	}
	for _, p := range []string{filepath.Join(project, ".mcp.json"), filepath.Join(project, "CLAUDE.md"),
		filepath.Join(project, "AGENTS.md"), filepath.Join(codex, "config.toml")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s not removed", p)
		}
	}
}

// A file uninstall cannot parse stops it before anything is changed.
func TestUninstallRefusesUnparseable(t *testing.T) {
	project := t.TempDir()
	if _, err := Install(InstallOptions{Dir: project, Command: "stratum"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(project, ".mcp.json"), `{"mcpServers": {`)
	before := tree(t, project)
	if _, err := Uninstall(UninstallOptions{Dir: project}); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("err = %v", err)
	}
	if d := diffTrees(before, tree(t, project)); d != "" {
		t.Fatalf("files changed:\n%s", d)
	}
}

// Traces of the original's installer are reported, not touched.
func TestInstallNotesOriginalLeftovers(t *testing.T) {
	project := t.TempDir()
	writeTree(t, project, map[string]string{
		".claude/mcp.json": `{"mcpServers": {"stratum": {"command": "stratum-mcp"}}}`,
		"CLAUDE.md":        "# P\n\n## Stratum Execution Model\n\nFor non-trivial tasks…\n",
	})
	rep, err := Install(InstallOptions{Dir: project, Command: "stratum"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 2 || !strings.Contains(rep.Text(), "note: ") {
		t.Fatalf("notes %v", rep.Notes)
	}
	if got := readFile(t, filepath.Join(project, ".claude", "mcp.json")); got != `{"mcpServers": {"stratum": {"command": "stratum-mcp"}}}` {
		t.Errorf(".claude/mcp.json changed: %s", got)
	}
}
