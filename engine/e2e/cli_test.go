package e2e

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store"
)

// These tests run the built binary (TestMain) as a user would; the store is
// seeded in-process where a test needs flows it cannot make through the CLI
// (ids sharing a prefix).

const idSpec = `version: "0.2"
functions:
  approval:
    mode: gate
    approver: APPROVER
flows:
  main:
    input: {}
    steps:
      - id: build
        intent: "build it"
      - id: review
        function: approval
        depends_on: [build]
        on_approve: ~
        on_revise: build
        on_kill: ~
`

// cliEnv is a temporary STRATUM_HOME with the binary on PATH.
type cliEnv struct {
	t    *testing.T
	home string
	svc  *engine.Service
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	home := t.TempDir()
	st, err := store.Open(filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &cliEnv{t: t, home: home, svc: &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}}
}

func (e *cliEnv) env() []string {
	return append(os.Environ(), "STRATUM_HOME="+e.home, "NO_COLOR=1", "GITHUB_ACTIONS=")
}

// run runs stratum with args and stdin; it returns the exit code, stdout
// and stderr.
func (e *cliEnv) run(stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "stratum"), args...)
	cmd.Env = e.env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// plan starts a flow of idSpec (with the given approver) and reports its
// build step, so it waits at the gate.
func (e *cliEnv) plan(approver string, id string) string {
	e.t.Helper()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: e.svc.Store}
	if id != "" {
		svc.NewID = func() string { return id }
	}
	ctx := context.Background()
	out, err := svc.Plan(ctx, strings.Replace(idSpec, "APPROVER", approver, 1), "main", nil, engine.PlanOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	fid := engine.FlowIDOf(out)
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: fid, StepID: "build", Result: map[string]any{}}); err != nil {
		e.t.Fatal(err)
	}
	return fid
}

func (e *cliEnv) status(id string) state.FlowStatus {
	e.t.Helper()
	st, err := e.svc.Query().Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.Status
}

// TestAmbiguousFlowIDPrefix: a prefix several flow ids start with is an
// error listing the candidates on every command that takes a flow id; a
// unique one works (the testscript flow_ids covers unique, short and unknown
// prefixes with real random ids).
func TestAmbiguousFlowIDPrefix(t *testing.T) {
	e := newCLIEnv(t)
	for _, id := range []string{"abcd1111-aaaa", "abcd2222-bbbb", "abce3333-cccc"} {
		e.plan("any", id)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "abcd"}, `"error_type": "ambiguous_flow_id"`},
		{[]string{"resume", "abcd"}, `"error_type": "ambiguous_flow_id"`},
		{[]string{"step-done", "abcd", "build", "--result", "{}"}, `"error_type": "ambiguous_flow_id"`},
		{[]string{"query", "flow", "abcd"}, `"code": "ambiguous_flow_id"`},
		{[]string{"gate", "approve", "abcd", "review", "--note", "ok"}, `"code": "ambiguous_flow_id"`},
	} {
		code, out, _ := e.run("", tc.args...)
		if code != 1 || !strings.Contains(out, tc.want) ||
			!strings.Contains(out, `"abcd1111-aaaa"`) || !strings.Contains(out, `"abcd2222-bbbb"`) || strings.Contains(out, `"abce3333-cccc"`) {
			t.Errorf("%v: exit %d\n%s", tc.args, code, out)
		}
	}
	code, _, errOut := e.run("", "run", "--resume", "abcd")
	if code != 2 || !strings.Contains(errOut, "ambiguous") || !strings.Contains(errOut, "abcd1111-aaaa, abcd2222-bbbb") {
		t.Errorf("run --resume: exit %d\n%s", code, errOut)
	}
	code, out, _ := e.run("", "query", "flow", "abce")
	if code != 0 || !strings.Contains(out, `"flow_id": "abce3333-cccc"`) {
		t.Errorf("a unique prefix: exit %d\n%s", code, out)
	}
}

