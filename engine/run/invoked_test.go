package run

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Invocation: stratum when that name on PATH is this binary; its path
// when it is not; for a go run build, go run of the checkout the working
// directory is in (relative), else of the module at its latest version.
func TestInvocation(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "stratum")
	other := filepath.Join(dir, "other", "stratum")
	checkout := filepath.Join(dir, "src", "stratum")
	for _, p := range []string{bin, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(checkout, "specs", "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module "+ModulePath+"\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(os.TempDir(), "go-build1234", "b001", "exe", "stratum")
	onPath := func(p string) func(string) (string, error) {
		return func(string) (string, error) {
			if p == "" {
				return "", errors.New("not found")
			}
			return p, nil
		}
	}
	wd := func(d string) func() (string, error) { return func() (string, error) { return d, nil } }
	env := func(string) string { return "" }
	for _, c := range []struct {
		name string
		iv   Invoked
		want string
	}{
		{"on PATH", Invoked{Executable: bin, Getenv: env, LookPath: onPath(bin), Getwd: wd(dir)}, "stratum"},
		{"another on PATH", Invoked{Executable: bin, Getenv: env, LookPath: onPath(other), Getwd: wd(dir)}, bin},
		{"none on PATH", Invoked{Executable: bin, Getenv: env, LookPath: onPath(""), Getwd: wd(dir)}, bin},
		{"go run in the checkout", Invoked{Executable: tmp, Getenv: env, LookPath: onPath(""), Getwd: wd(checkout)}, "go run ."},
		{"go run below it", Invoked{Executable: tmp, Getenv: env, LookPath: onPath(bin), Getwd: wd(filepath.Join(checkout, "specs", "examples"))}, "go run ../.."},
		{"go run elsewhere", Invoked{Executable: tmp, Getenv: env, LookPath: onPath(""), Getwd: wd(dir)}, "go run " + ModulePath + "@latest"},
		{"a path with a space", Invoked{Executable: "/my tools/stratum", Getenv: env, LookPath: onPath(""), Getwd: wd(dir)}, "'/my tools/stratum'"},
	} {
		if got := c.iv.Invocation(); got != c.want {
			t.Errorf("%s: Invocation() = %q, want %q", c.name, got, c.want)
		}
	}
}
