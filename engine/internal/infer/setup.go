package infer

import (
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
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg, err := llm.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = s.DefaultModel
	}
	cfg.BaseURLs = s.BaseURLs
	var recorder *llm.Recorder
	switch {
	case s.Record != "":
		rec, err := llm.NewRecorder(s.Record)
		if err != nil {
			return nil, err
		}
		rec.Redact = s.Redact
		rec.Base = s.Transport
		cfg.HTTPClient = &http.Client{Transport: rec}
		recorder = rec
	case s.Replay != "":
		rp, err := llm.NewReplayer(s.Replay)
		if err != nil {
			return nil, err
		}
		cfg.HTTPClient = &http.Client{Transport: rp}
		cfg.NoKeys = true
	case s.Transport != nil:
		cfg.HTTPClient = &http.Client{Transport: s.Transport}
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

// Close closes the record file, if the executor records (the record is
// complete without it: every exchange is written as it ends).
func (e *Executor) Close() error {
	if e.recorder == nil {
		return nil
	}
	return e.recorder.Close()
}