// TestGateHumanConfirm: `stratum gate` decides an approver: human gate only
// on a terminal — here a real pseudo-terminal from script(1) — after the
// reviewer typed the step id or the flow's short id; without one it is exit
// 2 and nothing is recorded.
func TestGateHumanConfirm(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed: no pseudo-terminal to test with")
	}
	e := newCLIEnv(t)
	// onTerminal runs `stratum ARGS` with a pseudo-terminal as its stdin,
	// stdout and stderr and types typed once the confirmation prompt shows
	// (as a person would: input typed before it could be read by the
	// terminal queries every bubbletea program makes at start-up); it
	// returns the exit code and what the terminal showed.
	onTerminal := func(typed string, args ...string) (int, string) {
		t.Helper()
		line := filepath.Join(binDir, "stratum")
		for _, a := range args {
			line += " '" + a + "'"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, "-qec", line, "/dev/null")
		// TERM=dumb: no terminal answers script's pseudo-terminal, so the
		// colour queries bubbletea makes at start-up would wait out their
		// timeout (5 s) each time; a real terminal answers at once.
		cmd.Env = append(e.env(), "TERM=dumb")
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		outPipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var shown strings.Builder
		buf := make([]byte, 4096)
		typedYet := false
		for {
			n, rerr := outPipe.Read(buf)
			shown.Write(buf[:n])
			if !typedYet && strings.Contains(shown.String(), "type the gate's step id") {
				typedYet = true
				_, _ = io.WriteString(in, typed)
			}
			if rerr != nil {
				break
			}
		}
		_ = in.Close()
		err = cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("%v: timed out; the terminal showed %q", args, shown.String())
		}
		return code, shown.String()
	}

	id := e.plan("human", "")
	if code, out, msg := e.run("review\n", "gate", "approve", id, "review"); code != 2 || out != "" || !strings.Contains(msg, "use the TUI") {
		t.Errorf("no terminal: exit %d %q %q", code, out, msg)
	}
	if code, shown := onTerminal("yes\n", "gate", "approve", id, "review"); code != 2 || !strings.Contains(shown, "not confirmed") {
		t.Errorf("wrong confirmation: exit %d %q", code, shown)
	}
	if s := e.status(id); s != state.StatusAwaitingGate {
		t.Fatalf("refused decisions changed the flow: %s", s)
	}
	code, shown := onTerminal("review\n", "gate", "approve", id, "review")
	if code != 0 || !strings.Contains(shown, `"result": "complete"`) || !strings.Contains(shown, "type the gate's step id (review)") {
		t.Errorf("confirmed with the step id: exit %d %q", code, shown)
	}
	id = e.plan("human", "")
	if code, shown := onTerminal(id[:8]+"\n", "gate", "reject", id[:6], "review", "--note", "no"); code != 0 || !strings.Contains(shown, `"result": "killed"`) {
		t.Errorf("confirmed with the short id: exit %d %q", code, shown)
	}

	// Every other path that records a human decision follows the same rule
	// (issue 22): /dev/null and /dev/zero are character devices, not
	// terminals; --approve GATE and the run's console need the terminal
	// and the confirmation too; nothing is recorded without them, and an
	// endless input does not grow memory.
	id = e.plan("human", "")
	fromFile := func(stdin string, args ...string) (int, string) {
		t.Helper()
		f, err := os.Open(stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "stratum"), args...)
		cmd.Env, cmd.Stdin = e.env(), f
		var errb strings.Builder
		cmd.Stderr = &errb
		err = cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("%s < %s: did not end", strings.Join(args, " "), stdin)
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, errb.String()
	}
	for _, dev := range []string{"/dev/null", "/dev/zero"} {
		if code, msg := fromFile(dev, "gate", "approve", id, "review"); code != 2 || !strings.Contains(msg, "use the TUI") {
			t.Errorf("gate approve < %s: exit %d %q", dev, code, msg)
		}
		if code, msg := fromFile(dev, "run", "--resume", id, "--approve", "review"); code != 2 || !strings.Contains(msg, "decided by a person") {
			t.Errorf("run --approve < %s: exit %d %q", dev, code, msg)
		}
	}
	if code, _, msg := e.run("approve\nlgtm\nreview\n", "run", "--resume", id, "--on-gate", "prompt"); code != 2 || !strings.Contains(msg, "decided by a person") {
		t.Errorf("run's console from a pipe: exit %d %q", code, msg)
	}
	if s := e.status(id); s != state.StatusAwaitingGate {
		t.Fatalf("refused decisions changed the flow: %s", s)
	}
	if code, shown := onTerminal("review\n", "run", "--resume", id, "--approve", "review"); code != 0 || !strings.Contains(shown, "type the gate's step id (review)") {
		t.Errorf("run --approve on a terminal, confirmed: exit %d %q", code, shown)
	}
	if s := e.status(id); s != state.StatusComplete {
		t.Errorf("after the confirmed --approve: %s", s)
	}
}

// TestHelpTexts: in every command's --help, flag descriptions do not leak
// into the flag column (cobra takes a backquoted word of a usage as the
// value's placeholder), and every spec an example names is one the
// repository ships.
func TestHelpTexts(t *testing.T) {
	e := newCLIEnv(t)
	root := repoRoot(t)
	var walk func(path []string)
	seen := 0
	walk = func(path []string) {
		code, help, _ := e.run("", append(path, "--help")...)
		if code != 0 {
			t.Fatalf("%v --help: exit %d", path, code)
		}
		seen++
		section := ""
		for _, line := range strings.Split(help, "\n") {
			if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
				section = line
				continue
			}
			switch section {
			case "Flags:", "Global Flags:":
				if m := flagColumn.FindStringSubmatch(line); m != nil && m[2] != "" && !flagTypes[m[2]] {
					t.Errorf("%v --%s: placeholder %q comes from a backquoted word of the usage: %q", path, m[1], m[2], strings.TrimSpace(line))
				}
			case "Examples:":
				fields := strings.Fields(line)
				for i, w := range fields {
					w = strings.Trim(w, `"'`)
					isOutput := i > 0 && (fields[i-1] == "--output" || fields[i-1] == "-o" || fields[i-1] == "--record")
					shipped := strings.HasPrefix(w, "specs/") || strings.HasPrefix(w, "testdata/")
					if strings.HasSuffix(w, ".stratum.yaml") && !isOutput && !shipped {
						t.Errorf("%v: example spec %s is not in the repository (use specs/examples)", path, w)
					}
					if shipped {
						if _, err := os.Stat(filepath.Join(root, w)); err != nil {
							t.Errorf("%v: example path %s: %v", path, w, err)
						}
					}
				}
			case "Available Commands:":
				if f := strings.Fields(line); len(f) > 0 && f[0] != "help" && f[0] != "completion" {
					walk(append(append([]string{}, path...), f[0]))
				}
			}
		}
	}
	walk(nil)
	if seen < 15 {
		t.Fatalf("walked only %d commands", seen)
	}
}

// flagColumn matches a flag line of --help: its name and placeholder.
var flagColumn = regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+)(?: (\S.*?))?\s{2,}`)

// flagTypes are the placeholders cobra derives from a flag's type.
var flagTypes = map[string]bool{"string": true, "int": true, "duration": true, "stringArray": true, "strings": true, "float": true}
