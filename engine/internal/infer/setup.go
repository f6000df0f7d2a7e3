package infer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/internal/llm"
	"github.com/stratum-go/stratum/engine/internal/redact"
)

// Setup is the configuration `stratum run` passes to NewExecutor.
type Setup struct {
	// Record saves every LLM exchange of the run to this file (--record).
	Record string
	// Replay answers every LLM call from this file, with no network and no
	// API key (--replay).
	Replay string
	// DefaultModel is config's default_model; STRATUM_MODEL overrides it.
	DefaultModel string
	// BaseURLs are config's per-provider base URLs; <PROVIDER>_BASE_URL
	// overrides them.
	BaseURLs map[string]string
	// CallTimeout is config's llm_timeout (0: DefaultCallTimeout);
	// STRATUM_LLM_TIMEOUT (a Go duration, "90s", "10m") overrides it.
	CallTimeout time.Duration
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// Redact masks configured secrets in the --record file.
	Redact *redact.Redactor
	// Transport sends live requests (nil: http.DefaultTransport); the
	// recorder forwards through it too.
	Transport http.RoundTripper
	// Client, when set, sends live requests instead (its Transport is
	// the one the recorder forwards through).
	Client *http.Client
	// Models are a program's own models by name, resolved before the
	// built-in providers (record and replay apply to them too).
	Models map[string]llm.Provider
}

// NewExecutor builds the infer executor of a run: a router over the
// environment's keys and base URLs, the embedded price table (extended by
// STRATUM_MODEL_PRICING_JSON), and the record or replay transport when
// asked. Errors are about the flags or files (both --record and --replay,
// an unreadable replay file, an unwritable record file).
func NewExecutor(s Setup) (*Executor, error) {
	if s.Record != "" && s.Replay != "" {
		return nil, errors.New("--record and --replay cannot be used together")
	}
	getenv := s.getenv()
	cfg, err := s.routerConfig()
	if err != nil {
		return nil, err
	}
	var recorder *llm.Recorder
	cfg.Models = s.Models
	live := s.Client
	if live == nil && s.Transport != nil {
		live = &http.Client{Transport: s.Transport}
	}
	switch {
	case s.Record != "":
		rec, err := llm.NewRecorder(s.Record)
		if err != nil {
			return nil, err
		}
		rec.Redact = s.Redact
		c := http.Client{}
		if live != nil {
			c = *live
			rec.Base = live.Transport
		}
		c.Transport = rec
		cfg.HTTPClient = &c
		cfg.Recorder = rec
		recorder = rec
	case s.Replay != "":
		rp, err := llm.NewReplayer(s.Replay)
		if err != nil {
			return nil, err
		}
		cfg.HTTPClient = &http.Client{Transport: rp}
		cfg.Replayer = rp
		cfg.NoKeys = true
	case live != nil:
		cfg.HTTPClient = live
	}
	ex := New(llm.NewRouter(cfg))
	ex.recorder = recorder
	ex.CallTimeout = s.CallTimeout
	if v := getenv("STRATUM_LLM_TIMEOUT"); v != "" {
		d, err := config.ParseTimeout(v)
		if err != nil {
			return nil, fmt.Errorf("STRATUM_LLM_TIMEOUT: %v", err)
		}
		ex.CallTimeout = d
	}
	if ex.CallTimeout <= 0 {
		ex.CallTimeout = DefaultCallTimeout
	}
	return ex, nil
}

func (s Setup) getenv() func(string) string {
	if s.Getenv == nil {
		return os.Getenv
	}
	return s.Getenv
}

// routerConfig is the router's configuration: the environment's
// (STRATUM_MODEL, keys, STRATUM_MODEL_PRICING_JSON) over the config's
// default model and base URLs.
func (s Setup) routerConfig() (llm.Config, error) {
	cfg, err := llm.ConfigFromEnv(s.getenv())
	if err != nil {
		return cfg, err
	}
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = s.DefaultModel
	}
	cfg.BaseURLs = s.BaseURLs
	return cfg, nil
}

