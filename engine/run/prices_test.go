package run

import (
	"strings"
	"testing"

	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

type fakePricer map[string]bool // model → priced

func (f fakePricer) PriceOf(models ...string) (string, bool) {
	for _, m := range models {
		if m != "" {
			return m, f[m]
		}
	}
	return "p/default", f["p/default"]
}

// The steps a USD budget covers whose model has no price: a budget of the
// step, of its function, of its flow or of a parent flow covers it; an
// unpriced model outside any USD budget, a command, an agent and a gate
// do not count.
func TestUnpricedSteps(t *testing.T) {
	src := `version: "0.2"
contracts:
  R: {ok: {type: boolean}}
functions:
  fn_budget:
    mode: infer
    intent: "x"
    input: {}
    output: R
    model: p/cheap
    budget: {usd: 0.5}
flows:
  main:
    input: {}
    steps:
      - {id: free, intent: "no budget of its own", model: p/unknown}
      - {id: own, intent: "its budget", model: p/unknown, budget: {usd: 1}}
      - {id: viafn, function: fn_budget, inputs: {}}
      - {id: cmd, intent: "a command", run: "echo {}", budget: {usd: 1}}
      - {id: agent, intent: "an agent", agent: claude, budget: {usd: 1}}
  parent:
    input: {}
    budget: {usd: 2}
    steps:
      - {id: child, flow: sub, inputs: {}}
  sub:
    input: {}
    steps:
      - {id: deep, intent: "under its parent's budget"}
  spent:
    input: {}
    budget: {usd: 3}
    steps:
      - {id: priced, intent: "a priced model", model: p/known}
      - {id: unpriced, intent: "the default model, unpriced"}
`
	sp, ds := specs.Parse("t.stratum.yaml", []byte(src), exprlang.Compile)
	if sp == nil || ds.HasErrors() {
		t.Fatal(ds.Error())
	}
	p := fakePricer{"p/known": true, "p/cheap": false}
	got := strings.Join(unpricedSteps(sp, "main", p), "\n")
	want := "step own of flow main: model p/unknown\nstep viafn of flow main: model p/cheap"
	if got != want {
		t.Errorf("main:\n%s\nwant\n%s", got, want)
	}
	if got := unpricedSteps(sp, "parent", p); len(got) != 1 || got[0] != "step deep of flow sub: model p/default" {
		t.Errorf("a child flow under its parent's budget: %q", got)
	}
	if got := unpricedSteps(sp, "spent", p); len(got) != 1 || !strings.Contains(got[0], "step unpriced of flow spent: model p/default") {
		t.Errorf("spent: %q", got)
	}
	p["p/default"], p["p/unknown"], p["p/cheap"] = true, true, true
	if got := unpricedSteps(sp, "main", p); len(got) != 0 {
		t.Errorf("everything priced: %q", got)
	}
}
