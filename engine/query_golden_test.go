package engine_test

// Goldens of the `stratum query` JSON (flows, flow ID, gates, an unknown
// flow): the original's shapes, with ours beside them. Flows in every status
// are driven through a Service on a fixed clock and ids, and rendered as the
// CLI prints them (indented, HTML left unescaped). Regenerate with
//
//	go test ./engine -run TestQueryGoldens -update
//
// and review every changed line: a golden is a claim about a documented
// output that scripts parse.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/clijson"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func updateGoldens() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const queryGoldenDir = "../testdata/query"

const querySpec = `version: "0.2"
functions:
  approval:
    mode: gate
    timeout: 600
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
  solo:
    input: {}
    steps:
      - id: only
        intent: "the only step"
`

// cliJSON renders v as the CLI's writeJSON does.
func cliJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(queryGoldenDir, name)
	if updateGoldens() {
		if err := os.MkdirAll(queryGoldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden (run with -update and review it): %v\ngot:\n%s", err, got)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs\n--- want\n%s--- got\n%s", name, want, got)
	}
}

func TestQueryGoldens(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newService()
	plan := func(flow string) string {
		t.Helper()
		clk.Add(time.Minute)
		r := must(t)(s.Plan(ctx, querySpec, flow, nil, engine.PlanOptions{SpecFile: "q.stratum.yaml"}))
		return r["flow_id"].(string)
	}
	done := func(id, step string, result any) {
		t.Helper()
		clk.Add(time.Second)
		must(t)(s.StepDone(ctx, engine.StepReport{FlowID: id, StepID: step, Result: result}))
	}
	// f1 waits at its gate; f2 completed; f3 was killed at its gate; f4 runs.
	waiting := plan("main")
	done(waiting, "build", map[string]any{"artifact": "app.tar"})
	complete := plan("solo")
	done(complete, "only", map[string]any{"answer": 42})
	killed := plan("main")
	done(killed, "build", map[string]any{"artifact": "bad.tar"})
	clk.Add(time.Second)
	must(t)(s.GateResolve(ctx, killed, review.Decision{StepID: "review", Outcome: review.Kill, Rationale: "no",
		Reviewer: "ana", ResolvedBy: review.Human, Channel: review.ChannelCLI}))
	running := plan("main")
	// f5 was started by a runner that exited (its lease released): stalled,
	// its status still the original's.
	stalled := plan("main")
	clk.Add(time.Second)
	if err := s.Leases().Claim(ctx, stalled, state.Lease{ID: "run-1", PID: 4242, Host: "ci", ExpiresAt: clk.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Leases().Release(ctx, stalled, "run-1"); err != nil {
		t.Fatal(err)
	}

	list, err := s.Query().List(ctx, engine.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 5 {
		t.Fatalf("%d flows, want 5", len(list))
	}
	checkGolden(t, "flows.json", cliJSON(t, clijson.Flows(list, clk.Now())))
	checkGolden(t, "flows-none.json", cliJSON(t, clijson.Flows(nil, clk.Now())))
	// What the CLI runs: the same bytes, streamed.
	for name, l := range map[string][]state.FlowSummary{"flows.json": list, "flows-none.json": nil} {
		var b bytes.Buffer
		if err := clijson.WriteFlows(&b, l, clk.Now()); err != nil {
			t.Fatal(err)
		}
		if !updateGoldens() {
			checkGolden(t, name, b.Bytes())
		}
	}

	for name, id := range map[string]string{"flow-awaiting_gate.json": waiting, "flow-complete.json": complete,
		"flow-killed.json": killed, "flow-running.json": running, "flow-stalled.json": stalled} {
		f, err := s.Query().FlowWithSpec(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, name, cliJSON(t, clijson.Flow(f, clk.Now())))
	}
	checkGolden(t, "flow-not-found.json", cliJSON(t, clijson.FlowNotFound("no-such-flow")))

	gates, err := s.Query().PendingGateSteps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "gates.json", cliJSON(t, clijson.Gates(gates)))
	checkGolden(t, "gates-none.json", cliJSON(t, clijson.Gates(nil)))
}
