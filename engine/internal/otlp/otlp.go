package otlp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratum-go/stratum/engine/internal/redact"
)

// GenAI and stratum attribute names.
const (
	AttrOperationName    = "gen_ai.operation.name"
	AttrProviderName     = "gen_ai.provider.name"
	AttrRequestModel     = "gen_ai.request.model"
	AttrRequestMaxTokens = "gen_ai.request.max_tokens"
	AttrResponseModel    = "gen_ai.response.model"
	AttrResponseID       = "gen_ai.response.id"
	AttrFinishReasons    = "gen_ai.response.finish_reasons"
	AttrOutputType       = "gen_ai.output.type"
	AttrInputTokens      = "gen_ai.usage.input_tokens"
	AttrOutputTokens     = "gen_ai.usage.output_tokens"
	AttrCacheReadTokens  = "gen_ai.usage.cache_read.input_tokens"
	AttrCacheWriteTokens = "gen_ai.usage.cache_creation.input_tokens"
	AttrReasoningTokens  = "gen_ai.usage.reasoning.output_tokens"
	AttrErrorType        = "error.type"
	AttrServerAddress    = "server.address"
	AttrServerPort       = "server.port"

	AttrFlowID       = "stratum.flow_id"
	AttrFlowName     = "stratum.flow"
	AttrStepID       = "stratum.step_id"
	AttrFunction     = "stratum.function"
	AttrAttempt      = "stratum.attempt"
	AttrAttempts     = "stratum.attempts"
	AttrContractHash = "stratum.contract_hash"
	AttrPromptHash   = "stratum.compiled_prompt_hash"
	AttrCostUSD      = "stratum.cost_usd"
	AttrCacheHit     = "stratum.cache_hit"
	AttrStatus       = "stratum.status"
	AttrRepaired     = "stratum.repaired"
	AttrViolations   = "stratum.violations"
)

// Kind is an OTLP span kind.
type Kind int

// Span kinds.
const (
	KindInternal Kind = 1
	KindClient   Kind = 3
)

// Config configures an Exporter.
type Config struct {
	// Endpoint is the full traces URL (…/v1/traces).
	Endpoint    string
	Headers     map[string]string
	ServiceName string
	Client      *http.Client // default: 10s timeout
	// QueueSize bounds the ended spans waiting for export (default 2048).
	QueueSize int
	// BatchSize is the spans per POST (default 128).
	BatchSize int
	// Interval is the longest a span waits before export (default 2s).
	Interval time.Duration
	// Redact masks secrets in the exported spans (FromEnv: the
	// environment's keys and tokens, redact.FromEnv); nil masks nothing.
	Redact *redact.Redactor
}

// ConfigFromEnv reads the standard OTEL_* variables; ok is false when no
// endpoint is set (or OTEL_SDK_DISABLED=true).
func ConfigFromEnv(getenv func(string) string) (cfg Config, ok bool) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return cfg, false
	}
	if ep := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ep != "" {
		cfg.Endpoint = ep
	} else if ep := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); ep != "" {
		cfg.Endpoint = strings.TrimRight(ep, "/") + "/v1/traces"
	} else {
		return cfg, false
	}
	cfg.Headers = parseHeaders(getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS"))
	if len(cfg.Headers) == 0 {
		cfg.Headers = parseHeaders(getenv("OTEL_EXPORTER_OTLP_HEADERS"))
	}
	cfg.ServiceName = getenv("OTEL_SERVICE_NAME")
	return cfg, true
}

// parseHeaders parses "k1=v1,k2=v2" (values URL-decoded).
func parseHeaders(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		if dv, err := url.QueryUnescape(strings.TrimSpace(v)); err == nil {
			v = dv
		}
		out[k] = strings.TrimSpace(v)
	}
	return out
}

// FromEnv returns an Exporter configured from the environment, masking
// red's secrets in what it sends, or nil (a no-op) when OTLP export is not
// configured.
func FromEnv(red *redact.Redactor) *Exporter {
	cfg, ok := ConfigFromEnv(nil)
	if !ok {
		return nil
	}
	cfg.Redact = red
	return New(cfg)
}

// Exporter batches ended spans and POSTs them as OTLP/HTTP JSON.
type Exporter struct {
	cfg     Config
	queue   chan spanJSON
	flushCh chan chan struct{}
	done    chan struct{}
	closed  atomic.Bool
	once    sync.Once
	dropped atomic.Int64
	sent    atomic.Int64
}

// New starts an Exporter (its goroutine runs until Shutdown).
func New(cfg Config) *Exporter {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 2048
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 128
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = "stratum"
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	e := &Exporter{cfg: cfg, queue: make(chan spanJSON, cfg.QueueSize), flushCh: make(chan chan struct{}), done: make(chan struct{})}
	go e.loop()
	return e
}

