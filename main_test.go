package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store"
)

const idSpec = `version: "0.2"
functions:
  approval:
    mode: gate
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

// seedFlows plans one flow per id in the store of $STRATUM_HOME (a fresh
// temporary one), so ids can share a prefix.
func seedFlows(t *testing.T, ids ...string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("STRATUM_HOME", home)
	st, err := store.Open(filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	svc := &engine.Service{Store: st, NewID: func() string { n++; return ids[n-1] }}
	for range ids {
		if _, err := svc.Plan(context.Background(), idSpec, "main", nil, engine.PlanOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// runCLI runs the command line in-process and returns its exit code, stdout
// and stderr.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestAmbiguousFlowIDPrefix: a prefix several flow ids start with is an
// error listing the candidates on every command that takes a flow id; a
// unique one works (the testscript flow_ids covers unique, short, unknown
// prefixes with real random ids).
func TestAmbiguousFlowIDPrefix(t *testing.T) {
	seedFlows(t, "abcd1111-aaaa", "abcd2222-bbbb", "abce3333-cccc")
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
		code, out, _ := runCLI(tc.args...)
		if code != exitFailure || !strings.Contains(out, tc.want) ||
			!strings.Contains(out, `"abcd1111-aaaa"`) || !strings.Contains(out, `"abcd2222-bbbb"`) || strings.Contains(out, `"abce3333-cccc"`) {
			t.Errorf("%v: exit %d\n%s", tc.args, code, out)
		}
	}
	code, _, errOut := runCLI("run", "--resume", "abcd")
	if code != 2 || !strings.Contains(errOut, "ambiguous") || !strings.Contains(errOut, "abcd1111-aaaa, abcd2222-bbbb") {
		t.Errorf("run --resume: exit %d\n%s", code, errOut)
	}
	code, out, _ := runCLI("query", "flow", "abce")
	if code != 0 || !strings.Contains(out, `"flow_id": "abce3333-cccc"`) {
		t.Errorf("a unique prefix: exit %d\n%s", code, out)
	}
}

// TestGateHumanConfirm: `stratum gate` decides an approver: human gate only
// on a terminal (injected here) after the reviewer typed the step id or
// the flow's short id; without one it is exit 2 and nothing is recorded.
func TestGateHumanConfirm(t *testing.T) {
	const humanSpec = `version: "0.2"
functions:
  approval:
    mode: gate
    approver: human
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
	home := t.TempDir()
	t.Setenv("STRATUM_HOME", home)
	st, err := store.Open(filepath.Join(home, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := &engine.Service{Store: st}
	ctx := context.Background()
	plan := func() string {
		out, err := svc.Plan(ctx, humanSpec, "main", nil, engine.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id := engine.Wire(out, nil)["flow_id"].(string)
		if _, err := svc.StepDone(ctx, id, "build", map[string]any{}, engine.ReportOptions{}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	gate := func(terminal bool, typed string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		root := newRootCommand(&app{stdin: strings.NewReader(typed), stdout: &out, stderr: &errb,
			terminal: func(any) bool { return terminal }})
		root.SetArgs(append([]string{"gate"}, args...))
		err := root.ExecuteContext(ctx)
		var ee *exitError
		switch {
		case err == nil:
			return 0, out.String(), errb.String()
		case errors.As(err, &ee):
			return ee.code, out.String(), errb.String() + ee.Error()
		}
		return -1, out.String(), err.Error()
	}
	status := func(id string) engine.FlowStatus {
		s, err := svc.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s.Status
	}

	id := plan()
	if code, out, msg := gate(false, "review\n", "approve", id, "review"); code != exitUsage || out != "" || !strings.Contains(msg, "use the TUI") {
		t.Errorf("no terminal: exit %d %q %q", code, out, msg)
	}
	if code, _, msg := gate(true, "yes\n", "approve", id, "review"); code != exitUsage || !strings.Contains(msg, "not confirmed") {
		t.Errorf("wrong confirmation: exit %d %q", code, msg)
	}
	if s := status(id); s != engine.StatusAwaitingGate {
		t.Fatalf("refused decisions changed the flow: %s", s)
	}
	code, out, prompt := gate(true, "review\n", "approve", id, "review")
	if code != 0 || !strings.Contains(out, `"result": "complete"`) || !strings.Contains(prompt, "type the gate's step id (review)") {
		t.Errorf("confirmed with the step id: exit %d %s %q", code, out, prompt)
	}
	id = plan()
	if code, out, _ := gate(true, id[:8]+"\n", "reject", id[:6], "review", "--note", "no"); code != 0 || !strings.Contains(out, `"result": "killed"`) {
		t.Errorf("confirmed with the short id: exit %d %s", code, out)
	}
}

// TestHelpTexts: flag descriptions do not leak into the flag column (cobra
// takes a backquoted word in a usage as the value's placeholder), and
// every spec an Example names is one the repository ships.
func TestHelpTexts(t *testing.T) {
	root := newRootCommand(&app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		// The flag column is "-x, --name TYPE": a placeholder that is not
		// the value's type came from a backquoted word of the usage.
		for _, line := range strings.Split(c.Flags().FlagUsages(), "\n") {
			m := flagColumn.FindStringSubmatch(line)
			if m != nil && m[2] != "" && !flagTypes[m[2]] {
				t.Errorf("%s --%s: placeholder %q comes from a backquoted word of the usage: %q", c.CommandPath(), m[1], m[2], strings.TrimSpace(line))
			}
		}
		fields := strings.Fields(c.Example)
		for i, w := range fields {
			w = strings.Trim(w, `"'`)
			isOutput := i > 0 && (fields[i-1] == "--output" || fields[i-1] == "-o" || fields[i-1] == "--record")
			shipped := strings.HasPrefix(w, "specs/") || strings.HasPrefix(w, "testdata/")
			if strings.HasSuffix(w, ".stratum.yaml") && !isOutput && !shipped {
				t.Errorf("%s: example spec %s is not in the repository (use specs/examples)", c.CommandPath(), w)
			}
			if shipped {
				if _, err := os.Stat(w); err != nil {
					t.Errorf("%s: example path %s: %v", c.CommandPath(), w, err)
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// flagColumn matches a flag line of --help: its name and placeholder.
var flagColumn = regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+)(?: (\S.*?))?\s{2,}`)

// flagTypes are the placeholders cobra derives from a flag's type.
var flagTypes = map[string]bool{"string": true, "int": true, "duration": true, "stringArray": true, "strings": true, "float": true}
