package run

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
)

// TestCommandLineMain: `stratum run`'s body. A command line that does not
// check is a *UsageError before the store is opened, with --json the
// ErrorReport object (run.status invalid, exit 2); a store that does not
// open is reported the same way; a completed run gives the flow's output
// (the --json report with asJSON) and exit 0.
func TestCommandLineMain(t *testing.T) {
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
	opened := 0
	open := func(context.Context) (*engine.Service, error) { opened++; return e.svc, nil }
	s := Setup{Stdin: strings.NewReader(""), Stderr: &bytes.Buffer{}}
	ctx := context.Background()

	rep, code, err := CommandLine{}.Main(ctx, open, s, "", true)
	var ue *UsageError
	if !errors.As(err, &ue) || opened != 0 {
		t.Fatalf("no SPEC: %v (opened %d times)", err, opened)
	}
	if r, ok := rep.(engine.Response); !ok || r["run"].(*RunBlock).Status != EndInvalid || r["run"].(*RunBlock).ExitCode != ExitUsage || code != 0 {
		t.Fatalf("no SPEC, --json: %#v, exit %d", rep, code)
	}
	if rep, _, _ := (CommandLine{}).Main(ctx, open, s, "", false); rep != nil {
		t.Fatalf("no SPEC without --json prints %#v", rep)
	}

	down := errors.New("store down")
	rep, _, err = CommandLine{Args: []string{sp.File}, OnGate: "exit", Cache: CacheSession}.Main(ctx, func(context.Context) (*engine.Service, error) { return nil, down }, s, "", true)
	if !errors.Is(err, down) || rep.(engine.Response)["run"].(*RunBlock).Status != EndError {
		t.Fatalf("store down: %#v, %v", rep, err)
	}

	rep, code, err = CommandLine{Args: []string{sp.File}, OnGate: "exit", Cache: CacheSession}.Main(ctx, open, s, "", false)
	if err != nil || code != ExitComplete || opened != 1 {
		t.Fatalf("run: %#v, exit %d, %v", rep, code, err)
	}
	if out, ok := rep.(map[string]any); !ok || out["ok"] != true {
		t.Errorf("the completed flow's output: %#v", rep)
	}
}

// TestPlanArgs: `stratum plan`'s spec and inputs — the only flow is
// planned when none is named, an input the flow declares a string keeps
// its text (--input version=7 is "7", not 7), and a missing file is an
// error.
func TestPlanArgs(t *testing.T) {
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
flows:
  main:
    input:
      version: {type: string}
    steps:
      - id: s
        intent: x
        run: "echo '{}'"
`)
	src, flow, inputs, err := PlanArgs(sp.File, "", []string{"version=7", "n=7"}, "")
	if err != nil || flow != "main" || len(src) == 0 {
		t.Fatalf("PlanArgs: %q, %v", flow, err)
	}
	if inputs["version"] != "7" || inputs["n"] != float64(7) {
		t.Errorf("inputs %#v: version is declared a string, n is not declared", inputs)
	}
	if _, _, _, err := PlanArgs(sp.File+".missing", "", nil, ""); err == nil {
		t.Error("a missing spec file: no error")
	}
}
