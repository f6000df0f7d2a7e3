package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/internal/jsonlimit"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

func TestCommandLineCheck(t *testing.T) {
	dir := t.TempDir()
	inputs := filepath.Join(dir, "in.json")
	if err := os.WriteFile(inputs, []byte(`{"a": 1, "b": "file"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	set := func(flags ...string) func(string) bool {
		return func(f string) bool {
			for _, s := range flags {
				if s == f {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name     string
		line     CommandLine
		terminal bool
		want     Request
		err      string
	}{
		{name: "spec, defaults off a terminal", line: CommandLine{Args: []string{"s.stratum.yaml"}, Cache: CacheSession},
			want: Request{File: "s.stratum.yaml", Inputs: map[string]any{}, OnGate: review.OnGateExit, Cache: CacheSession}},
		{name: "prompt on a terminal", line: CommandLine{Args: []string{"s"}, Cache: CacheNone}, terminal: true,
			want: Request{File: "s", Inputs: map[string]any{}, OnGate: review.OnGatePrompt, Cache: CacheNone}},
		{name: "inputs: flags win over the file", line: CommandLine{Args: []string{"s"}, Flow: "main", InputsFile: inputs,
			Inputs: []string{"b=[1]", "c=text"}, OnGate: review.OnGateWait, Cache: CacheGlobal},
			want: Request{File: "s", Flow: "main", Inputs: map[string]any{"a": 1.0, "b": []any{1.0}, "c": "text"},
				TextInputs: map[string]string{"b": "[1]", "c": "text"}, OnGate: review.OnGateWait, Cache: CacheGlobal}},
		{name: "approvals split on commas", line: CommandLine{Args: []string{"s"}, Approve: []string{"a, b", "", "all,"}, Cache: CacheSession},
			want: Request{File: "s", Inputs: map[string]any{}, Approve: []string{"a", "b", "all"}, OnGate: review.OnGateExit, Cache: CacheSession}},
		{name: "resume", line: CommandLine{Resume: "f1", Cache: CacheSession, Set: set("cache")},
			want: Request{Resume: "f1", OnGate: review.OnGateExit, Cache: CacheSession}},
		{name: "no spec", line: CommandLine{Cache: CacheSession}, err: "run needs a SPEC (or --resume ID)"},
		{name: "resume and spec", line: CommandLine{Args: []string{"s"}, Resume: "f1", Cache: CacheSession},
			err: "--resume continues a stored flow with its stored spec; do not pass SPEC"},
		{name: "resume with inputs", line: CommandLine{Resume: "f1", Cache: CacheSession, Set: set("inputs")},
			err: "--resume continues a stored flow with its stored inputs; --inputs does not apply"},
		{name: "bad on-gate", line: CommandLine{Args: []string{"s"}, OnGate: "maybe", Cache: CacheSession},
			err: `--on-gate "maybe": want exit, wait, approve, kill or prompt`},
		{name: "bad cache", line: CommandLine{Args: []string{"s"}, Cache: "forever"},
			err: `--cache "forever": want none, session or global`},
		{name: "bad input", line: CommandLine{Args: []string{"s"}, Inputs: []string{"novalue"}, Cache: CacheSession},
			err: `input "novalue": want NAME=VALUE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.line.Check(tc.terminal)
			if tc.err != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || err.Error() != tc.err {
					t.Fatalf("Check = %+v, %v; want usage error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Check = %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

func TestParseResult(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.json")
	if err := os.WriteFile(file, []byte(`{"ok": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("[", jsonlimit.MaxDepth+1) + strings.Repeat("]", jsonlimit.MaxDepth+1)
	for _, tc := range []struct {
		name, result, file, stdin string
		want                      any
		err                       string
	}{
		{name: "flag", result: `{"n": 2}`, want: map[string]any{"n": 2.0}},
		{name: "file", file: file, want: map[string]any{"ok": true}},
		{name: "stdin", file: "-", stdin: `[1]`, want: []any{1.0}},
		{name: "both", result: "1", file: file, err: "give --result or --result-file, not both"},
		{name: "neither", err: "step-done needs --result JSON or --result-file FILE"},
		{name: "missing file", file: filepath.Join(dir, "nope.json"), err: "no such file"},
		{name: "not JSON", result: "{", err: "the result is not valid JSON: "},
		{name: "too deep", result: deep, err: "the result is refused: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseResult(tc.result, tc.file, strings.NewReader(tc.stdin))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseResult = %v, %v; want error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseResult = %#v, %v; want %#v", got, err, tc.want)
			}
		})
	}
}

func TestPlanFlow(t *testing.T) {
	one := "version: \"0.2\"\ncontracts:\n  Out:\n    ok: {type: boolean}\nflows:\n  only:\n    input: {}\n    output: Out\n    steps:\n      - id: s\n        intent: x\n        output_contract: Out\n        run: \"echo '{}'\"\n"
	two := strings.Replace(one, "flows:\n", "flows:\n  other:\n    input: {}\n    output: Out\n    steps:\n      - id: t\n        intent: y\n        output_contract: Out\n        run: \"echo '{}'\"\n", 1)
	for _, src := range []string{one, two} {
		if _, ds := specs.Parse("x.stratum.yaml", []byte(src), exprlang.Compile); ds.HasErrors() {
			t.Fatalf("fixture: %s", ds.Error())
		}
	}
	for _, tc := range []struct {
		name, src, flow, want, err string
	}{
		{name: "named", src: two, flow: "other", want: "other"},
		{name: "the only flow", src: one, want: "only"},
		{name: "two flows", src: two, err: "choose one with --flow"},
		{name: "invalid spec is left to plan", src: "version: [", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanFlow("x.stratum.yaml", []byte(tc.src), tc.flow)
			if tc.err != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("PlanFlow = %q, %v; want usage error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("PlanFlow = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestConclude(t *testing.T) {
	e := newEnv(t)
	invalid := &Outcome{Status: EndInvalid, ExitCode: ExitUsage, Message: "bad inputs",
		FinalErr: &engine.Error{Type: engine.ErrTypeInvalidInput, Message: "bad inputs"}}
	var stderr bytes.Buffer
	junit := filepath.Join(t.TempDir(), "report.xml")
	rep, err := Conclude(context.Background(), e.svc, invalid, &stderr, junit, true)
	if err != nil {
		t.Fatal(err)
	}
	if stderr.String() != "stratum: bad inputs\n" {
		t.Errorf("stderr = %q", stderr.String())
	}
	if _, err := os.Stat(junit); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run that never started wrote a JUnit report (%v)", err)
	}
	report, _ := rep.(engine.Response)
	final, _ := report["final"].(engine.Response)
	if run, _ := report["run"].(*RunBlock); final["error_type"] != "invalid_input" || run == nil || run.ExitCode != ExitUsage || run.Output != nil {
		t.Errorf("report = %v", rep)
	}

	// Without --json: the completed flow's output is what stdout gets.
	output := map[string]any{"greeting": "hello"}
	done := &Outcome{Status: EndComplete, FlowName: "f", Steps: []*StepReport{{StepID: "s", Status: "passed"}},
		Final: &engine.Completion{Status: state.StatusComplete, Output: output}}
	stderr.Reset()
	rep, err = Conclude(context.Background(), e.svc, done, &stderr, junit, false)
	if err != nil || !reflect.DeepEqual(rep, output) || stderr.Len() != 0 {
		t.Fatalf("Conclude = %v, %v; stderr %q", rep, err, stderr.String())
	}
	// A run that did not complete prints nothing on stdout.
	if rep, err := Conclude(context.Background(), e.svc, &Outcome{Status: EndGate, ExitCode: ExitGate}, &stderr, "", false); err != nil || rep != nil {
		t.Errorf("a run stopped at a gate: %v, %v", rep, err)
	}
	if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), `name="s"`) {
		t.Errorf("junit = %s, %v", b, err)
	}
	if _, err := Conclude(context.Background(), e.svc, done, &stderr, filepath.Join(t.TempDir(), "no", "dir.xml"), false); err == nil {
		t.Error("an unwritable JUnit file is not an error")
	}
}

func TestExecute(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
contracts:
  Out:
    ok: {type: boolean}
flows:
  main:
    input: {}
    output: Out
    steps:
      - id: s
        intent: x
        output_contract: Out
        run: "echo '{\"ok\": true}'"
`)
	var stderr bytes.Buffer
	s := Setup{Stdin: strings.NewReader(""), Stderr: &stderr}
	out, err := Execute(context.Background(), e.svc, Request{File: sp.File, Inputs: map[string]any{}, OnGate: review.OnGateExit, Cache: CacheSession}, s)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, out, EndComplete, ExitComplete)
	if !strings.Contains(stderr.String(), "s") {
		t.Errorf("no progress on stderr: %q", stderr.String())
	}
	resumed, err := Execute(context.Background(), e.svc, Request{Resume: out.FlowID, OnGate: review.OnGateExit, Cache: CacheSession}, s)
	if err != nil || resumed.FlowID != out.FlowID {
		t.Fatalf("resume: %+v, %v", resumed, err)
	}
	// --resume takes a unique prefix of the id; an ambiguous one is exit 2
	// with the candidates; an unknown one the "no flow" answer.
	resumed, err = Execute(context.Background(), e.svc, Request{Resume: out.FlowID[:8], OnGate: review.OnGateExit, Cache: CacheSession}, s)
	if err != nil || resumed.FlowID != out.FlowID || resumed.Status != EndComplete {
		t.Fatalf("resume by prefix: %+v, %v", resumed, err)
	}
	n := 0
	e.svc.NewID = func() string { n++; return fmt.Sprintf("abcd%d", n) }
	for range 2 {
		if _, err := Execute(context.Background(), e.svc, Request{File: sp.File, Inputs: map[string]any{}, OnGate: review.OnGateExit, Cache: CacheSession}, s); err != nil {
			t.Fatal(err)
		}
	}
	amb, err := Execute(context.Background(), e.svc, Request{Resume: "abcd", OnGate: review.OnGateExit, Cache: CacheSession}, s)
	if err != nil || amb.ExitCode != ExitUsage || !strings.Contains(amb.Message, "abcd1, abcd2") {
		t.Fatalf("ambiguous prefix: %+v, %v", amb, err)
	}
	for _, id := range []string{"abc", "zzzz"} {
		unknown, err := Execute(context.Background(), e.svc, Request{Resume: id, OnGate: review.OnGateExit, Cache: CacheSession}, s)
		if err != nil || unknown.ExitCode != ExitUsage || !strings.Contains(unknown.Message, "no flow with id") {
			t.Fatalf("unknown %q: %+v, %v", id, unknown, err)
		}
	}
	s.Replay = filepath.Join(t.TempDir(), "missing.jsonl")
	var ue *UsageError
	if _, err := Execute(context.Background(), e.svc, Request{File: sp.File, OnGate: review.OnGateExit, Cache: CacheSession}, s); !errors.As(err, &ue) {
		t.Errorf("a missing --replay file: %v, want a usage error", err)
	}
}

// TestReportOutput: the --json report's run block carries the flow's output
// when the run completed (null otherwise) and the end of every iterating
// step's loop, with an accumulate loop's items.
func TestReportOutput(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
functions:
  approval:
    mode: gate
flows:
  main:
    input: {}
    steps:
      - id: collect
        intent: "collect words"
        run: |
          case "$STRATUM_ITERATION" in
            1) echo '{"words": [{"id": "a"}, {"id": "b"}]}' ;;
            *) echo '{"words": [{"id": "b"}]}' ;;
          esac
        max_iterations: 5
        accumulate: "result.words"
        accumulate_key: "item.id"
        exit_criterion: "dry_streak >= 2"
      - id: tries
        intent: "three tries"
        depends_on: [collect]
        run: |
          echo "{\"n\": $STRATUM_ITERATION}"
        max_iterations: 3
      - id: sum
        intent: "sum up"
        depends_on: [tries]
        run: "echo '{\"total\": 2}'"
      - id: last
        intent: "no output"
        depends_on: [sum]
        run: "echo null"
  gated:
    input: {}
    steps:
      - id: work
        intent: "work"
        run: "echo '{\"ok\": true}'"
      - id: review
        function: approval
        depends_on: [work]
        on_approve: ~
        on_revise: work
        on_kill: ~
`)
	report := func(o *Outcome) *RunBlock {
		t.Helper()
		rep, err := Report(context.Background(), e.svc, o)
		if err != nil {
			t.Fatal(err)
		}
		// The block as a script reads it: through JSON.
		b, err := json.Marshal(rep["run"])
		if err != nil {
			t.Fatal(err)
		}
		var run RunBlock
		if err := json.Unmarshal(b, &run); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"output":`) || !strings.Contains(string(b), `"iterations":{`) {
			t.Errorf("run block lacks output or iterations: %s", b)
		}
		return &run
	}

	o := e.start(sp, "main", nil)
	wantStatus(t, o, EndComplete, 0)
	run := report(o)
	// "last" printed null: the output is the last step's with one.
	if got := canonJSON(t, run.Output); got != `{"total":2}` {
		t.Errorf("output = %s", got)
	}
	collect, tries := run.Iterations["collect"], run.Iterations["tries"]
	if len(run.Iterations) != 2 || collect.Outcome != "exit_success" || collect.Iterations != 3 ||
		canonJSON(t, collect.Accumulated) != `[{"id":"a"},{"id":"b"}]` ||
		canonJSON(t, collect.Result) != `{"accumulated":[{"id":"a"},{"id":"b"}],"accumulated_count":2,"words":[{"id":"b"}]}` {
		t.Errorf("collect = %+v", collect)
	}
	if tries.Outcome != "exit_max" || tries.Iterations != 3 || canonJSON(t, tries.Result) != `{"n":3}` || tries.Accumulated != nil {
		t.Errorf("tries = %+v", tries)
	}

	// Stopped at a gate: no output.
	o = e.start(sp, "gated", nil, func(opt *Options) { opt.Gates = review.Policy{OnGate: review.OnGateExit} })
	wantStatus(t, o, EndGate, ExitGate)
	if run := report(o); run.Output != nil || len(run.Iterations) != 0 {
		t.Errorf("a run stopped at a gate: output %v, iterations %v", run.Output, run.Iterations)
	}
	// Killed at the gate: no output either.
	o = e.start(sp, "gated", nil, func(opt *Options) { opt.Gates = review.Policy{OnGate: review.OnGateKill} })
	wantStatus(t, o, EndKilled, ExitKilled)
	if run := report(o); run.Output != nil {
		t.Errorf("a killed run: output %v", run.Output)
	}
}

func canonJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A resume refused because another runner holds the lease says so on
// stderr: who holds it (pid, host, lease) and until when.
func TestConcludeLeaseHeld(t *testing.T) {
	e := newEnv(t)
	o := e.start(e.spec(gateSpec("approver: human")), "main", nil, func(o *Options) { o.Gates.Approve = []string{"all"} })
	wantStatus(t, o, EndGate, 4)
	host, _ := os.Hostname()
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	other := state.Lease{ID: "other-runner", PID: os.Getpid(), Host: host, Heartbeat: time.Now(), ExpiresAt: until}
	if err := e.svc.Leases().Claim(context.Background(), o.FlowID, other); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	out, err := Execute(context.Background(), e.svc, Request{Resume: o.FlowID, OnGate: review.OnGateExit, Cache: CacheSession},
		Setup{Stdin: strings.NewReader(""), Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != ExitFailed {
		t.Fatalf("exit %d, want %d", out.ExitCode, ExitFailed)
	}
	stderr.Reset()
	if _, err := Conclude(context.Background(), e.svc, out, &stderr, "", false); err != nil {
		t.Fatal(err)
	}
	msg := stderr.String()
	for _, want := range []string{o.FlowID, "pid " + strconv.Itoa(os.Getpid()), host, "other-runner", until.Format(time.RFC3339)} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr %q does not say %q", msg, want)
		}
	}
}

// TestErrorStatus: the exit of the error `stratum run` or `stratum tui`
// ended with — an invalid spec's diagnostics printed (exit 2, nothing more
// said), a usage problem 2 with its message, anything else 1 with it, nil
// 0.
func TestErrorStatus(t *testing.T) {
	spec := &SpecError{File: "x.stratum.yaml", Diagnostics: specs.Diagnostics{{File: "x.stratum.yaml", Line: 2, Column: 3,
		Severity: specs.SeverityError, Code: "unknown-field", Message: "unknown field"}}}
	for _, tt := range []struct {
		err        error
		status     int
		msg        string // "" = no message
		diagnostic bool   // the spec's diagnostics on stderr
	}{
		{nil, ExitComplete, "", false},
		{spec, ExitUsage, "", true},
		{fmt.Errorf("starting: %w", usage("--on-gate %q: want exit", "x")), ExitUsage, `--on-gate "x": want exit`, false},
		{errors.New("store is down"), ExitFailed, "store is down", false},
	} {
		var stderr bytes.Buffer
		status, err := ErrorStatus(tt.err, &stderr, false)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if status != tt.status || msg != tt.msg {
			t.Errorf("ErrorStatus(%v) = %d, %q; want %d, %q", tt.err, status, msg, tt.status, tt.msg)
		}
		if got := strings.Contains(stderr.String(), "x.stratum.yaml:2:3"); got != tt.diagnostic {
			t.Errorf("ErrorStatus(%v) printed %q", tt.err, stderr.String())
		}
	}
}
