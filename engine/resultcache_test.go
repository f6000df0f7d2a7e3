package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

const cachedSvcSpec = `version: "0.2"
contracts:
  Out:
    n: {type: integer}
functions:
  compute:
    mode: compute
    intent: "compute n from x"
    input: {x: {type: string}}
    output: Out
    cache: true
    ensure: ["result.n == 5"]
flows:
  main:
    input: {x: {type: string}}
    budget: {max_tokens: 1000}
    steps:
      - {id: a, function: compute, inputs: {x: "$.input.x"}}
      - {id: b, intent: "after", inputs: {n: "$.steps.a.output.n"}}
`

// answer plans the flow and answers its step a with {n: 5} (an agent's
// report), so the cache holds a's result for input x.
func fillCache(t *testing.T, svc *engine.Service, x string) {
	t.Helper()
	ctx := context.Background()
	out, err := svc.Plan(ctx, cachedSvcSpec, "main", map[string]any{"x": x}, engine.PlanOptions{})
	d, ok := out.(*engine.StepDispatch)
	if err != nil || !ok || d.StepID != "a" {
		t.Fatalf("plan: %v %v", engine.Wire(out, err), err)
	}
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: d.FlowID, StepID: "a", Result: map[string]any{"n": 5}}); err != nil {
		t.Fatal(err)
	}
}

// TestResultCacheOfAgentFlows: a cacheable step of an agent-driven flow is
// answered from the result cache when its key (engine.CacheKey) holds a
// value that still passes its checks; anything else dispatches it.
func TestResultCacheOfAgentFlows(t *testing.T) {
	for _, tc := range []struct {
		name   string
		x      string // the second plan's input (the cache holds x = "1")
		poison string // written over the entry of x = "1" before the second plan
		opts   engine.PlanOptions
		off    bool          // NoResultCache
		later  time.Duration // the clock's move before the second plan
		hit    bool
	}{
		{name: "entry 30 days old hits", x: "1", later: engine.DefaultCacheMaxAge, hit: true},
		{name: "entry older than 30 days misses", x: "1", later: engine.DefaultCacheMaxAge + time.Second},
		{name: "entry written without a time hits", x: "1", poison: `{"n": 5}`, later: 1000 * engine.DefaultCacheMaxAge, hit: true},
		{name: "same input hits", x: "1", hit: true},
		{name: "changed input misses", x: "2"},
		{name: "entry failing the ensure misses", x: "1", poison: `{"n": 4}`},
		{name: "entry that is not JSON misses", x: "1", poison: `{"n":`},
		{name: "runner-driven flow is not answered", x: "1", opts: engine.PlanOptions{Driver: state.DriverRunner}},
		{name: "cache turned off", x: "1", off: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, st, clk := newService()
			svc.NoResultCache = tc.off
			ctx := context.Background()
			fillCache(t, svc, "1")
			sp, ds := specs.Parse("s.stratum.yaml", []byte(cachedSvcSpec), exprlang.Compile)
			if ds.HasErrors() {
				t.Fatal(ds.Error())
			}
			key := engine.CacheKey(sp, sp.Flows["main"].Step("a"), map[string]any{"x": "1"})
			var stored []byte
			_ = st.View(ctx, func(tx engine.Tx) error { stored, _, _ = tx.CacheGet(key); return nil })
			if tc.off != (stored == nil) {
				t.Fatalf("cache entry %q with the cache off: %v", stored, tc.off)
			}
			if tc.poison != "" {
				if err := st.Update(ctx, func(tx engine.Tx) error { return tx.CachePut(key, []byte(tc.poison)) }); err != nil {
					t.Fatal(err)
				}
			}
			clk.Add(tc.later)
			out, err := svc.Plan(ctx, cachedSvcSpec, "main", map[string]any{"x": tc.x}, tc.opts)
			d, ok := out.(*engine.StepDispatch)
			if err != nil || !ok {
				t.Fatalf("plan: %v %v", engine.Wire(out, err), err)
			}
			want := "a"
			if tc.hit {
				want = "b"
			}
			if d.StepID != want {
				t.Fatalf("dispatched %s, want %s", d.StepID, want)
			}
			a, err := svc.Audit(ctx, d.FlowID)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.hit {
				if a.CacheHits != 0 || len(a.Trace) != 0 {
					t.Fatalf("a miss recorded %d hits, trace %+v", a.CacheHits, a.Trace)
				}
				return
			}
			if a.CacheHits != 1 || len(a.Trace) != 1 {
				t.Fatalf("cache_hits %d, trace %+v", a.CacheHits, a.Trace)
			}
			rec, _ := json.Marshal(a.Trace[0])
			var m map[string]any
			_ = json.Unmarshal(rec, &m)
			if m["cache_hit"] != true || m["cache_key"] != key || m["attempts"] != 0.0 || m["step_id"] != "a" || m["function_name"] != "compute" {
				t.Fatalf("record %s, want a cache hit under %s", rec, key)
			}
			if got, _ := json.Marshal(d.Inputs); string(got) != `{"n":5}` {
				t.Fatalf("b's inputs %s: the cached output is a's output", got)
			}
		})
	}
}

// TestAuditBudgetState: the audit's budget_state is the original's
// {caps, consumed} over the flow's ledger; null without a budget axis.
func TestAuditBudgetState(t *testing.T) {
	svc, _, _ := newService()
	ctx := context.Background()
	out, err := svc.Plan(ctx, cachedSvcSpec, "main", map[string]any{"x": "1"}, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := out.(*engine.StepDispatch).FlowID
	usd := 0.25
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{"n": 5},
		Usage: &engine.Usage{Tokens: 300, USD: &usd}}); err != nil {
		t.Fatal(err)
	}
	a, err := svc.Audit(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := engine.WireJSON(a, nil)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	got, _ := json.Marshal(m["budget_state"])
	if want := `{"caps":{"max_agent_dispatches":null,"max_tokens":1000,"ms":null,"usd":null},"consumed":{"dispatches":0,"dollars":0.25,"tokens":300,"wall_s":0}}`; string(got) != want {
		t.Fatalf("budget_state %s\nwant %s", got, want)
	}
	if m["cache_hits"] != 0.0 {
		t.Fatalf("cache_hits %v", m["cache_hits"])
	}
	out, err = svc.Plan(ctx, `version: "0.2"
flows:
  main:
    input: {}
    steps:
      - {id: a, intent: "a"}
`, "main", nil, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, err = svc.Audit(ctx, out.(*engine.StepDispatch).FlowID)
	if err != nil || a.BudgetState != nil {
		t.Fatalf("budget_state %+v without a budget (%v)", a.BudgetState, err)
	}
}
