package mcp

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInstallMCPJSON(t *testing.T) {
	const cmd = "/opt/bin/stratum"
	cases := []struct {
		name     string
		existing string // "" = no file
		action   string
		want     map[string]any // the decoded result
		wantErr  string
	}{
		{name: "fresh", action: ActionCreated,
			want: map[string]any{"mcpServers": map[string]any{"stratum": map[string]any{"command": cmd, "args": []any{"mcp"}}}}},
		{name: "empty file", existing: "  \n", action: ActionUpdated,
			want: map[string]any{"mcpServers": map[string]any{"stratum": map[string]any{"command": cmd, "args": []any{"mcp"}}}}},
		{name: "other servers and keys kept",
			existing: `{"mcpServers": {"other": {"command": "x", "args": ["y"], "env": {"K": "1"}}}, "custom": [1, 2.50]}`,
			action:   ActionUpdated,
			want: map[string]any{
				"mcpServers": map[string]any{
					"other":   map[string]any{"command": "x", "args": []any{"y"}, "env": map[string]any{"K": "1"}},
					"stratum": map[string]any{"command": cmd, "args": []any{"mcp"}},
				},
				"custom": []any{1.0, 2.5},
			}},
		{name: "old stratum entry updated, its env kept",
			existing: `{"mcpServers": {"stratum": {"command": "stratum-mcp", "env": {"STRATUM_HOME": "/x"}}}}`,
			action:   ActionUpdated,
			want: map[string]any{"mcpServers": map[string]any{"stratum": map[string]any{"command": cmd, "args": []any{"mcp"},
				"env": map[string]any{"STRATUM_HOME": "/x"}}}}},
		{name: "already installed", existing: `{"mcpServers":{"stratum":{"command":"/opt/bin/stratum","args":["mcp"]}}}`,
			action: ActionUnchanged},
		{name: "malformed", existing: `{"mcpServers": {`, wantErr: "not valid JSON"},
		{name: "not an object", existing: `[1]`, wantErr: "not a JSON object"},
		{name: "trailing data", existing: `{} {}`, wantErr: "data after"},
		{name: "mcpServers not an object", existing: `{"mcpServers": []}`, wantErr: "mcpServers is not an object"},
		{name: "stratum entry not an object", existing: `{"mcpServers": {"stratum": "x"}}`, wantErr: "mcpServers.stratum is not an object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			sub := filepath.Join(root, "a", "b")
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(root, ".mcp.json")
			if c.existing != "" {
				writeFile(t, path, c.existing)
			}
			rep, err := Install(InstallOptions{Dir: sub, Command: cmd})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if got := readFile(t, path); got != c.existing {
					t.Fatalf("malformed file changed: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// .mcp.json, CLAUDE.md, then the skills.
			if rep.ProjectRoot != root || len(rep.Files) != 2+len(Skills()) || rep.Files[0].Path != path || rep.Files[0].Action != c.action {
				t.Fatalf("report %+v", rep)
			}
			got := readFile(t, path)
			if c.action == ActionUnchanged {
				if got != c.existing {
					t.Fatalf("unchanged file rewritten: %q", got)
				}
				return
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(got), &doc); err != nil {
				t.Fatal(err)
			}
			if a, b := mustJSON(t, doc), mustJSON(t, c.want); a != b {
				t.Fatalf("got  %s\nwant %s", a, b)
			}
			// Idempotent: a second run changes nothing.
			rep, err = Install(InstallOptions{Dir: sub, Command: cmd})
			if err != nil || rep.Files[0].Action != ActionUnchanged || readFile(t, path) != got {
				t.Fatalf("second run: %+v %v", rep, err)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInstallCodexTOML(t *testing.T) {
	const cmd = `C:\bin\stratum "x"`
	quoted := `"C:\\bin\\stratum \"x\""`
	table := "[mcp_servers.stratum]\ncommand = " + quoted + "\nargs = [\"mcp\"]\n"
	cases := []struct {
		name     string
		existing string
		action   string
		want     string
		wantErr  string
	}{
		{name: "fresh", action: ActionCreated, want: table},
		{name: "other servers kept", action: ActionUpdated,
			existing: "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"other\"\n",
			want:     "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"other\"\n\n" + table},
		{name: "no trailing newline", action: ActionUpdated, existing: "model = \"o3\"",
			want: "model = \"o3\"\n\n" + table},
		{name: "existing table updated in place", action: ActionUpdated,
			existing: "[mcp_servers.stratum]\ncommand = \"stratum-mcp\"\nenv = { A = \"1\" }\n\n[profiles.x]\nmodel = \"y\"\n",
			want:     "[mcp_servers.stratum]\ncommand = " + quoted + "\nenv = { A = \"1\" }\nargs = [\"mcp\"]\n\n[profiles.x]\nmodel = \"y\"\n"},
		{name: "already installed", action: ActionUnchanged, existing: "# mine\n" + table},
		{name: "inline table", existing: "[mcp_servers]\nstratum = { command = \"x\" }\n", wantErr: "edit it by hand"},
		{name: "dotted keys", existing: "mcp_servers.stratum.command = \"x\"\n", wantErr: "edit it by hand"},
		{name: "twice", existing: table + table, wantErr: "appears twice"},
		{name: "bad header", existing: "[mcp_servers.stratum\n", wantErr: "malformed table header"},
		{name: "bad utf8", existing: "a = \"\xff\"\n", wantErr: "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			project := t.TempDir()
			codex := filepath.Join(t.TempDir(), "codex")
			path := filepath.Join(codex, "config.toml")
			if c.existing != "" {
				writeFile(t, path, c.existing)
			}
			rep, err := Install(InstallOptions{Dir: project, Command: cmd, Codex: true, CodexHome: codex})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if got := readFile(t, path); got != c.existing {
					t.Fatalf("file changed: %q", got)
				}
				if _, err := os.Stat(filepath.Join(project, ".mcp.json")); err == nil {
					t.Fatal(".mcp.json written although the Codex config failed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// .mcp.json, config.toml, CLAUDE.md, AGENTS.md, then the skills.
			if len(rep.Files) != 4+len(Skills()) || rep.Files[1].Path != path || rep.Files[1].Action != c.action {
				t.Fatalf("report %+v", rep)
			}
			got := readFile(t, path)
			want := c.want
			if c.action == ActionUnchanged {
				want = c.existing
			}
			if got != want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, want)
			}
			rep, err = Install(InstallOptions{Dir: project, Command: cmd, Codex: true, CodexHome: codex})
			if err != nil || rep.Files[1].Action != ActionUnchanged || readFile(t, path) != got {
				t.Fatalf("second run: %+v %v", rep, err)
			}
		})
	}
}

// TestInstallCodexStratumHome: with $STRATUM_HOME set, Codex's table gets
// it in its env (as .mcp.json's env block), so Codex's server opens the
// reviewer's store; an existing env keeps its other keys.
func TestInstallCodexStratumHome(t *testing.T) {
	home := filepath.Join(t.TempDir(), "team store")
	q := tomlString(home)
	head := "[mcp_servers.stratum]\ncommand = \"stratum\"\nargs = [\"mcp\"]\n"
	cases := []struct {
		name, existing, want, wantErr string
	}{
		{name: "fresh", want: head + "env = { STRATUM_HOME = " + q + " }\n"},
		{name: "env with other keys", existing: "[mcp_servers.stratum]\ncommand = \"x\"\nenv = { A = \"1\" }\n",
			want: "[mcp_servers.stratum]\ncommand = \"stratum\"\nenv = { STRATUM_HOME = " + q + ", A = \"1\" }\nargs = [\"mcp\"]\n"},
		{name: "old home replaced", existing: head + "env = { A = \"1\", STRATUM_HOME = \"/old\" }\n",
			want: head + "env = { A = \"1\", STRATUM_HOME = " + q + " }\n"},
		{name: "empty env", existing: head + "env = {}\n", want: head + "env = { STRATUM_HOME = " + q + " }\n"},
		{name: "env subtable", existing: head + "\n[mcp_servers.stratum.env]\nA = \"1\"\n", wantErr: "by hand"},
		{name: "multi-line env", existing: head + "env = {\n", wantErr: "one-line inline table"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			codex := filepath.Join(t.TempDir(), "codex")
			path := filepath.Join(codex, "config.toml")
			if c.existing != "" {
				writeFile(t, path, c.existing)
			}
			opts := InstallOptions{Dir: t.TempDir(), Command: "stratum", StratumHome: home, Codex: true, CodexHome: codex}
			_, err := Install(opts)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if got := readFile(t, path); got != c.existing {
					t.Fatalf("file changed: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); got != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, c.want)
			}
			if rep, err := Install(opts); err != nil || rep.Files[1].Action != ActionUnchanged {
				t.Fatalf("second run: %+v %v", rep, err)
			}
		})
	}
}

// fakeExecutable makes the running binary look like path for the test.
func fakeExecutable(t *testing.T, path string) {
	old := executable
	executable = func() (string, error) { return path, nil }
	t.Cleanup(func() { executable = old })
}

func TestInstallDryRunAndDefaults(t *testing.T) {
	fakeExecutable(t, filepath.Join(t.TempDir(), "bin", "stratum")) // not a go-build dir
	dir := t.TempDir()
	codex := filepath.Join(dir, "codexhome")
	t.Setenv("CODEX_HOME", codex)
	rep, err := Install(InstallOptions{Dir: dir, Codex: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || len(rep.Files) != 4+len(Skills()) || rep.Files[0].Action != ActionCreated || !strings.Contains(rep.Files[0].Content, `"mcp"`) {
		t.Fatalf("report %+v", rep)
	}
	if rep.Files[1].Path != filepath.Join(codex, "config.toml") {
		t.Fatalf("codex path %s", rep.Files[1].Path)
	}
	if !filepath.IsAbs(rep.Command) {
		t.Errorf("default command %q is not absolute", rep.Command)
	}
	// No .git above a temp dir: the start directory is the root.
	if rep.ProjectRoot != dir {
		t.Errorf("root %s, want %s", rep.ProjectRoot, dir)
	}
	for _, f := range rep.Files {
		if _, err := os.Stat(f.Path); err == nil {
			t.Errorf("dry run wrote %s", f.Path)
		}
	}
}

func TestTableHeader(t *testing.T) {
	cases := map[string]string{
		"[a]":                    "a",
		"[ a . b ]":              "a.b",
		"[[a.b]]":                "a.b",
		"[mcp_servers.x] # note": "mcp_servers.x",
		"[a":                     "",
		"[]":                     "",
		"[a]]":                   "",
	}
	for in, want := range cases {
		if got := tableHeader(in); got != want {
			t.Errorf("tableHeader(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInstallReportWrite(t *testing.T) {
	rep := InstallReport{ProjectRoot: "/p", Files: []InstalledFile{{Path: "CLAUDE.md", Action: ActionUpdated}},
		Notes: []string{"block <!-- stratum:begin --> & more"}}
	for _, tc := range []struct {
		name   string
		asJSON bool
		want   string
	}{
		{"text", false, "updated CLAUDE.md\nnote: block <!-- stratum:begin --> & more\n"},
		{"json keeps markup unescaped", true, `{
  "project_root": "/p",
  "dry_run": false,
  "files": [
    {
      "path": "CLAUDE.md",
      "action": "updated",
      "content": ""
    }
  ],
  "notes": [
    "block <!-- stratum:begin --> & more"
  ]
}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := rep.Write(&b, tc.asJSON); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("Write =\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

func TestTemporaryBuild(t *testing.T) {
	for _, tc := range []struct {
		path, gocache string
		want          bool
	}{
		{"/tmp/go-build1234567/b001/exe/stratum", "", true},
		{"/home/ann/.cache/go-build/ab/abcdef-d/stratum", "", true},
		{"/var/cache/gobuild/0a/0a12-d/stratum", "/var/cache/gobuild", true},
		{"/home/ann/go/bin/stratum", "/var/cache/gobuild", false},
		{"/usr/local/bin/stratum", "", false},
		{"/opt/go-builder/stratum", "", false},
		{"/var/cache/gobuild-other/stratum", "/var/cache/gobuild", false},
		{"/usr/local/bin/stratum", "off", false},
	} {
		if got := TemporaryBuild(tc.path, tc.gocache); got != tc.want {
			t.Errorf("TemporaryBuild(%q, %q) = %v, want %v", tc.path, tc.gocache, got, tc.want)
		}
	}
}

// TestInstallRefusesGoRun: from a `go run` build (a binary in a go-build
// directory) install refuses and writes nothing, unless --command says
// what the client should run.
func TestInstallRefusesGoRun(t *testing.T) {
	fakeExecutable(t, "/tmp/go-build3141592/b001/exe/stratum")
	dir := t.TempDir()
	_, err := Install(InstallOptions{Dir: dir})
	if !errors.Is(err, ErrTemporaryBinary) || !strings.Contains(err.Error(), "--command") {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("wrote %v", entries)
	}
	rep, err := Install(InstallOptions{Dir: dir, Command: "stratum"})
	if err != nil || rep.Command != "stratum" {
		t.Fatalf("with --command: %+v, %v", rep, err)
	}
}

// TestInstallStratumHome: with STRATUM_HOME set, the server entry gets an
// env block with it (absolute), merged into an existing env.
func TestInstallStratumHome(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	path := filepath.Join(dir, ".mcp.json")
	if _, err := Install(InstallOptions{Dir: dir, Command: "/opt/bin/stratum", StratumHome: "state"}); err != nil {
		t.Fatal(err)
	}
	want := `{"mcpServers":{"stratum":{"args":["mcp"],"command":"/opt/bin/stratum","env":{"STRATUM_HOME":` + mustJSON(t, filepath.Join(dir, "state")) + `}}}}`
	var doc map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &doc); err != nil || mustJSON(t, doc) != want {
		t.Fatalf("got %s (%v)\nwant %s", readFile(t, path), err, want)
	}
	rep, err := Install(InstallOptions{Dir: dir, Command: "/opt/bin/stratum", StratumHome: filepath.Join(dir, "state")})
	if err != nil || rep.Files[0].Action != ActionUnchanged {
		t.Fatalf("second run: %+v %v", rep.Files[0], err)
	}
	// An existing env keeps its other variables.
	writeFile(t, path, `{"mcpServers": {"stratum": {"command": "/opt/bin/stratum", "args": ["mcp"], "env": {"K": "1", "STRATUM_HOME": "/old"}}}}`)
	if _, err := Install(InstallOptions{Dir: dir, Command: "/opt/bin/stratum", StratumHome: "/new"}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(readFile(t, path)), &doc); err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(t, doc); got != `{"mcpServers":{"stratum":{"args":["mcp"],"command":"/opt/bin/stratum","env":{"K":"1","STRATUM_HOME":"/new"}}}}` {
		t.Fatalf("merged env: %s", got)
	}
}
