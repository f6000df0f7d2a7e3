package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs"
)

func cmdReq(t *testing.T, c *specs.Command, inputs map[string]any) engine.StepRequest {
	return engine.StepRequest{
		FlowID: "flow-1", Step: &specs.Step{ID: "s", Kind: specs.KindInline, Run: c},
		Inputs: inputs, Attempt: 1, Dir: t.TempDir(),
	}
}

func TestCommandExecutor(t *testing.T) {
	tests := []struct {
		name     string
		cmd      *specs.Command
		inputs   map[string]any
		mod      func(*engine.StepRequest)
		max      int
		want     any
		wantKind string
		wantMsg  string
	}{
		{name: "json result", cmd: &specs.Command{Shell: `echo '{"a": 1}'`}, want: map[string]any{"a": 1.0}},
		{name: "argv", cmd: &specs.Command{Argv: []string{"printf", `{"b": [1, 2]}`}}, want: map[string]any{"b": []any{1.0, 2.0}}},
		{name: "stdin is the inputs", cmd: &specs.Command{Shell: `cat`}, inputs: map[string]any{"x": "y", "n": 2.0},
			want: map[string]any{"x": "y", "n": 2.0}},
		{name: "env inputs: strings verbatim, others JSON", cmd: &specs.Command{Shell: `printf '{"s": "%s", "o": %s, "k": "%s"}' "$STRATUM_INPUT_NAME" "$STRATUM_INPUT_OBJ_VAL" "$STRATUM_STEP_ID"`},
			inputs: map[string]any{"name": "ann", "obj-val": map[string]any{"z": true}},
			want:   map[string]any{"s": "ann", "o": map[string]any{"z": true}, "k": "s"}},
		{name: "violations of the previous attempt", cmd: &specs.Command{Shell: `printf '{"v": %s, "a": %s}' "$STRATUM_VIOLATIONS" "$STRATUM_ATTEMPT"`},
			mod:  func(r *engine.StepRequest) { r.Attempt = 2; r.Violations = []string{"ensure 'x' failed"} },
			want: map[string]any{"v": []any{"ensure 'x' failed"}, "a": 2.0}},
		{name: "iteration number", cmd: &specs.Command{Shell: `echo "$STRATUM_ITERATION"`},
			mod: func(r *engine.StepRequest) { r.Iteration = 4 }, want: 4.0},
		{name: "command env", cmd: &specs.Command{Shell: `printf '"%s"' "$GREETING"`, Env: map[string]string{"GREETING": "hi"}}, want: "hi"},
		{name: "log lines before the result", cmd: &specs.Command{Shell: `echo building...; echo '{"ok": true}'`}, want: map[string]any{"ok": true}},
		{name: "non-zero exit carries stderr", cmd: &specs.Command{Shell: `echo oops >&2; exit 3`}, wantKind: engine.AttemptExit, wantMsg: "command exited with status 3; stderr: oops"},
		{name: "bad json", cmd: &specs.Command{Shell: `echo not json`}, wantKind: engine.AttemptBadJSON, wantMsg: "not a JSON result"},
		{name: "empty output", cmd: &specs.Command{Shell: `true`}, wantKind: engine.AttemptBadJSON, wantMsg: "empty output"},
		{name: "two values", cmd: &specs.Command{Shell: `echo '{} {}'`}, wantKind: engine.AttemptBadJSON, wantMsg: "more than one JSON value"},
		{name: "output cap", cmd: &specs.Command{Shell: `head -c 5000 /dev/zero | tr '\0' 'a'`}, max: 1000, wantKind: engine.AttemptTooLarge, wantMsg: "exceeds 1000 bytes"},
		{name: "missing binary", cmd: &specs.Command{Argv: []string{"/nonexistent/stratum-test-binary"}}, wantKind: engine.AttemptExit, wantMsg: "could not run"},
		{name: "relative dir", cmd: &specs.Command{Shell: `printf '"%s"' "$(basename "$PWD")"`, Dir: "sub"},
			mod: func(r *engine.StepRequest) { _ = os.Mkdir(filepath.Join(r.Dir, "sub"), 0o755) }, want: "sub"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := cmdReq(t, tc.cmd, tc.inputs)
			if tc.mod != nil {
				tc.mod(&req)
			}
			ex := &CommandExecutor{MaxOutput: tc.max}
			out, err := ex.Execute(context.Background(), req)
			if tc.wantKind != "" {
				var ae *engine.AttemptError
				if !errors.As(err, &ae) {
					t.Fatalf("err %v, want AttemptError %s", err, tc.wantKind)
				}
				if ae.Kind != tc.wantKind || !strings.Contains(strings.Join(ae.Violations, "\n"), tc.wantMsg) {
					t.Fatalf("got %s %q, want %s containing %q", ae.Kind, ae.Violations, tc.wantKind, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out.Output, tc.want) {
				t.Fatalf("output %#v, want %#v", out.Output, tc.want)
			}
		})
	}
}

func TestCommandTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "survivor")
	// The grandchild would write the marker after 1s unless the group dies.
	req := cmdReq(t, &specs.Command{Shell: `(sleep 1; touch ` + marker + `) & sleep 30`}, nil)
	req.Budget.Deadline = time.Now().Add(200 * time.Millisecond)
	start := time.Now()
	_, err := (&CommandExecutor{}).Execute(context.Background(), req)
	var ae *engine.AttemptError
	if !errors.As(err, &ae) || ae.Kind != engine.AttemptTimeout {
		t.Fatalf("err %v, want timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s", d)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a process of the group survived the timeout")
	}
}

func TestCommandDeadlinePassedIsBudget(t *testing.T) {
	req := cmdReq(t, &specs.Command{Shell: `echo 1`}, nil)
	req.Budget.Deadline = time.Now().Add(-time.Second)
	_, err := (&CommandExecutor{}).Execute(context.Background(), req)
	if !errors.Is(err, engine.ErrBudgetExhausted) {
		t.Fatalf("err %v", err)
	}
}

func TestLastJSONBlock(t *testing.T) {
	tests := []struct {
		in   string
		want any
		ok   bool
	}{
		{"done.\n```json\n{\"a\": 1}\n```\nbye", map[string]any{"a": 1.0}, true},
		{"```json\n{\"a\": 1}\n```\nthen\n```json\n{\"a\": 2}\n```", map[string]any{"a": 2.0}, true},
		{"result: {\"x\": {\"y\": 2}} and later {\"z\": 3}", map[string]any{"z": 3.0}, true},
		{"```go\nfunc(){}\n```\nanswer [1, 2]", []any{1.0, 2.0}, true},
		{"no json here", nil, false},
	}
	for _, tc := range tests {
		got, ok := LastJSONBlock([]byte(tc.in))
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %#v %v, want %#v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
