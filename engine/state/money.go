package state

import (
	"encoding/json"
	"math"
)

// usdDecimals is how many decimals amounts of money keep in JSON: a
// millionth of a dollar, finer than any price per token sums to, and no
// float noise (0.30000000000000004) in budget_state or a trace record.
const usdDecimals = 6

// RoundUSD rounds an amount of money to usdDecimals decimals. Amounts are
// summed unrounded in memory and rounded in one place, where their JSON is
// produced: BudgetState's spent_usd and TraceRecord's cost_usd
// (MarshalJSON below). Whatever writes them — the stored state, the
// --json report, query, audit, the MCP tools — thus carries the same
// rounded values (a ledger read back from the store goes on from its
// rounded sum: at most half a millionth of a dollar per write).
func RoundUSD(v float64) float64 {
	const scale = 1e6
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	return math.Round(v*scale) / scale
}

// MarshalJSON writes the ledger with spent_usd rounded (RoundUSD).
func (b BudgetState) MarshalJSON() ([]byte, error) {
	type plain BudgetState
	b.SpentUSD = RoundUSD(b.SpentUSD)
	return json.Marshal(plain(b))
}

// MarshalJSON writes the record with cost_usd rounded (RoundUSD).
func (t TraceRecord) MarshalJSON() ([]byte, error) {
	type plain TraceRecord
	if t.CostUSD != nil {
		c := RoundUSD(*t.CostUSD)
		t.CostUSD = &c
	}
	return json.Marshal(plain(t))
}
