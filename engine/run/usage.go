package run

import (
	"sync"

	"github.com/stratum-go/stratum/engine/internal/llm"
)

var defaultPrices = sync.OnceValue(llm.DefaultPrices)

// UsageCost prices tokens an agent reports ({input_tokens, output_tokens,
// model} of stratum_step_done's usage) from the price table `stratum run`
// uses: nil when the model has no price (the ledger then notes
// cost_unknown; the original counts such usage as $0).
func UsageCost(model string, input, output int64) *float64 {
	p, ok := defaultPrices().LookupModel(model)
	if !ok {
		return nil
	}
	c := p.Cost(llm.Usage{Input: input, Output: output})
	return &c
}
