package run

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine/internal/infer"
	"github.com/stratum-go/stratum/specs"
)

// A USD budget counts what calls cost. A model with no known price spends
// tokens at an unknown cost (the ledger's cost_unknown), so its calls would
// never be charged against the budget: such a budget would silently not be
// enforced. The runner refuses to start a flow with an infer step under a
// USD budget whose model has no price, before anything runs, and says how
// to add one. (Agent CLIs report no usage, so a USD budget does not bound
// them either; RUN.md says so. Refusing them would make usd unusable in any
// flow with an agent step, where the same budget rightly bounds its infer
// steps.)

// pricer is the infer executor's price check (infer.Executor.PriceOf).
type pricer interface {
	PriceOf(models ...string) (full string, priced bool)
}

// usdBudget reports whether b bounds spending in USD.
func usdBudget(b *specs.Budget) bool { return b != nil && b.USD != nil }

// unpricedSteps are the infer steps of flow (and of the flows it runs as
// children) that a USD budget covers and whose model has no known price:
// "step S of flow F: model M".
func unpricedSteps(sp *specs.Spec, flow string, p pricer) []string {
	var out []string
	type visit struct {
		flow    string
		covered bool
	}
	seen := map[visit]bool{}
	var walk func(name string, covered bool)
	walk = func(name string, covered bool) {
		f := sp.Flows[name]
		covered = covered || (f != nil && usdBudget(f.Budget))
		if f == nil || seen[visit{name, covered}] {
			return
		}
		seen[visit{name, covered}] = true
		for _, st := range f.Steps {
			if st.Kind == specs.KindFlow {
				walk(st.Flow, covered)
				continue
			}
			if st.IsGate() || kindOf(st) != execInfer {
				continue
			}
			fnModel := ""
			var fnBudget *specs.Budget
			if st.Fn != nil {
				fnModel, fnBudget = st.Fn.Model, st.Fn.Budget
			}
			if !covered && !usdBudget(st.Budget) && !usdBudget(fnBudget) {
				continue
			}
			if full, priced := p.PriceOf(st.Model, fnModel); !priced {
				out = append(out, fmt.Sprintf("step %s of flow %s: model %s", st.ID, name, full))
			}
		}
	}
	walk(flow, false)
	sort.Strings(out)
	return slices.Compact(out)
}

// unpricedError is the refusal of a run whose USD budget would not be
// enforced, with how to fix it.
func unpricedError(steps []string) string {
	return "a USD budget covers calls whose cost is unknown, so it would not be enforced (" +
		strings.Join(steps, "; ") + "); " +
		infer.PriceHint + ", or drop usd from the budget (ms and tokens are enforced for every model)"
}

// refuseUnpriced is the outcome of a run refused before it starts because
// a USD budget of flow would not be enforced (nil: none is).
func (r *Runner) refuseUnpriced(sp *specs.Spec, flow string) *Outcome {
	p, ok := r.opts.Infer.(pricer)
	if !ok {
		return nil
	}
	steps := unpricedSteps(sp, flow, p)
	if len(steps) == 0 {
		return nil
	}
	return &Outcome{FlowName: flow, Status: EndInvalid, ExitCode: ExitUsage, Message: unpricedError(steps), Spec: sp}
}