// ModelCheck is what `stratum doctor` learns of a model without calling
// it: the provider it resolves to, where the provider answers, and whether
// its key is set — by the rules a call follows.
type ModelCheck struct {
	Model    string // as asked ("" = the default model)
	Full     string // provider/model
	Provider string
	BaseURL  string
	KeyEnv   string // "" when the provider needs none
	KeySet   bool
	// Err is what a call would fail with before sending anything: no
	// model configured, an unknown provider, a missing key.
	Err error
}

// CheckModel resolves model ("": the default model) as a call would,
// without sending anything.
func (s Setup) CheckModel(model string) ModelCheck {
	c := ModelCheck{Model: model}
	cfg, err := s.routerConfig()
	if err != nil {
		c.Err = err
		return c
	}
	cfg.NoKeys = true // resolve the provider even without its key: the key is checked below
	r := llm.NewRouter(cfg)
	t, err := r.Resolve(r.Choose(model))
	if err != nil {
		c.Err = err
		return c
	}
	c.Full, c.Provider, c.BaseURL, c.KeyEnv = t.Full, t.Info.Name, t.Info.BaseURL, t.Info.KeyEnv
	if c.KeyEnv != "" {
		c.KeySet = s.getenv()(c.KeyEnv) != ""
		if !c.KeySet && !t.Info.KeyOptional {
			c.Err = llm.MissingKeyError(t.Full, t.Info)
		}
	}
	return c
}

// Reach says whether base answers an HTTP GET within llm.ReachTimeout, no
// token spent (llm.Reach); status is its HTTP status.
func Reach(ctx context.Context, base string) (status int, err error) {
	return llm.Reach(ctx, nil, base)
}

// Close closes the record file, if the executor records (the record is
// complete without it: every exchange is written as it ends).
func (e *Executor) Close() error {
	if e.recorder == nil {
		return nil
	}
	return e.recorder.Close()
}

// PriceHint says how to give a model a price, for the refusal of a USD
// budget over a model with no known price (`stratum run` and the Go
// library alike): such a budget could never be enforced.
const PriceHint = "add the model's price in a JSON file named by STRATUM_MODEL_PRICING_JSON " +
	`({"providers": [{"id": "PROVIDER", "models": [{"id": "MODEL", "match": {"equals": "MODEL"}, "prices": {"input_mtok": 0.15, "output_mtok": 0.6}}]}]}: USD per million tokens)`

// PriceOf reports whether the calls a step makes with models (step's,
// function's; the default when both are empty) have a known cost, as
// llm.Router.Priced says. full is the model chosen ("" when none is
// configured: such a step fails at its call, with the fix).
func (e *Executor) PriceOf(models ...string) (full string, priced bool) {
	p, ok := e.Models.(interface {
		Priced(string) (string, bool, error)
	})
	if !ok {
		return "", true
	}
	model := e.Models.Choose(models...)
	if model == "" {
		return "", true
	}
	full, priced, err := p.Priced(model)
	if err != nil {
		return "", true // the call fails with its own message
	}
	return full, priced
}

// Complete sends one prompt to model ("": the default model) with the
// setup's keys and base URLs and answers the text and the provider/model
// that answered (stratum_decompose's one call).
func (s Setup) Complete(ctx context.Context, model, prompt string, maxTokens int) (string, string, error) {
	cfg, err := s.routerConfig()
	if err != nil {
		return "", "", err
	}
	if s.Client != nil {
		cfg.HTTPClient = s.Client
	}
	r := llm.NewRouter(cfg)
	t, err := r.Resolve(r.Choose(model))
	if err != nil {
		return "", "", err
	}
	resp, err := t.Provider.Complete(ctx, llm.Request{Model: t.Model, Prompt: prompt, MaxTokens: maxTokens})
	if err != nil {
		return "", t.Full, err
	}
	return resp.Content, t.Full, nil
}
