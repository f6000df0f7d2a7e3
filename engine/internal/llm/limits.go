package llm

import "strings"

// DefaultOutputTokens is the output limit assumed for a model the table
// below does not know: conservative, since a provider answers HTTP 400 to a
// max_tokens above a model's limit.
const DefaultOutputTokens = 4096

// outputLimits are the most output tokens a model accepts per request (the
// providers' published limits), by model-name prefix; the longest matching
// prefix wins. Beside the price table, and kept as small: models that are
// not here get DefaultOutputTokens.
var outputLimits = map[string]int{
	"gpt-3.5-turbo": 4_096,
	"gpt-4":         8_192,
	"gpt-4-turbo":   4_096,
	"gpt-4o":        16_384,
	"gpt-4o-mini":   16_384,
	"gpt-4.1":       32_768,
	"gpt-5":         128_000,
	"o1":            100_000,
	"o1-mini":       65_536,
	"o3":            100_000,
	"o4-mini":       100_000,

	"claude-3-haiku":    4_096,
	"claude-3-opus":     4_096,
	"claude-3-sonnet":   4_096,
	"claude-3-5-haiku":  8_192,
	"claude-3-5-sonnet": 8_192,
	"claude-3-7-sonnet": 64_000,
	"claude-haiku-4":    64_000,
	"claude-sonnet-4":   64_000,
	"claude-opus-4":     32_000,
	"claude-opus-4-5":   64_000,
	"claude-opus-4.5":   64_000,
}

// MaxOutputTokens is the output limit of model, a provider-local name
// ("gpt-4o-mini-2024-07-18"; a vendor prefix as OpenRouter writes it,
// "anthropic/claude-sonnet-4.5", is ignored).
func MaxOutputTokens(model string) int {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	best, limit := -1, DefaultOutputTokens
	for prefix, n := range outputLimits {
		if len(prefix) > best && strings.HasPrefix(model, prefix) {
			best, limit = len(prefix), n
		}
	}
	return limit
}

// RequestMaxTokens is the output cap a request sends for model when the
// caller asks for requested tokens (0: no cap asked): the lower of the two
// and the model's limit; without a request, the model's limit where the
// API requires a value (required: Anthropic), else 0 (the field is left out
// and the provider applies its default).
func RequestMaxTokens(model string, requested int, required bool) int {
	limit := MaxOutputTokens(model)
	switch {
	case requested > 0:
		return min(requested, limit)
	case required:
		return limit
	}
	return 0
}
