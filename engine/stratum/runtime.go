package stratum

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/internal/infer"
	"github.com/stratum-go/stratum/engine/internal/llm"
	"github.com/stratum-go/stratum/engine/internal/otlp"
	"github.com/stratum-go/stratum/engine/internal/redact"
)

// Options configure a Runtime. The zero Options work: models from the
// environment and the config files exactly as `stratum run` reads them
// (STRATUM_MODEL, <PROVIDER>_API_KEY, <PROVIDER>_BASE_URL over
// $STRATUM_HOME/config.yaml and ./.stratum/config.yaml: default_model,
// base_urls, llm_timeout), nothing persisted, reviews on the console.
type Options struct {
	// Store persists flows, calls and reviews (nil: nothing persisted). A
	// program that wants its flows in `stratum tui` opens the shared store
	// with store/shared.OpenDefault and passes it here.
	Store Store
	// Model is the default "provider/model"; empty: STRATUM_MODEL.
	Model string
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
	// Replay answers every call from a recording (as `stratum run
	// --replay`): no network, no API key.
	Replay string
	// Record records every exchange to this file (as `stratum run
	// --record`).
	Record string
	// TestMode samples SampleN times where a Spec asks for Stable, and
	// makes Probable draw SampleN samples.
	TestMode bool
	// SampleN is the number of samples in test mode (default 5).
	SampleN int
	// Sinks are told about every review that opens, after it is
	// persisted.
	Sinks []ReviewSink

	// OnCall, when set, receives every Call's trace record as the call
	// ends (failed calls too), in addition to Runtime.Trace.
	OnCall func(CallTrace)
	// Stderr receives the runtime's warnings (nil: os.Stderr), such as the
	// global cache living in memory without a Store.
	Stderr io.Writer
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	// Models routes model names (Spec.Model, Options.Model, the default
	// model) to any Model: a provider of the program's own, a test double,
	// a built-in provider made by NewProvider. Other names go to the
	// built-in providers configured from the environment and the config
	// files.
	Models map[string]Model
	// HTTPClient sends the built-in providers' requests (nil: a client
	// keeping 64 idle connections per provider). Record
	// and replay wrap its transport.
	HTTPClient *http.Client
}

// Runtime holds what calls share: the model router, the recording or
// replay transport, the OTLP exporter, the global cache, the trace and,
// with a Store, the persistence of flows. A Runtime is safe for concurrent
// use. Attach one to a context with WithRuntime; without one, calls use a
// default Runtime built from the environment on first use.
type Runtime struct {
	opts     Options
	store    engine.Store // Options.Store's engine side (nil: none)
	exec     *infer.Executor
	exporter *otlp.Exporter
	recorder flowRecorder
	global   *memCache
	warnOnce sync.Once
	reviews  reviewHub // review.go

	mu    sync.Mutex
	trace []CallTrace
}

// flowRecorder persists library flows and their calls. Without a Store it
// is an in-memory recorder; store.go implements the store-backed one.
type flowRecorder interface {
	startFlow(ctx context.Context, name string, input any) (flowID string, err error)
	recordCall(ctx context.Context, flowID string, rec CallTrace) error
	finishFlow(ctx context.Context, flowID string, output any, failure error) error
}

// memRecorder is the recorder without a Store: flow ids, nothing kept.
type memRecorder struct{}

func (memRecorder) startFlow(context.Context, string, any) (string, error) {
	return engine.NewUUID(), nil
}
func (memRecorder) recordCall(context.Context, string, CallTrace) error { return nil }
func (memRecorder) finishFlow(context.Context, string, any, error) error {
	return nil
}

