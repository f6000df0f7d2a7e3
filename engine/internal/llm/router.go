package llm

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
)

// Dialects.
const (
	DialectOpenAI    = "openai"    // Chat Completions
	DialectAnthropic = "anthropic" // Messages
	// DialectGemini (gemini.go) is Google's generateContent.
)

// ProviderInfo describes a known provider.
type ProviderInfo struct {
	Name    string
	Dialect string
	BaseURL string // default base URL
	// KeyEnv is the API key variable ("" = no key needed).
	KeyEnv string
	// KeyOptional: a missing key is not an error (self-hosted servers).
	KeyOptional bool
	// Local providers cost 0.
	Local bool
	// MaxTokensField overrides the OpenAI dialect's output-cap field.
	MaxTokensField string
	// NoStrict: send json_schema with strict false.
	NoStrict bool
	// Extra is merged into every request body.
	Extra map[string]any
}

// KnownProviders are the built-in providers by name. Any other name works
// when <NAME>_BASE_URL (or Config.BaseURLs) gives an OpenAI-compatible base
// URL; its key is then read from <NAME>_API_KEY, if set.
var KnownProviders = map[string]ProviderInfo{
	"openai":     {Name: "openai", Dialect: DialectOpenAI, BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY", MaxTokensField: "max_completion_tokens"},
	"anthropic":  {Name: "anthropic", Dialect: DialectAnthropic, BaseURL: "https://api.anthropic.com", KeyEnv: "ANTHROPIC_API_KEY"},
	"gemini":     {Name: "gemini", Dialect: DialectGemini, BaseURL: "https://generativelanguage.googleapis.com/v1beta", KeyEnv: "GEMINI_API_KEY"},
	"groq":       {Name: "groq", Dialect: DialectOpenAI, BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY"},
	"openrouter": {Name: "openrouter", Dialect: DialectOpenAI, BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY", Extra: map[string]any{"provider": map[string]any{"require_parameters": true}}},
	"deepseek":   {Name: "deepseek", Dialect: DialectOpenAI, BaseURL: "https://api.deepseek.com/v1", KeyEnv: "DEEPSEEK_API_KEY", NoStrict: true},
	"together":   {Name: "together", Dialect: DialectOpenAI, BaseURL: "https://api.together.xyz/v1", KeyEnv: "TOGETHER_API_KEY", NoStrict: true},
	"ollama":     {Name: "ollama", Dialect: DialectOpenAI, BaseURL: "http://localhost:11434/v1", Local: true},
	"vllm":       {Name: "vllm", Dialect: DialectOpenAI, BaseURL: "http://localhost:8000/v1", KeyEnv: "VLLM_API_KEY", KeyOptional: true, Local: true},
	"llamacpp":   {Name: "llamacpp", Dialect: DialectOpenAI, BaseURL: "http://localhost:8080/v1", KeyEnv: "LLAMACPP_API_KEY", KeyOptional: true, Local: true},
}

// knownBaseURLEnvs are the built-in providers' <PROVIDER>_BASE_URL
// variables, named once.
var knownBaseURLEnvs = func() map[string]string {
	m := make(map[string]string, len(KnownProviders))
	for p := range KnownProviders {
		m[p] = EnvName(p) + "_BASE_URL"
	}
	return m
}()

// baseURLEnv is the variable that overrides provider's base URL.
func baseURLEnv(provider string) string {
	if v, ok := knownBaseURLEnvs[provider]; ok {
		return v
	}
	return EnvName(provider) + "_BASE_URL"
}

// fullName is "prov/name": model itself when it is written so already.
func fullName(model, prov, name string) string {
	if len(model) == len(prov)+1+len(name) && model[:len(prov)] == prov && model[len(prov)+1:] == name {
		return model
	}
	return prov + "/" + name
}

// EnvName is a provider's environment variable prefix: upper-cased, every
// character other than A-Z and 0-9 replaced by "_" ("llama.cpp" →
// "LLAMA_CPP").
func EnvName(provider string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(provider) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Config configures a Router.
type Config struct {
	// DefaultModel is used when neither the step nor the function names a
	// model (STRATUM_MODEL, or config default_model).
	DefaultModel string
	// BaseURLs override base URLs by provider name (config); the
	// <PROVIDER>_BASE_URL variables override these.
	BaseURLs map[string]string
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// HTTPClient sends the requests (record/replay install their transport
	// here); default http.DefaultClient.
	HTTPClient *http.Client
	// Prices prices the calls (default DefaultPrices()).
	Prices *PriceTable
	// Retry is the transport retry policy.
	Retry Retry
	// NoKeys: do not require API keys (replay: nothing is sent anywhere).
	NoKeys bool
	// Models are a program's own models by full name ("provider/model" or
	// any name), resolved before the built-in providers; the Recorder or
	// Replayer, when set, records their exchanges or answers them.
	Models   map[string]Provider
	Recorder *Recorder
	Replayer *Replayer
}

// ConfigFromEnv returns a Config with DefaultModel from STRATUM_MODEL and the
// embedded prices, extended by the file STRATUM_MODEL_PRICING_JSON names.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := Config{DefaultModel: getenv("STRATUM_MODEL"), Getenv: getenv, Prices: DefaultPrices()}
	if p := getenv("STRATUM_MODEL_PRICING_JSON"); p != "" {
		t, err := LoadPrices(p, cfg.Prices)
		if err != nil {
			return cfg, err
		}
		cfg.Prices = t
	}
	return cfg, nil
}

// Target is a resolved model.
type Target struct {
	Provider Provider
	Info     ProviderInfo
	Model    string // provider-local name
	Full     string // provider/model
}

// MissingKeyError is the error of a call to model whose provider needs a
// key that is not set.
func MissingKeyError(model string, info ProviderInfo) *ConfigError {
	return &ConfigError{Message: fmt.Sprintf("model %q needs %s to be set (or run with --replay FILE)", model, info.KeyEnv)}
}

// Router resolves "provider/model" names to Providers (created once per
// provider and reused).
type Router struct {
	cfg Config
	mu  sync.Mutex
	got map[string]Provider
}

// NewRouter returns a Router.
func NewRouter(cfg Config) *Router {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Prices == nil {
		cfg.Prices = DefaultPrices()
	}
	return &Router{cfg: cfg, got: map[string]Provider{}}
}

// Prices returns the router's price table.
func (r *Router) Prices() *PriceTable { return r.cfg.Prices }

// Choose returns the model to use: the first non-empty of the candidates
// (step model, function model), else the configured default.
func (r *Router) Choose(candidates ...string) string {
	for _, c := range candidates {
		if strings.TrimSpace(c) != "" {
			return strings.TrimSpace(c)
		}
	}
	return r.cfg.DefaultModel
}

// provider resolves the provider part of a "provider/model" name: its
// description (base URL overridden by the config and the environment), its
// canonical name and the model's name at the provider.
func (r *Router) provider(model string) (info ProviderInfo, prov, name string, err error) {
	if model == "" {
		return ProviderInfo{}, "", "", &ConfigError{Message: "no model configured: set the step's or function's model, or STRATUM_MODEL (e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-6, ollama/llama3.2)"}
	}
	prov, name, ok := strings.Cut(model, "/")
	if !ok || prov == "" || name == "" {
		return ProviderInfo{}, "", "", &ConfigError{Message: fmt.Sprintf("model %q: write provider/model, e.g. openai/%s (providers: %s)", model, model, strings.Join(slices.Sorted(maps.Keys(KnownProviders)), ", "))}
	}
	prov = strings.ToLower(prov)
	if prov == "llama.cpp" || prov == "llama-cpp" {
		prov = "llamacpp"
	}
	info, known := KnownProviders[prov]
	base := r.cfg.BaseURLs[prov]
	if v := r.cfg.Getenv(baseURLEnv(prov)); v != "" {
		base = v
	} else if h := r.cfg.Getenv("OLLAMA_HOST"); prov == "ollama" && base == "" && h != "" {
		// Ollama's own variable: host[:port] or a URL, without /v1.
		if !strings.Contains(h, "://") {
			h = "http://" + h
		}
		base = strings.TrimRight(h, "/") + "/v1"
	}
	if !known {
		if base == "" {
			return ProviderInfo{}, "", "", &ConfigError{Message: fmt.Sprintf("model %q: unknown provider %q; set %s_BASE_URL to an OpenAI-compatible endpoint or use one of: %s", model, prov, EnvName(prov), strings.Join(slices.Sorted(maps.Keys(KnownProviders)), ", "))}
		}
		info = ProviderInfo{Name: prov, Dialect: DialectOpenAI, KeyEnv: EnvName(prov) + "_API_KEY", KeyOptional: true, NoStrict: true}
	}
	if base != "" {
		info.BaseURL = base
	}
	return info, prov, name, nil
}

// Priced reports whether the calls of model ("provider/model") have a
// known cost: the provider reports it (OpenRouter), it is local (free), or
// the price table knows the model. full is the model as resolved; err is
// the ConfigError of a model that does not resolve.
func (r *Router) Priced(model string) (full string, priced bool, err error) {
	if _, ok := r.cfg.Models[model]; ok {
		// A program's model reports its own cost (or is priced by the
		// table under its name).
		return model, true, nil
	}
	info, prov, name, err := r.provider(model)
	if err != nil {
		return "", false, err
	}
	full = prov + "/" + name
	if info.Local || prov == "openrouter" {
		return full, true, nil
	}
	_, ok := r.cfg.Prices.Lookup(prov, name)
	return full, ok, nil
}

// Resolve maps a "provider/model" name to its provider. Errors are
// *ConfigError with a message saying what to set.
func (r *Router) Resolve(model string) (Target, error) {
	if p, ok := r.cfg.Models[model]; ok {
		return r.customTarget(model, p), nil
	}
	info, prov, name, err := r.provider(model)
	if err != nil {
		return Target{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.got[prov]; ok {
		return Target{Provider: p, Info: info, Model: name, Full: fullName(model, prov, name)}, nil
	}
	key := ""
	if info.KeyEnv != "" {
		key = r.cfg.Getenv(info.KeyEnv)
		if key == "" && !info.KeyOptional && !r.cfg.NoKeys {
			return Target{}, MissingKeyError(model, info)
		}
	}
	p := NewClient(info, key, r.cfg.HTTPClient, r.cfg.Retry, nil)
	r.got[prov] = p
	return Target{Provider: p, Info: info, Model: name, Full: prov + "/" + name}, nil
}

// NewClient is the client of a provider described by info, with its key,
// HTTP client, retry policy and extra headers.
func NewClient(info ProviderInfo, key string, client *http.Client, retry Retry, headers map[string]string) Provider {
	switch info.Dialect {
	case DialectAnthropic:
		return &Anthropic{Name: info.Name, BaseURL: info.BaseURL, APIKey: key, Client: client, Retry: retry, Extra: info.Extra, Headers: headers}
	case DialectGemini:
		return &Gemini{Name: info.Name, BaseURL: info.BaseURL, APIKey: key, Client: client, Retry: retry, Extra: info.Extra, Headers: headers}
	}
	return &OpenAI{Name: info.Name, BaseURL: info.BaseURL, APIKey: key, Client: client, Retry: retry,
		MaxTokensField: info.MaxTokensField, NoStrict: info.NoStrict, Extra: info.Extra, Headers: headers}
}
