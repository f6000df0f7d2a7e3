package stratum

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/stratum-go/stratum/engine/internal/llm"
)

// ProviderConfig configures a built-in provider made by NewProvider: where
// it answers (BaseURL; empty: the provider's public endpoint), its key,
// the HTTP client that sends its requests (nil: a client of its own) and
// extra headers sent with every request.
type ProviderConfig struct {
	BaseURL, APIKey string
	HTTPClient      *http.Client
	Headers         map[string]string
}

// NewProvider builds a built-in provider as a Model from values alone,
// without reading the environment or any file. name is "provider" or
// "provider/model" (the model a request that names none uses):
// "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-6",
// "gemini/gemini-2.5-flash" (Google's Gemini API), "ollama/llama3.2",
// "groq/…", "openrouter/…", "deepseek/…", "together/…", "vllm/…",
// "llamacpp/…", or any other name with a BaseURL of an OpenAI-compatible
// server. A provider that needs a key and gets none is an error here, not
// at the first request.
//
// The Model sends what the library's Calls send: structured output through
// the provider's own mechanism, tools, media parts, and server-sent events
// when the request has OnChunk. Its failures are *ProviderError.
func NewProvider(name string, cfg ProviderConfig) (Model, error) {
	prov, model, _ := strings.Cut(strings.TrimSpace(name), "/")
	prov = strings.ToLower(prov)
	if prov == "llama.cpp" || prov == "llama-cpp" {
		prov = "llamacpp"
	}
	if prov == "" {
		return nil, fmt.Errorf("%w: NewProvider: name the provider, e.g. openai/gpt-4o-mini (providers: %s)", ErrStratum, knownProviders())
	}
	info, known := llm.KnownProviders[prov]
	if !known {
		if cfg.BaseURL == "" {
			return nil, fmt.Errorf("%w: NewProvider(%q): unknown provider %q; give ProviderConfig.BaseURL of an OpenAI-compatible server, or use one of: %s", ErrStratum, name, prov, knownProviders())
		}
		info = llm.ProviderInfo{Name: prov, Dialect: llm.DialectOpenAI, KeyOptional: true, NoStrict: true}
	}
	if cfg.BaseURL != "" {
		info.BaseURL = cfg.BaseURL
	}
	if cfg.APIKey == "" && info.KeyEnv != "" && !info.KeyOptional {
		return nil, fmt.Errorf("%w: NewProvider(%q): %s needs an API key (ProviderConfig.APIKey)", ErrStratum, name, prov)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Transport: transport()}
	}
	headers := maps.Clone(cfg.Headers)
	return &builtinModel{name: prov, model: model, info: info,
		p: llm.NewClient(info, cfg.APIKey, client, llm.Retry{}, headers), prices: llm.DefaultPrices()}, nil
}

func knownProviders() string {
	return strings.Join(slices.Sorted(maps.Keys(llm.KnownProviders)), ", ")
}

// builtinModel is a built-in provider as a Model.
type builtinModel struct {
	name, model string
	info        llm.ProviderInfo
	p           llm.Provider
	prices      *llm.PriceTable
}

// Generate sends req to the provider.
func (b *builtinModel) Generate(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: Generate: a nil request", ErrStratum)
	}
	model := req.Model
	if model == "" {
		model = b.model
	}
	if model == "" {
		return nil, fmt.Errorf("%w: %s: the request names no model (ModelRequest.Model, or NewProvider(\"%s/MODEL\"))", ErrStratum, b.name, b.name)
	}
	lreq := llm.Request{Model: model, Schema: req.Schema, SchemaName: "output", MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	var rest []Message
	var system []string
	for _, m := range req.Messages {
		if m.Role == RoleSystem {
			for _, p := range m.Parts {
				system = append(system, p.Text)
			}
			continue
		}
		rest = append(rest, m)
	}
	lreq.System = strings.Join(system, "\n")
	lreq.Messages = toLLMMessages(rest)
	for _, t := range req.Tools {
		lreq.Tools = append(lreq.Tools, llm.ToolDef{Name: t.Name, Description: t.Description, Schema: t.Schema})
	}
	if req.OnChunk != nil {
		lreq.OnDelta = func(s string) error { return req.OnChunk(Chunk{Text: s}) }
	}
	resp, err := b.p.Complete(ctx, lreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, faultOf("", b.name, b.name+"/"+model, err)
	}
	out := &ModelResponse{Model: resp.Model, FinishReason: resp.FinishReason, Message: Message{Role: RoleAssistant},
		Usage: Usage{InputTokens: resp.Usage.InputInclusive(), OutputTokens: resp.Usage.OutputInclusive()}}
	if c := b.prices.Cost(b.info, model, resp.Usage, resp.ProviderCostUSD); c != nil {
		out.Usage.CostUSD = *c
	}
	if resp.Content != "" {
		out.Message.Parts = append(out.Message.Parts, Part{Text: resp.Content})
	}
	for _, c := range resp.ToolCalls {
		out.Message.Parts = append(out.Message.Parts, Part{ToolCall: &ToolCall{ID: c.ID, Name: c.Name, Args: c.Args}})
	}
	return out, nil
}

// faultOf is the library's error for a provider's failure err (a client
// error of the engine, or a Model's own error) in a Call of fn.
func faultOf(fn, provider, model string, err error) *ProviderError {
	var own *ProviderError
	if errors.As(err, &own) {
		e := *own
		if e.Function == "" {
			e.Function = fn
		}
		if e.Provider == "" {
			e.Provider = provider
		}
		if e.Model == "" {
			e.Model = model
		}
		return &e
	}
	e := &ProviderError{Function: fn, Provider: provider, Model: model, Err: err}
	var (
		down  *llm.UnreachableError
		large *llm.TooLargeError
		api   *llm.APIError
		tr    *llm.TransportError
	)
	switch {
	case errors.As(err, &down):
		e.Retryable = !down.Permanent
	case errors.As(err, &large):
		e.Status = 200
	case errors.As(err, &api):
		e.Status = api.Status
	case errors.As(err, &tr):
		e.Status, e.Retryable = tr.Status, true
	}
	return e
}
