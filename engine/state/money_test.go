package state

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMoneyRoundedInJSON(t *testing.T) {
	b, err := json.Marshal(BudgetState{SpentUSD: 0.1 + 0.2, SpentTokens: 3})
	if err != nil || !strings.Contains(string(b), `"spent_usd":0.3,`) {
		t.Errorf("budget_state = %s, %v", b, err)
	}
	b, _ = json.Marshal(&BudgetState{SpentUSD: 0.00000049})
	if !strings.Contains(string(b), `"spent_usd":0,`) {
		t.Errorf("pointer budget_state = %s", b)
	}
	c := 0.0123456789
	b, err = json.Marshal(TraceRecord{Function: "f", CostUSD: &c})
	if err != nil || !strings.Contains(string(b), `"cost_usd":0.012346,`) || c != 0.0123456789 {
		t.Errorf("trace record = %s, %v (cost now %v)", b, err, c)
	}
	b, _ = json.Marshal(TraceRecord{Function: "f"})
	if !strings.Contains(string(b), `"cost_usd":null`) {
		t.Errorf("unknown cost = %s", b)
	}
	// The state keeps its ledger rounded the same way wherever it is written.
	b, _ = json.Marshal(FlowState{FlowID: "x", BudgetState: &BudgetState{SpentUSD: 1.0000004}})
	if !strings.Contains(string(b), `"spent_usd":1,`) {
		t.Errorf("state = %s", b)
	}
}
