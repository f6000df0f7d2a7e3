package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctor: what install writes passes; another binary, another
// STRATUM_HOME or no entry at all fails with the fix.
func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "stratum")
	other := filepath.Join(dir, "bin", "stratum-old")
	for _, p := range []string{bin, other} {
		writeFile(t, p, "#!/bin/sh\n")
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	project := filepath.Join(dir, "project")
	codex := filepath.Join(dir, "codex")
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	opts := DoctorOptions{Dir: project, CodexHome: codex, Binary: bin, Getenv: env(map[string]string{"STRATUM_HOME": home})}
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}

	// No .mcp.json: not set up for an agent, nothing fails.
	rep, err := Doctor(opts)
	if err != nil || !rep.OK || len(rep.Checks) != 1 || !rep.Checks[0].Skipped || !strings.Contains(rep.Checks[0].Detail, "stratum install") {
		t.Fatalf("no .mcp.json: %+v %v", rep, err)
	}
	// An .mcp.json without stratum: a failure with the fix.
	if err := os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Doctor(opts)
	if err != nil || rep.OK || len(rep.Checks) != 1 || !strings.Contains(rep.Checks[0].Fix, "stratum install") {
		t.Fatalf("no entry: %+v %v", rep, err)
	}
	if _, err := Install(InstallOptions{Dir: project, Command: bin, StratumHome: home, Codex: true, CodexHome: codex}); err != nil {
		t.Fatal(err)
	}
	if rep, err = Doctor(opts); err != nil || !rep.OK || len(rep.Checks) != 8 {
		t.Fatalf("after install: %+v %v", rep, err)
	}
	failed := func(rep DoctorReport) (out []string) {
		for _, c := range rep.Checks {
			if !c.OK {
				out = append(out, c.Config+" "+c.Check)
			}
		}
		return out
	}
	o := opts
	o.Binary = other
	rep, _ = Doctor(o)
	if f := failed(rep); len(f) != 2 || !strings.HasSuffix(f[0], ".mcp.json binary") || !strings.HasSuffix(f[1], "config.toml binary") {
		t.Fatalf("another binary: %v", f)
	}
	o = opts
	o.Getenv = env(map[string]string{"STRATUM_HOME": filepath.Join(dir, "elsewhere")})
	rep, _ = Doctor(o)
	if f := failed(rep); len(f) != 2 || !strings.HasSuffix(f[0], "store") || !strings.Contains(rep.Checks[3].Detail, "different stores") {
		t.Fatalf("another STRATUM_HOME: %v %+v", f, rep)
	}
	// A bare command name is looked up on PATH.
	if _, err := Install(InstallOptions{Dir: project, Command: "stratum", StratumHome: home}); err != nil {
		t.Fatal(err)
	}
	o = opts
	o.Getenv = env(map[string]string{"STRATUM_HOME": home, "PATH": filepath.Dir(bin)})
	if rep, _ = Doctor(o); !rep.Checks[1].OK {
		t.Fatalf("command on PATH: %+v", rep.Checks[1])
	}
	o.Getenv = env(map[string]string{"STRATUM_HOME": home, "PATH": dir})
	if rep, _ = Doctor(o); rep.Checks[1].OK || !strings.Contains(rep.Checks[1].Detail, "not on PATH") {
		t.Fatalf("command not on PATH: %+v", rep.Checks[1])
	}
}
