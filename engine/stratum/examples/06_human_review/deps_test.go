package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store/shared"
)

// teamModules are the modules of team mode (the etcd client and what it
// brings): a program on the default bbolt store must not link them.
var teamModules = []string{"go.etcd.io/etcd/", "google.golang.org/grpc", "go.uber.org/zap"}

// exprModules are the modules of the spec expression language (package
// specs/exprlang): a Go program compiles no spec expression and must not
// link them.
var exprModules = []string{"github.com/expr-lang/expr"}

// linkedModules returns the module paths among deps that belong to mods.
func linkedModules(deps, mods []string) []string {
	var bad []string
	for _, d := range deps {
		for _, m := range mods {
			if strings.HasPrefix(d, m) || d == strings.TrimSuffix(m, "/") {
				bad = append(bad, d)
			}
		}
	}
	return bad
}

// TestStoredProgramLinksNoEtcd builds this example (a program that opens
// the shared store with --store) and reads its build information, as `go
// version -m` prints it: no etcd client, gRPC or zap module is linked, nor
// expr-lang (the library links no spec expression compiler).
// The built program then stores its flow in a bbolt file under
// STRATUM_HOME, and refuses an etcd:// store naming the import that
// enables team mode.
func TestStoredProgramLinksNoEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example (-short)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	bin := filepath.Join(t.TempDir(), "06_human_review")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var deps []string
	for _, d := range info.Deps {
		deps = append(deps, d.Path)
	}
	if bad := linkedModules(deps, teamModules); len(bad) > 0 {
		t.Errorf("a program on the bbolt store links team mode's modules %v", bad)
	}
	if bad := linkedModules(deps, exprModules); len(bad) > 0 {
		t.Errorf("a Go program links the spec expression language's modules %v", bad)
	}
	if fi, err := os.Stat(bin); err == nil {
		t.Logf("%d modules linked; binary %.1f MB", len(deps), float64(fi.Size())/1e6)
	}
	// The checks see the modules where they are linked (store/team,
	// specs/exprlang).
	for pkg, mods := range map[string][]string{"store/team": teamModules, "specs/exprlang": exprModules} {
		out, err := exec.Command(goBin, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "github.com/stratum-go/stratum/"+pkg).Output()
		if err != nil {
			t.Fatal(err)
		}
		if len(linkedModules(strings.Fields(string(out)), mods)) == 0 {
			t.Errorf("%s links none of %v: the check cannot fail", pkg, mods)
		}
	}

	home := t.TempDir()
	run := func(storeSetting string) (string, error) {
		cmd := exec.Command(bin, "--store", "--decide", "1")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "STRATUM_HOME="+home, "STRATUM_STORE="+storeSetting)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		return string(stdout) + stderr.String(), err
	}
	if out, err := run(""); err != nil || !strings.Contains(out, "decision: publish") {
		t.Fatalf("--store on the default bbolt file: %v\n%s", err, out)
	}
	o, err := shared.Open(context.Background(), shared.Settings{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.View(context.Background(), func(tx engine.Tx) error {
		sums, err := tx.List(engine.ListFilter{})
		if err == nil && (len(sums) != 1 || sums[0].Driver != "library") {
			t.Errorf("stored flows: %+v, want the example's one library flow", sums)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if out, err := run("etcd://127.0.0.1:9/team"); err == nil || !strings.Contains(out, `import _ "github.com/stratum-go/stratum/store/team"`) {
		t.Fatalf("an etcd:// store without team mode: %v\n%s", err, out)
	}
}
