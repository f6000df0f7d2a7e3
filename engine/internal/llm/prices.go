package llm

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

//go:embed prices/genai-prices.json
var embeddedPrices []byte

// PriceTable maps provider/model names to prices in USD per million tokens.
type PriceTable struct {
	Source    string          `json:"source"`
	Snapshot  string          `json:"snapshot"`
	Providers []PriceProvider `json:"providers"`
}

// PriceProvider is one provider's models, matched in order.
type PriceProvider struct {
	ID     string       `json:"id"`
	Models []PriceModel `json:"models"`
}

// PriceModel is one model entry (genai-prices' shape, subset).
type PriceModel struct {
	ID     string     `json:"id"`
	Match  Match      `json:"match"`
	Prices ModelPrice `json:"prices"`
}

// Match is a genai-prices match rule: exactly one of the fields is set.
type Match struct {
	Equals     string  `json:"equals,omitempty"`
	StartsWith string  `json:"starts_with,omitempty"`
	Contains   string  `json:"contains,omitempty"`
	Or         []Match `json:"or,omitempty"`
	And        []Match `json:"and,omitempty"`
}

// Matches reports whether model satisfies the rule.
func (m Match) Matches(model string) bool {
	switch {
	case m.Equals != "":
		return model == m.Equals
	case m.StartsWith != "":
		return strings.HasPrefix(model, m.StartsWith)
	case m.Contains != "":
		return strings.Contains(model, m.Contains)
	case len(m.Or) > 0:
		for _, o := range m.Or {
			if o.Matches(model) {
				return true
			}
		}
	case len(m.And) > 0:
		for _, a := range m.And {
			if !a.Matches(model) {
				return false
			}
		}
		return true
	}
	return false
}

// ModelPrice is USD per million tokens. A missing cache price falls back to
// the input price.
type ModelPrice struct {
	InputMTok      float64  `json:"input_mtok"`
	OutputMTok     float64  `json:"output_mtok"`
	CacheReadMTok  *float64 `json:"cache_read_mtok,omitempty"`
	CacheWriteMTok *float64 `json:"cache_write_mtok,omitempty"`
}

// Cost prices u.
func (p ModelPrice) Cost(u Usage) float64 {
	cr, cw := p.InputMTok, p.InputMTok
	if p.CacheReadMTok != nil {
		cr = *p.CacheReadMTok
	}
	if p.CacheWriteMTok != nil {
		cw = *p.CacheWriteMTok
	}
	return (float64(u.Input)*p.InputMTok + float64(u.CacheRead)*cr + float64(u.CacheWrite)*cw +
		float64(u.Output+u.Reasoning)*p.OutputMTok) / 1e6
}

// DefaultPrices returns the embedded table (a fresh copy).
func DefaultPrices() *PriceTable {
	var t PriceTable
	if err := json.Unmarshal(embeddedPrices, &t); err != nil {
		panic("llm: embedded price table is invalid: " + err.Error()) // build-time data
	}
	return &t
}

// LoadPrices reads a price file in the same format; its entries take
// precedence over base's (base may be nil).
func LoadPrices(path string, base *PriceTable) (*PriceTable, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("price file: %w", err)
	}
	var t PriceTable
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("price file %s: %w", path, err)
	}
	if base != nil {
		t.Providers = append(t.Providers, base.Providers...)
		if t.Snapshot == "" {
			t.Snapshot = base.Snapshot
		}
	}
	return &t, nil
}

// Lookup finds provider's model; ok=false when unknown.
func (t *PriceTable) Lookup(provider, model string) (ModelPrice, bool) {
	if t == nil {
		return ModelPrice{}, false
	}
	for _, p := range t.Providers {
		if p.ID != provider {
			continue
		}
		for _, m := range p.Models {
			if m.Match.Matches(model) {
				return m.Prices, true
			}
		}
	}
	return ModelPrice{}, false
}

// Cost is the cost of one call: the provider's own figure when it reported
// one (OpenRouter), 0 for local providers, the table's price otherwise, and
// nil (unknown, never 0) for a model the table does not know. For
// OpenRouter without a reported cost, "vendor/model" is looked up under the
// vendor.
func (t *PriceTable) Cost(p ProviderInfo, model string, u Usage, reported *float64) *float64 {
	if reported != nil {
		c := *reported
		return &c
	}
	if p.Local {
		zero := 0.0
		return &zero
	}
	provider := p.Name
	if p.Name == "openrouter" {
		if vendor, m, ok := strings.Cut(model, "/"); ok {
			provider, model = vendor, m
		}
	}
	price, ok := t.Lookup(provider, model)
	if !ok {
		return nil
	}
	c := price.Cost(u)
	return &c
}

// LookupModel finds a model named without its provider (as an agent CLI
// reports it: "claude-sonnet-4-6", "gpt-5.4/high"): "provider/model" is
// looked up under that provider; otherwise the first provider whose table
// knows the name, then the name before a "/" (an effort suffix), wins.
func (t *PriceTable) LookupModel(model string) (ModelPrice, bool) {
	if p, m, ok := strings.Cut(model, "/"); ok {
		if price, ok := t.Lookup(p, m); ok {
			return price, true
		}
	}
	for _, name := range []string{model, strings.SplitN(model, "/", 2)[0]} {
		if name == "" || t == nil {
			continue
		}
		for _, p := range t.Providers {
			for _, m := range p.Models {
				if m.Match.Matches(name) {
					return m.Prices, true
				}
			}
		}
	}
	return ModelPrice{}, false
}
