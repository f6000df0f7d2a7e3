package otlp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// receiver is an OTLP/HTTP JSON test collector.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []rSpan
	headers []http.Header
	status  int
}

type rAttr struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

type rSpan struct {
	TraceID      string  `json:"traceId"`
	SpanID       string  `json:"spanId"`
	ParentSpanID string  `json:"parentSpanId"`
	Name         string  `json:"name"`
	Kind         int     `json:"kind"`
	Start        string  `json:"startTimeUnixNano"`
	End          string  `json:"endTimeUnixNano"`
	Attributes   []rAttr `json:"attributes"`
	Events       []struct {
		Name       string  `json:"name"`
		Time       string  `json:"timeUnixNano"`
		Attributes []rAttr `json:"attributes"`
	} `json:"events"`
	Status struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
	service string
}

func (s rSpan) attr(key string) map[string]any {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return nil
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(404)
			return
		}
		b, _ := io.ReadAll(req.Body)
		var body struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []rAttr `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []rSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("receiver: bad JSON: %v", err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.headers = append(r.headers, req.Header.Clone())
		if r.status != 200 {
			w.WriteHeader(r.status)
			return
		}
		for _, rs := range body.ResourceSpans {
			svc := ""
			for _, a := range rs.Resource.Attributes {
				if a.Key == "service.name" {
					svc, _ = a.Value["stringValue"].(string)
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					sp.service = svc
					r.spans = append(r.spans, sp)
				}
			}
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) byName() map[string]rSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]rSpan{}
	for _, s := range r.spans {
		out[s.Name] = s
	}
	return out
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
		"OTEL_EXPORTER_OTLP_HEADERS":  "Authorization=Bearer%20tok, x-team = ai",
		"OTEL_SERVICE_NAME":           "ci",
	}
	cfg, ok := ConfigFromEnv(func(k string) string { return env[k] })
	if !ok || cfg.Endpoint != "http://collector:4318/v1/traces" || cfg.Headers["Authorization"] != "Bearer tok" ||
		cfg.Headers["x-team"] != "ai" || cfg.ServiceName != "ci" {
		t.Fatalf("cfg = %+v", cfg)
	}
	env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://other/traces"
	if cfg, _ := ConfigFromEnv(func(k string) string { return env[k] }); cfg.Endpoint != "http://other/traces" {
		t.Fatalf("traces endpoint not preferred: %s", cfg.Endpoint)
	}
	if _, ok := ConfigFromEnv(func(string) string { return "" }); ok {
		t.Fatal("no endpoint must disable export")
	}
}

func TestTrackerSpans(t *testing.T) {
	rcv := newReceiver(t, 200)
	exp := New(Config{Endpoint: rcv.URL + "/v1/traces", Headers: map[string]string{"x-key": "v"}, ServiceName: "svc", Interval: time.Hour})
	tr := exp.Tracker()
	ctx := context.Background()

	tr.FlowStarted("F1", "main", "")
	sctx := tr.StepStarted(ctx, "F1", "classify", 1)
	call := SpanFromContext(sctx).Child("chat gpt-4o-mini", KindClient)
	call.Set(AttrOperationName, "chat")
	call.Set(AttrProviderName, "openai")
	call.Set(AttrRequestModel, "gpt-4o-mini")
	call.Set(AttrInputTokens, int64(312))
	call.Set(AttrOutputTokens, int64(48))
	call.Set(AttrCostUSD, 0.00034)
	call.Set(AttrCacheHit, false)
	call.End(nil)
	tr.AttemptFailed("F1", "classify", 1, []string{"ensure: result.confidence > 0.7 (actual: 0.42)"})
	tr.StepStarted(ctx, "F1", "classify", 2)
	tr.StepEnded("F1", "classify", "passed", nil)
	// A child flow nests under the parent's open step.
	tr.StepStarted(ctx, "F1", "sub", 1)
	tr.FlowStarted("F2", "child", "F1")
	tr.FlowEnded("F2", "complete", "")
	tr.StepEnded("F1", "sub", "failed", []string{"boom"})
	tr.FlowEnded("F1", "failed", "step sub failed")
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	spans := rcv.byName()
	flow, step, chat, sub, child := spans["flow main"], spans["step classify"], spans["chat gpt-4o-mini"], spans["step sub"], spans["flow child"]
	if flow.SpanID == "" || step.SpanID == "" || chat.SpanID == "" || child.SpanID == "" {
		t.Fatalf("missing spans: %v", spans)
	}
	if len(flow.TraceID) != 32 || len(flow.SpanID) != 16 || flow.ParentSpanID != "" {
		t.Fatalf("root ids: %+v", flow)
	}
	for _, s := range []rSpan{step, chat, sub, child} {
		if s.TraceID != flow.TraceID {
			t.Fatalf("%s is in another trace", s.Name)
		}
	}
	if step.ParentSpanID != flow.SpanID || chat.ParentSpanID != step.SpanID || sub.ParentSpanID != flow.SpanID || child.ParentSpanID != sub.SpanID {
		t.Fatalf("parent links wrong: step→%s chat→%s sub→%s child→%s (flow %s step %s sub %s)",
			step.ParentSpanID, chat.ParentSpanID, sub.ParentSpanID, child.ParentSpanID, flow.SpanID, step.SpanID, sub.SpanID)
	}
	if chat.Kind != int(KindClient) || step.Kind != int(KindInternal) {
		t.Fatalf("kinds: chat %d step %d", chat.Kind, step.Kind)
	}
	if chat.attr("gen_ai.operation.name")["stringValue"] != "chat" || chat.attr("gen_ai.provider.name")["stringValue"] != "openai" ||
		chat.attr("gen_ai.request.model")["stringValue"] != "gpt-4o-mini" || chat.attr("gen_ai.usage.input_tokens")["intValue"] != "312" ||
		chat.attr("gen_ai.usage.output_tokens")["intValue"] != "48" || chat.attr("stratum.cost_usd")["doubleValue"] != 0.00034 ||
		chat.attr("stratum.cache_hit")["boolValue"] != false {
		t.Fatalf("chat attributes: %+v", chat.Attributes)
	}
	if chat.attr("gen_ai.system") != nil {
		t.Fatal("deprecated gen_ai.system must not be emitted")
	}
	var retry bool
	for _, ev := range step.Events {
		if ev.Name == "retry" {
			for _, a := range ev.Attributes {
				if a.Key == AttrViolations {
					vals := a.Value["arrayValue"].(map[string]any)["values"].([]any)
					retry = vals[0].(map[string]any)["stringValue"] == "ensure: result.confidence > 0.7 (actual: 0.42)"
				}
			}
		}
	}
	if !retry {
		t.Fatalf("retry event with violations missing: %+v", step.Events)
	}
	if step.Status.Code != 1 || flow.Status.Code != 2 || flow.Status.Message != "step sub failed" || sub.Status.Code != 2 {
		t.Fatalf("statuses: step %d flow %d (%s) sub %d", step.Status.Code, flow.Status.Code, flow.Status.Message, sub.Status.Code)
	}
	if flow.Start == "" || flow.End < flow.Start || flow.service != "svc" {
		t.Fatalf("times/service: %+v", flow)
	}
	if rcv.headers[0].Get("x-key") != "v" {
		t.Fatal("configured headers not sent")
	}
	if exp.Exported() != 5 || exp.Dropped() != 0 {
		t.Fatalf("exported %d dropped %d", exp.Exported(), exp.Dropped())
	}
}

func TestDropOnFailureAndFullQueue(t *testing.T) {
	rcv := newReceiver(t, 503)
	exp := New(Config{Endpoint: rcv.URL + "/v1/traces", Interval: time.Hour})
	sp := exp.StartFlow("F", "main")
	sp.End(errors.New("boom"))
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exp.Dropped() != 1 || exp.Exported() != 0 {
		t.Fatalf("dropped %d exported %d", exp.Dropped(), exp.Exported())
	}
	// Spans ended after shutdown are dropped, never block.
	exp.StartFlow("G", "main").End(nil)
	if exp.Dropped() != 2 {
		t.Fatalf("dropped %d", exp.Dropped())
	}
	// A full queue drops instead of blocking the caller.
	blocked := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-blocked }))
	defer slow.Close()
	defer close(blocked)
	e2 := New(Config{Endpoint: slow.URL, QueueSize: 2, BatchSize: 1, Interval: time.Hour, Client: &http.Client{Timeout: 5 * time.Second}})
	start := time.Now()
	for i := 0; i < 50; i++ {
		e2.StartFlow("F", "x").End(nil)
	}
	if time.Since(start) > time.Second || e2.Dropped() == 0 {
		t.Fatalf("dropped %d in %v", e2.Dropped(), time.Since(start))
	}
}

func TestNilSafety(t *testing.T) {
	var e *Exporter
	var tr = e.Tracker()
	ctx := tr.StepStarted(context.Background(), "f", "s", 1)
	tr.FlowStarted("f", "n", "")
	tr.AttemptFailed("f", "s", 1, nil)
	tr.StepEnded("f", "s", "passed", nil)
	tr.FlowEnded("f", "complete", "")
	sp := SpanFromContext(ctx).Child("x", KindClient)
	sp.Set("k", 1)
	sp.Event("e", nil)
	sp.End(nil)
	if e.Shutdown(context.Background()) != nil || e.Dropped() != 0 {
		t.Fatal("nil exporter must be a no-op")
	}
}
