package engine

import (
	"fmt"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// Usage is what an agent reports it spent on a step attempt
// (stratum_step_done's usage): tokens and their cost in USD (nil: unknown,
// which the ledger notes as cost_unknown when tokens were spent).
type Usage struct {
	Tokens int64
	USD    *float64
}

// chargeUsage charges an agent's reported usage to the flow's ledger (the
// one ledger `stratum run` charges too) after its report was accepted as a
// report (not refused unchanged: a failed attempt and retries_exhausted
// are charged too): tokens, cost, and one agent dispatch when the step
// names an agent. When that spends one of the flow's budget axes, and the
// flow is still running, the flow ends budget_exhausted in the same
// transition, and that is the answer.
func chargeUsage(st *state.FlowState, env transitionEnv, stepID string, u *Usage, res transitionResult) (transitionResult, error) {
	if u == nil || (res.Err != nil && res.Unchanged) {
		return res, nil
	}
	agent := false
	if env.Flow != nil {
		if s := env.Flow.Step(stepID); s != nil {
			agent = s.Agent != ""
		}
	}
	rec, err := recordCall(st, env, CallRecord{StepID: stepID, Tokens: u.Tokens, CostUSD: u.USD, Agent: agent, Executor: "agent_reported"})
	if err != nil {
		return transitionResult{}, err
	}
	res.Events = append(res.Events, rec.Events...)
	res.Unchanged = false
	if env.Flow == nil || isFinished(st) || pastEnd(st, env) {
		return res, nil
	}
	reason := budgetSpent(env.Flow, st.BudgetState)
	if reason == "" {
		return res, nil
	}
	ex, err := exhaustBudget(st, env, reason)
	if err != nil {
		return transitionResult{}, err
	}
	return mergeResults(res, ex), nil
}

// budgetSpent is the flow budget axis its ledger has reached ("" when
// none): the original's rule for a budget charged after the fact —
// consumed ≥ cap on tokens, usd, agent dispatches or ms.
func budgetSpent(f *specs.Flow, led *state.BudgetState) string {
	b := f.Budget
	if b == nil || led == nil {
		return ""
	}
	switch {
	case b.Tokens > 0 && led.SpentTokens >= b.Tokens:
		return fmt.Sprintf("the token budget of flow '%s' is spent (%d of %d tokens)", f.Name, led.SpentTokens, b.Tokens)
	case b.USD != nil && led.SpentUSD >= *b.USD:
		return fmt.Sprintf("the cost budget (usd) of flow '%s' is spent ($%.4f of $%g)", f.Name, led.SpentUSD, *b.USD)
	case b.MaxAgentDispatches > 0 && led.AgentDispatch >= b.MaxAgentDispatches:
		return fmt.Sprintf("flow '%s' used its %d agent dispatches", f.Name, b.MaxAgentDispatches)
	case b.MS > 0 && led.SpentMS >= b.MS:
		return fmt.Sprintf("the time budget (ms) of flow '%s' is spent", f.Name)
	}
	return ""
}