// Dropped is the number of spans dropped (queue full or export failed).
func (e *Exporter) Dropped() int64 {
	if e == nil {
		return 0
	}
	return e.dropped.Load()
}

// Exported is the number of spans the receiver accepted.
func (e *Exporter) Exported() int64 {
	if e == nil {
		return 0
	}
	return e.sent.Load()
}

// Flush exports everything queued so far (or gives up when ctx ends).
func (e *Exporter) Flush(ctx context.Context) error {
	if e == nil || e.closed.Load() {
		return nil
	}
	ack := make(chan struct{})
	select {
	case e.flushCh <- ack:
	case <-ctx.Done():
		return ctx.Err()
	case <-e.done:
		return nil
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown flushes and stops the exporter; spans ended afterwards are
// dropped.
func (e *Exporter) Shutdown(ctx context.Context) error {
	if e == nil {
		return nil
	}
	err := e.Flush(ctx)
	e.once.Do(func() {
		e.closed.Store(true)
		close(e.done)
	})
	return err
}

func (e *Exporter) enqueue(s spanJSON) {
	if e.closed.Load() {
		e.dropped.Add(1)
		return
	}
	select {
	case e.queue <- s:
	default:
		e.dropped.Add(1)
	}
}

func (e *Exporter) loop() {
	t := time.NewTicker(e.cfg.Interval)
	defer t.Stop()
	var batch []spanJSON
	send := func() {
		if len(batch) > 0 {
			e.post(batch)
			batch = nil
		}
	}
	drain := func() {
		for {
			select {
			case s := <-e.queue:
				batch = append(batch, s)
				if len(batch) >= e.cfg.BatchSize {
					send()
				}
			default:
				return
			}
		}
	}
	for {
		select {
		case s := <-e.queue:
			batch = append(batch, s)
			if len(batch) >= e.cfg.BatchSize {
				send()
			}
		case <-t.C:
			send()
		case ack := <-e.flushCh:
			drain()
			send()
			close(ack)
		case <-e.done:
			drain()
			send()
			return
		}
	}
}

func (e *Exporter) post(batch []spanJSON) {
	body, err := json.Marshal(map[string]any{
		"resourceSpans": []any{map[string]any{
			"resource": map[string]any{"attributes": []attrJSON{attr("service.name", e.cfg.ServiceName)}},
			"scopeSpans": []any{map[string]any{
				"scope": map[string]any{"name": "github.com/stratum-go/stratum"},
				"spans": batch,
			}},
		}},
	})
	if err != nil {
		e.dropped.Add(int64(len(batch)))
		return
	}
	body = e.cfg.Redact.Bytes(body) // a masked secret stays inside its JSON string
	req, err := http.NewRequest(http.MethodPost, e.cfg.Endpoint, bytes.NewReader(body))
	if err != nil {
		e.dropped.Add(int64(len(batch)))
		return
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range e.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := e.cfg.Client.Do(req)
	if err != nil {
		e.dropped.Add(int64(len(batch)))
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e.dropped.Add(int64(len(batch)))
		return
	}
	e.sent.Add(int64(len(batch)))
}

// ---- spans ----

type attrJSON struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

type eventJSON struct {
	TimeUnixNano string     `json:"timeUnixNano"`
	Name         string     `json:"name"`
	Attributes   []attrJSON `json:"attributes,omitempty"`
}

type spanJSON struct {
	TraceID           string      `json:"traceId"`
	SpanID            string      `json:"spanId"`
	ParentSpanID      string      `json:"parentSpanId,omitempty"`
	Name              string      `json:"name"`
	Kind              Kind        `json:"kind"`
	StartTimeUnixNano string      `json:"startTimeUnixNano"`
	EndTimeUnixNano   string      `json:"endTimeUnixNano"`
	Attributes        []attrJSON  `json:"attributes,omitempty"`
	Events            []eventJSON `json:"events,omitempty"`
	Status            statusJSON  `json:"status"`
}

type statusJSON struct {
	Code    int    `json:"code"`
	Message string `json:"message,omitempty"`
}

// Span is an open span. Methods are safe for concurrent use and no-ops on a
// nil *Span or after End.
type Span struct {
	exp *Exporter
	mu  sync.Mutex
	s   spanJSON
	// index of attribute keys (Set replaces).
	keys  map[string]int
	ended bool
}

// StartSpan starts a span under parent (nil parent: a new trace).
func (e *Exporter) StartSpan(name string, parent *Span, kind Kind) *Span {
	if e == nil {
		return nil
	}
	sp := &Span{exp: e, keys: map[string]int{}, s: spanJSON{Name: name, Kind: kind, SpanID: randHex(8),
		StartTimeUnixNano: nanos(time.Now())}}
	if parent != nil {
		parent.mu.Lock()
		sp.s.TraceID, sp.s.ParentSpanID = parent.s.TraceID, parent.s.SpanID
		parent.mu.Unlock()
	} else {
		sp.s.TraceID = randHex(16)
	}
	return sp
}

// StartFlow starts a flow's root span ("flow NAME").
func (e *Exporter) StartFlow(flowID, flowName string) *Span {
	sp := e.StartSpan("flow "+flowName, nil, KindInternal)
	sp.Set(AttrFlowID, flowID)
	sp.Set(AttrFlowName, flowName)
	return sp
}

// Child starts a child span.
func (s *Span) Child(name string, kind Kind) *Span {
	if s == nil {
		return nil
	}
	return s.exp.StartSpan(name, s, kind)
}

// TraceID and SpanID return the hex ids ("" for nil).
func (s *Span) TraceID() string {
	if s == nil {
		return ""
	}
	return s.s.TraceID
}

// SpanID returns the span's hex id.
func (s *Span) SpanID() string {
	if s == nil {
		return ""
	}
	return s.s.SpanID
}

// Set sets (or replaces) an attribute. Values: string, bool, ints, floats,
// []string, *float64 (nil skipped); anything else is rendered as JSON text.
func (s *Span) Set(key string, value any) {
	if s == nil {
		return
	}
	if p, ok := value.(*float64); ok {
		if p == nil {
			return
		}
		value = *p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	a := attr(key, value)
	if i, ok := s.keys[key]; ok {
		s.s.Attributes[i] = a
		return
	}
	s.keys[key] = len(s.s.Attributes)
	s.s.Attributes = append(s.s.Attributes, a)
}

// Event adds a span event with attributes (keys sorted for stable output).
func (s *Span) Event(name string, attrs map[string]any) {
	if s == nil {
		return
	}
	ev := eventJSON{TimeUnixNano: nanos(time.Now()), Name: name}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ev.Attributes = append(ev.Attributes, attr(k, attrs[k]))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.s.Events = append(s.s.Events, ev)
	}
}

// End ends the span: status OK when err is nil, else ERROR with err's text
// (and error.type). It queues the span for export.
func (s *Span) End(err error) {
	if s == nil {
		return
	}
	if err != nil {
		s.Set(AttrErrorType, errorType(err))
		s.EndStatus(false, err.Error())
		return
	}
	s.EndStatus(true, "")
}

// EndStatus ends the span with an explicit status.
func (s *Span) EndStatus(ok bool, message string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.s.EndTimeUnixNano = nanos(time.Now())
	if ok {
		s.s.Status = statusJSON{Code: 1}
	} else {
		s.s.Status = statusJSON{Code: 2, Message: message}
	}
	out := s.s
	s.mu.Unlock()
	s.exp.enqueue(out)
}

type typedError interface{ ErrorType() string }

func errorType(err error) string {
	if t, ok := err.(typedError); ok {
		return t.ErrorType()
	}
	return fmt.Sprintf("%T", err)
}

type spanKey struct{}

// ContextWithSpan returns ctx carrying s (the parent of spans started by
// code that receives ctx, e.g. the infer executor's call span).
func ContextWithSpan(ctx context.Context, s *Span) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, spanKey{}, s)
}

// SpanFromContext returns the span ctx carries, or nil.
func SpanFromContext(ctx context.Context) *Span {
	s, _ := ctx.Value(spanKey{}).(*Span)
	return s
}

func attr(key string, v any) attrJSON {
	return attrJSON{Key: key, Value: anyValue(v)}
}

func anyValue(v any) map[string]any {
	switch x := v.(type) {
	case string:
		return map[string]any{"stringValue": x}
	case bool:
		return map[string]any{"boolValue": x}
	case int:
		return map[string]any{"intValue": strconv.FormatInt(int64(x), 10)}
	case int32:
		return map[string]any{"intValue": strconv.FormatInt(int64(x), 10)}
	case int64:
		return map[string]any{"intValue": strconv.FormatInt(x, 10)}
	case uint32:
		return map[string]any{"intValue": strconv.FormatUint(uint64(x), 10)}
	case float64:
		return map[string]any{"doubleValue": x}
	case float32:
		return map[string]any{"doubleValue": float64(x)}
	case []string:
		vals := make([]any, len(x))
		for i, s := range x {
			vals[i] = map[string]any{"stringValue": s}
		}
		return map[string]any{"arrayValue": map[string]any{"values": vals}}
	case nil:
		return map[string]any{"stringValue": ""}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]any{"stringValue": fmt.Sprint(v)}
	}
	return map[string]any{"stringValue": string(b)}
}

func nanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand never fails on supported platforms; keep ids non-zero.
		for i := range b {
			b[i] = byte(i + 1)
		}
	}
	return hex.EncodeToString(b)
}
