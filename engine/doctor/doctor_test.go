package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/run"
)

// Agents: one on PATH passes; a missing built-in nothing uses warns; a
// missing one a spec uses, or one configured, fails with the fix.
func TestCheckAgents(t *testing.T) {
	onPath := map[string]bool{"claude": true}
	look := func(c string) (string, error) {
		if onPath[c] {
			return "/usr/bin/" + c, nil
		}
		return "", errors.New("not found")
	}
	for _, c := range []struct {
		name  string
		cfg   map[string]config.Command
		needs map[string]string
		want  []string
	}{
		{"nothing used", nil, nil, []string{"ok claude: /usr/bin/claude", "warn codex:"}},
		{"codex used", nil, map[string]string{"codex": "a.stratum.yaml: step x"}, []string{"ok claude", "fail codex: codex is not on PATH, and a.stratum.yaml: step x uses agent: codex"}},
		{"configured", map[string]config.Command{"mine": {Shell: "my-agent --json < {prompt_file}"}}, nil, []string{"fail mine: my-agent, configured in config.yaml"}},
	} {
		var rep Report
		rep.OK = true
		checkAgents(&rep, Options{Config: config.Config{Agents: c.cfg}, LookPath: look}, run.Needs{Agents: c.needs})
		var got []string
		for _, ch := range rep.Checks {
			got = append(got, string(ch.Status)+" "+ch.Detail)
		}
		all := strings.Join(got, "\n")
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: checks\n%s\nlack %q", c.name, all, w)
			}
		}
	}
}

// The store: a store that does not open fails with a fix that fits the
// cause; one whose write transaction cannot start fails; etcd's writes are
// not probed.
func TestCheckStore(t *testing.T) {
	for _, c := range []struct {
		p    StoreProbe
		want string
	}{
		{StoreProbe{Name: "bbolt x", Open: errors.New("store x was written by a newer stratum (schema 9)")}, "fail|bbolt x does not open|upgrade this stratum"},
		{StoreProbe{Name: "bbolt x", Open: errors.New("store x is corrupt (truncated)")}, "fail|does not open|stratum store check"},
		{StoreProbe{Name: "bbolt x", Schema: 7, WriteProbed: true, Write: errors.New("permission denied")}, "fail|cannot take a write transaction|writable"},
		{StoreProbe{Name: "bbolt x", Open: fmt.Errorf("store x: open: %w", &fs.PathError{Op: "open", Path: "x", Err: fs.ErrPermission})}, "fail|does not open|writable by this user"},
		{StoreProbe{Name: "etcd etcd://h/p", Schema: 4}, "ok|writes are not probed on etcd|"},
	} {
		rep := Report{OK: true}
		checkStore(&rep, c.p, "stratum")
		last := rep.Checks[len(rep.Checks)-1]
		want := strings.Split(c.want, "|")
		if string(last.Status) != want[0] || !strings.Contains(last.Detail, want[1]) || !strings.Contains(last.Fix, want[2]) {
			t.Errorf("%+v: %+v, want %q", c.p, last, c.want)
		}
	}
}

// Run: a failing check makes the report fail; warnings do not.
func TestRunExitOnlyOnFailures(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"HOME": dir}
	o := Options{Dir: dir, Getenv: func(k string) string { return env[k] }, LookPath: func(string) (string, error) { return "", errors.New("no") },
		Reach: func(context.Context, string) (int, error) { return 200, nil }}
	o.MCP.CodexHome = dir
	rep, err := Run(context.Background(), o)
	if err != nil || !rep.OK {
		t.Fatalf("warnings only: %+v %v", rep, err)
	}
	env["STRATUM_MODEL"] = "openai/gpt-4o-mini"
	rep, _ = Run(context.Background(), o)
	if rep.OK {
		t.Fatalf("a missing key passed: %+v", rep)
	}
}