// New builds a Runtime. Errors are about the options: both Replay and
// Record, an unreadable replay file, an unwritable record file, a bad
// STRATUM_LLM_TIMEOUT or pricing file.
func New(opts Options) (*Runtime, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.SampleN <= 0 {
		opts.SampleN = 5
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Model != "" {
		// Options.Model wins over STRATUM_MODEL (the router reads the latter).
		getenv, model := opts.Getenv, opts.Model
		opts.Getenv = func(k string) string {
			if k == "STRATUM_MODEL" {
				return model
			}
			return getenv(k)
		}
	}
	// The config files `stratum run` reads ($STRATUM_HOME/config.yaml, then
	// ./.stratum/config.yaml): the default model, base URLs, llm_timeout.
	cfg, err := config.Load(".")
	if err != nil {
		return nil, fmt.Errorf("stratum: %w", err)
	}
	// The process environment's and the config's secrets are masked in the
	// record file and the exported spans, as `stratum run` masks them.
	red := redact.FromEnv(os.Environ(), cfg.Secrets()...)
	setup := infer.Setup{Record: opts.Record, Replay: opts.Replay, DefaultModel: cfg.DefaultModel, BaseURLs: cfg.BaseURLs,
		CallTimeout: cfg.LLMTimeout, Getenv: opts.Getenv, Redact: red, Transport: transport(), Client: opts.HTTPClient}
	if len(opts.Models) > 0 {
		setup.Models = make(map[string]llm.Provider, len(opts.Models))
		for name, m := range opts.Models {
			if m == nil {
				return nil, fmt.Errorf("%w: Options.Models[%q] is nil", ErrStratum, name)
			}
			setup.Models[name] = modelProvider{name: name, m: m}
		}
	}
	ex, err := infer.NewExecutor(setup)
	if err != nil {
		return nil, fmt.Errorf("stratum: %w", err)
	}
	r := &Runtime{opts: opts, exec: ex, recorder: memRecorder{}, global: newMemCache()}
	if cfg, ok := otlp.ConfigFromEnv(opts.Getenv); ok {
		cfg.Redact = red
		r.exporter = otlp.New(cfg)
	}
	if opts.Store != nil {
		st, ok := opts.Store.(engine.Store)
		if !ok {
			return nil, fmt.Errorf("stratum: Options.Store: %T is not a store opened by store/shared (OpenDefault or Open)", opts.Store)
		}
		r.attachStore(st)
	}
	return r, nil
}

// transport is the HTTP transport of a Runtime's requests: the default
// one, keeping up to maxIdleConnsPerHost idle connections per provider
// instead of 2, so the concurrent calls of All or a quorum reuse their
// connections instead of opening new ones (TLS handshakes included).
func transport() http.RoundTripper {
	d, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport // replaced by the program: keep its choice
	}
	t := d.Clone()
	t.MaxIdleConnsPerHost = maxIdleConnsPerHost
	return t
}

// maxIdleConnsPerHost is the idle connections a Runtime keeps per
// provider. Unexported: a program that wants another pool passes its own
// Options.HTTPClient.
const maxIdleConnsPerHost = 64

// Close flushes the OTLP exporter and the recording. The Runtime must not
// be used afterwards.
func (rt *Runtime) Close(ctx context.Context) error {
	var errs []error
	if rt.exporter != nil {
		errs = append(errs, rt.exporter.Shutdown(ctx))
	}
	errs = append(errs, rt.exec.Close())
	return errors.Join(errs...)
}

// Trace returns a copy of the trace records of every Call made through rt so
// far, in the order the calls ended.
func (rt *Runtime) Trace() []CallTrace {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]CallTrace(nil), rt.trace...)
}

type runtimeKey struct{}

// WithRuntime returns a context whose calls, flows and reviews use r.
// Without one, they use a default Runtime built from the environment with
// the zero Options.
func WithRuntime(ctx context.Context, r *Runtime) context.Context {
	return context.WithValue(ctx, runtimeKey{}, r)
}

var (
	defaultOnce sync.Once
	defaultRT   *Runtime
	defaultErr  error
)

// runtimeFrom returns the context's Runtime, else the default one.
func runtimeFrom(ctx context.Context) (*Runtime, error) {
	if r, ok := ctx.Value(runtimeKey{}).(*Runtime); ok && r != nil {
		return r, nil
	}
	defaultOnce.Do(func() { defaultRT, defaultErr = New(Options{}) })
	return defaultRT, defaultErr
}

// flowRun is one Flow.Run in progress: its id, name, budget envelope and
// session cache.
type flowRun struct {
	id      string
	name    string
	rt      *Runtime
	budget  *envelope
	session *memCache

	waitMu  sync.Mutex
	waiting int       // reviews of this flow being waited for
	since   time.Time // when the first of them began
}

// humanWait marks the start of a wait for a person (AwaitHuman) and
// returns its end: once no review of the flow is waited for any more, the
// flow's envelope (and its parents') is extended by the time the waits
// covered, so waiting for a person is never charged to a time budget.
// Overlapping waits count once.
func (f *flowRun) humanWait(now func() time.Time) (end func()) {
	f.waitMu.Lock()
	if f.waiting == 0 {
		f.since = now()
	}
	f.waiting++
	f.waitMu.Unlock()
	return func() {
		f.waitMu.Lock()
		defer f.waitMu.Unlock()
		if f.waiting--; f.waiting == 0 {
			f.budget.extend(now().Sub(f.since))
		}
	}
}

type flowKey struct{}

func withFlow(ctx context.Context, f *flowRun) context.Context {
	return context.WithValue(ctx, flowKey{}, f)
}

// flowFrom returns the innermost flow of ctx, or nil outside any flow.
func flowFrom(ctx context.Context) *flowRun {
	f, _ := ctx.Value(flowKey{}).(*flowRun)
	return f
}

// warnf writes a warning of the runtime.
func (rt *Runtime) warnf(format string, args ...any) {
	fmt.Fprintf(rt.opts.Stderr, "stratum: warning: "+format+"\n", args...)
}
