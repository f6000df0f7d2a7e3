package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer answers with the queued handlers in order (the last repeats)
// and records every request body.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []map[string]any
	headers  []http.Header
	handlers []http.HandlerFunc
	n        atomic.Int32
}

func newFake(t *testing.T, handlers ...http.HandlerFunc) *fakeServer {
	f := &fakeServer{handlers: handlers}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		f.mu.Lock()
		f.bodies = append(f.bodies, m)
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		i := int(f.n.Add(1)) - 1
		if i >= len(f.handlers) {
			i = len(f.handlers) - 1
		}
		f.handlers[i](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) requests() int { return int(f.n.Load()) }

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func openAIAnswer(content string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "model": "gpt-4o-mini-2024-07-18",
		"choices": []any{map[string]any{"finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20,
			"prompt_tokens_details": map[string]any{"cached_tokens": 40}, "completion_tokens_details": map[string]any{"reasoning_tokens": 5}},
	})
	return string(b)
}

func anthropicAnswer(input string, stop string) string {
	content := []any{}
	if input != "" {
		content = append(content, map[string]any{"type": "tool_use", "id": "tu_1", "name": "output", "input": json.RawMessage(input)})
	}
	b, _ := json.Marshal(map[string]any{
		"id": "msg_1", "model": "claude-sonnet-4-6", "stop_reason": stop, "content": content,
		"usage": map[string]any{"input_tokens": 50, "output_tokens": 10, "cache_read_input_tokens": 7, "cache_creation_input_tokens": 3},
	})
	return string(b)
}

var sentiment = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"label":      map[string]any{"type": "string", "enum": []any{"positive", "negative", "neutral"}},
		"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
		"note":       map[string]any{"type": "string", "minLength": 3},
	},
	"required": []any{"label", "confidence"},
}

// noSleep records the waits instead of sleeping.
type noSleep struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (n *noSleep) sleep(ctx context.Context, d time.Duration) error {
	n.mu.Lock()
	n.waits = append(n.waits, d)
	n.mu.Unlock()
	return ctx.Err()
}

func testRetry(s *noSleep) Retry {
	return Retry{MaxTries: 4, Base: time.Millisecond, Max: 5 * time.Millisecond, TryTimeout: 2 * time.Second, Sleep: s.sleep}
}

func TestOpenAISuccessAndRequestShape(t *testing.T) {
	srv := newFake(t, reply(200, openAIAnswer(`{"label":"positive","confidence":0.9,"note":null}`)))
	c := &OpenAI{Name: "openai", BaseURL: srv.URL + "/v1", APIKey: "sk-test", MaxTokensField: "max_completion_tokens"}
	resp, err := c.Complete(context.Background(), Request{Model: "gpt-4o-mini", System: "sys", Prompt: "Classify", Schema: sentiment, MaxTokens: 99,
		Attachment: map[string]any{"doc": "secret <b>"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != `{"label":"positive","confidence":0.9,"note":null}` || resp.Tries != 1 {
		t.Fatalf("resp = %+v", resp)
	}
	// Usage: disjoint buckets (prompt 100 includes 40 cached; completion 20 includes 5 reasoning).
	if want := (Usage{Input: 60, CacheRead: 40, Output: 15, Reasoning: 5}); resp.Usage != want {
		t.Fatalf("usage = %+v, want %+v", resp.Usage, want)
	}
	h := srv.headers[0]
	if h.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("auth header = %q", h.Get("Authorization"))
	}
	body := srv.bodies[0]
	if body["max_completion_tokens"] != float64(99) || body["model"] != "gpt-4o-mini" {
		t.Fatalf("body = %v", body)
	}
	rf := body["response_format"].(map[string]any)
	js := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["strict"] != true || js["name"] != "output" {
		t.Fatalf("response_format = %v", rf)
	}
	schema := js["schema"].(map[string]any)
	if schema["additionalProperties"] != false {
		t.Fatalf("additionalProperties not false: %v", schema)
	}
	req := schema["required"].([]any)
	if len(req) != 3 {
		t.Fatalf("required = %v, want all three properties", req)
	}
	note := schema["properties"].(map[string]any)["note"].(map[string]any)
	if tt, _ := note["type"].([]any); len(tt) != 2 || tt[1] != "null" {
		t.Fatalf("optional note not nullable: %v", note)
	}
	if _, ok := note["minLength"]; ok || !strings.Contains(note["description"].(string), "minLength: 3") {
		t.Fatalf("minLength not moved into the description: %v", note)
	}
	conf := schema["properties"].(map[string]any)["confidence"].(map[string]any)
	if conf["maximum"] != float64(1) {
		t.Fatalf("maximum should be kept for OpenAI: %v", conf)
	}
	msgs := body["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "system" {
		t.Fatalf("messages = %v", msgs)
	}
	parts := msgs[1].(map[string]any)["content"].([]any)
	if len(parts) != 2 || parts[0].(map[string]any)["text"] != "Classify" ||
		parts[1].(map[string]any)["text"] != "Attached data (JSON):\n{\"doc\":\"secret <b>\"}" {
		t.Fatalf("user parts = %v", parts)
	}
}

func TestAnthropicSuccessAndRequestShape(t *testing.T) {
	srv := newFake(t, reply(200, anthropicAnswer(`{"label":"neutral","confidence":0.5}`, "tool_use")))
	c := &Anthropic{BaseURL: srv.URL, APIKey: "ak"}
	resp, err := c.Complete(context.Background(), Request{Model: "claude-sonnet-4-6", System: "sys", Prompt: "Classify", Schema: sentiment})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.FromTool || resp.Content != `{"label":"neutral","confidence":0.5}` {
		t.Fatalf("resp = %+v", resp)
	}
	if want := (Usage{Input: 50, Output: 10, CacheRead: 7, CacheWrite: 3}); resp.Usage != want {
		t.Fatalf("usage = %+v", resp.Usage)
	}
	h := srv.headers[0]
	if h.Get("x-api-key") != "ak" || h.Get("anthropic-version") != AnthropicVersion || h.Get("Authorization") != "" {
		t.Fatalf("headers = %v", h)
	}
	body := srv.bodies[0]
	// No token budget: the model's output limit (Anthropic requires a value).
	if body["max_tokens"] != float64(64_000) || body["system"] != "sys" {
		t.Fatalf("body = %v", body)
	}
	tc := body["tool_choice"].(map[string]any)
	if tc["type"] != "tool" || tc["name"] != "output" {
		t.Fatalf("tool_choice = %v", tc)
	}
	tool := body["tools"].([]any)[0].(map[string]any)
	is := tool["input_schema"].(map[string]any)
	conf := is["properties"].(map[string]any)["confidence"].(map[string]any)
	if _, ok := conf["maximum"]; ok || !strings.Contains(conf["description"].(string), "maximum: 1") {
		t.Fatalf("numeric constraints not trimmed into the description: %v", conf)
	}
	if req := is["required"].([]any); len(req) != 2 {
		t.Fatalf("anthropic schema must keep the original required list: %v", req)
	}
}

func TestTransportRetries(t *testing.T) {
	ok := reply(200, openAIAnswer(`{"x":1}`))
	cases := []struct {
		name     string
		handlers []http.HandlerFunc
		wantTry  int
		wantWait time.Duration // first wait, when set exactly (Retry-After)
	}{
		{"429 with Retry-After then success", []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "2")
			reply(429, `{"error":{"message":"rate limited"}}`)(w, r)
		}, ok}, 2, 2 * time.Second},
		{"5xx twice then success", []http.HandlerFunc{reply(500, `oops`), reply(503, `{"error":"busy"}`), ok}, 3, 0},
		{"529 overloaded then success", []http.HandlerFunc{reply(529, `{"error":{"type":"overloaded_error","message":"Overloaded"}}`), ok}, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, tc.handlers...)
			s := &noSleep{}
			c := &OpenAI{Name: "openai", BaseURL: srv.URL, Retry: testRetry(s)}
			resp, err := c.Complete(context.Background(), Request{Model: "m", Prompt: "p"})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Tries != tc.wantTry || srv.requests() != tc.wantTry || len(s.waits) != tc.wantTry-1 {
				t.Fatalf("tries = %d, requests = %d, waits = %v", resp.Tries, srv.requests(), s.waits)
			}
			if tc.wantWait != 0 && s.waits[0] != tc.wantWait {
				t.Fatalf("first wait = %v, want Retry-After %v", s.waits[0], tc.wantWait)
			}
		})
	}
}

func TestTransportTimeoutIsRetried(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}, reply(200, openAIAnswer(`{"x":1}`)))
	s := &noSleep{}
	pol := testRetry(s)
	pol.TryTimeout = 50 * time.Millisecond
	c := &OpenAI{Name: "openai", BaseURL: srv.URL, Retry: pol}
	resp, err := c.Complete(context.Background(), Request{Model: "m", Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Tries != 2 {
		t.Fatalf("tries = %d", resp.Tries)
	}
}

func TestTransportGivesUp(t *testing.T) {
	t.Run("max tries", func(t *testing.T) {
		srv := newFake(t, reply(502, `bad gateway`))
		c := &OpenAI{Name: "groq", BaseURL: srv.URL, Retry: testRetry(&noSleep{})}
		_, err := c.Complete(context.Background(), Request{Model: "m", Prompt: "p"})
		var te *TransportError
		if !errors.As(err, &te) || te.Tries != 4 || !strings.Contains(err.Error(), "HTTP 502") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("deadline bounds the backoff", func(t *testing.T) {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "30")
			reply(429, `{}`)(w, r)
		})
		c := &OpenAI{Name: "openai", BaseURL: srv.URL, Retry: testRetry(&noSleep{})}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.Complete(ctx, Request{Model: "m", Prompt: "p"})
		var te *TransportError
		if !errors.As(err, &te) || srv.requests() != 1 || !strings.Contains(err.Error(), "deadline") {
			t.Fatalf("err = %v, requests = %d", err, srv.requests())
		}
	})
}

func TestClientErrorFailsFast(t *testing.T) {
	for _, status := range []int{400, 401, 404} {
		srv := newFake(t, reply(status, `{"error":{"type":"invalid_request_error","message":"response_format json_schema is not supported"}}`))
		c := &OpenAI{Name: "groq", BaseURL: srv.URL, Retry: testRetry(&noSleep{})}
		_, err := c.Complete(context.Background(), Request{Model: "m", Prompt: "p"})
		var api *APIError
		if !errors.As(err, &api) || api.Status != status || srv.requests() != 1 || !strings.Contains(err.Error(), "not supported") {
			t.Fatalf("status %d: err = %v, requests = %d", status, err, srv.requests())
		}
	}
}

func TestRefusalAndTruncation(t *testing.T) {
	refusal := `{"choices":[{"finish_reason":"stop","message":{"content":null,"refusal":"I can't help with that."}}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`
	length := `{"choices":[{"finish_reason":"length","message":{"content":"{\"a\": "}}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`
	cases := []struct {
		name    string
		p       func(url string) Provider
		body    string
		refusal bool
	}{
		{"openai refusal", func(u string) Provider { return &OpenAI{Name: "openai", BaseURL: u} }, refusal, true},
		{"openai length", func(u string) Provider { return &OpenAI{Name: "openai", BaseURL: u} }, length, false},
		{"anthropic refusal", func(u string) Provider { return &Anthropic{BaseURL: u} }, anthropicAnswer("", "refusal"), true},
		{"anthropic max_tokens", func(u string) Provider { return &Anthropic{BaseURL: u} }, anthropicAnswer("", "max_tokens"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, reply(200, tc.body))
			_, err := tc.p(srv.URL).Complete(context.Background(), Request{Model: "m", Prompt: "p"})
			var re *RefusalError
			var te *TruncatedError
			if tc.refusal && (!errors.As(err, &re) || re.Usage.Total() == 0) {
				t.Fatalf("want a refusal with usage, got %v", err)
			}
			if !tc.refusal && (!errors.As(err, &te) || te.Usage.Total() == 0) {
				t.Fatalf("want truncation with usage, got %v", err)
			}
		})
	}
}

func TestCost(t *testing.T) {
	prices := DefaultPrices()
	u := Usage{Input: 1_000_000, CacheRead: 1_000_000, Output: 500_000, Reasoning: 500_000}
	cases := []struct {
		name     string
		info     ProviderInfo
		model    string
		reported *float64
		want     *float64
	}{
		{"known openai", KnownProviders["openai"], "gpt-4o-mini", nil, ptr(0.15 + 0.075 + 0.6)},
		{"known anthropic by prefix", KnownProviders["anthropic"], "claude-sonnet-4-6", nil, ptr(3 + 0.3 + 15)},
		{"unknown model", KnownProviders["openai"], "gpt-unknown-9", nil, nil},
		{"local", KnownProviders["ollama"], "llama3.2", nil, ptr(0)},
		{"openrouter reported", KnownProviders["openrouter"], "meta-llama/llama-3-70b", ptr(0.0123), ptr(0.0123)},
		{"openrouter by vendor", KnownProviders["openrouter"], "openai/gpt-4o-mini", nil, ptr(0.15 + 0.075 + 0.6)},
	}
	for _, tc := range cases {
		got := prices.Cost(tc.info, tc.model, u, tc.reported)
		if (got == nil) != (tc.want == nil) || (got != nil && abs(*got-*tc.want) > 1e-9) {
			t.Errorf("%s: cost = %v, want %v", tc.name, deref(got), deref(tc.want))
		}
	}
	if prices.Snapshot == "" || prices.Source == "" {
		t.Error("price table must record its source and snapshot date")
	}
}

func TestOpenRouterUsageCost(t *testing.T) {
	srv := newFake(t, reply(200, `{"choices":[{"finish_reason":"stop","message":{"content":"{}"}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"cost":0.00042}}`))
	r := NewRouter(Config{Getenv: env(map[string]string{"OPENROUTER_API_KEY": "k", "OPENROUTER_BASE_URL": srv.URL})})
	tg, err := r.Resolve("openrouter/anthropic/claude-sonnet-4-6")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tg.Provider.Complete(context.Background(), Request{Model: tg.Model, Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	cost := r.Prices().Cost(tg.Info, tg.Model, resp.Usage, resp.ProviderCostUSD)
	if cost == nil || *cost != 0.00042 {
		t.Fatalf("cost = %v", deref(cost))
	}
	prov := srv.bodies[0]["provider"].(map[string]any)
	if prov["require_parameters"] != true || srv.bodies[0]["model"] != "anthropic/claude-sonnet-4-6" {
		t.Fatalf("body = %v", srv.bodies[0])
	}
}

func TestRouter(t *testing.T) {
	r := NewRouter(Config{DefaultModel: "openai/gpt-4o-mini", Getenv: env(map[string]string{"MYLAB_BASE_URL": "http://lab/v1"})})
	if got := r.Choose("", "anthropic/x"); got != "anthropic/x" {
		t.Fatalf("Choose = %q", got)
	}
	if got := r.Choose("", ""); got != "openai/gpt-4o-mini" {
		t.Fatalf("Choose default = %q", got)
	}
	errCases := map[string]string{
		"":                   "no model configured",
		"gpt-4o":             "write provider/model",
		"openai/gpt-4o":      "needs OPENAI_API_KEY",
		"anthropic/claude-x": "needs ANTHROPIC_API_KEY",
		"nosuch/model":       "unknown provider",
	}
	for model, want := range errCases {
		_, err := r.Resolve(model)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%q) = %v, want a ConfigError containing %q", model, err, want)
		}
	}
	for _, model := range []string{"ollama/llama3.2", "mylab/qwen", "llama.cpp/any"} {
		tg, err := r.Resolve(model)
		if err != nil {
			t.Errorf("Resolve(%q): %v", model, err)
			continue
		}
		if model == "mylab/qwen" && tg.Provider.(*OpenAI).BaseURL != "http://lab/v1" {
			t.Errorf("base URL override not applied: %+v", tg.Provider)
		}
	}
	nk := NewRouter(Config{NoKeys: true, Getenv: env(nil)})
	if _, err := nk.Resolve("openai/gpt-4o"); err != nil {
		t.Errorf("NoKeys router must not require keys: %v", err)
	}
}

func TestStrictSchemaProjection(t *testing.T) {
	in := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"type": "string"}}}, "uniqueItems": true},
			"kind":  map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
			"level": map[string]any{"type": "string", "enum": []any{"a", "b"}},
		},
		"required": []any{"tags"},
	}
	out, strict := StrictSchema(in)
	if !strict {
		t.Fatal("schema should be strict-capable")
	}
	props := out["properties"].(map[string]any)
	item := props["tags"].(map[string]any)["items"].(map[string]any)
	if item["additionalProperties"] != false || len(item["required"].([]any)) != 1 {
		t.Fatalf("nested object not projected: %v", item)
	}
	if _, ok := props["kind"].(map[string]any)["anyOf"]; !ok {
		t.Fatalf("optional oneOf should become a nullable anyOf: %v", props["kind"])
	}
	level := props["level"].(map[string]any)
	if e := level["enum"].([]any); len(e) != 3 || e[2] != nil {
		t.Fatalf("optional enum must admit null: %v", level)
	}
	if _, ok := in["properties"].(map[string]any)["level"].(map[string]any)["type"].(string); !ok {
		t.Fatal("the input schema was modified")
	}
	if _, strict := StrictSchema(map[string]any{"type": "object", "properties": map[string]any{"m": map[string]any{"type": "object"}}}); strict {
		t.Fatal("a free-form object cannot be strict")
	}
	// Mapping back drops the nulls the projection introduced.
	v := map[string]any{"tags": []any{}, "level": nil, "kind": nil}
	DropOptionalNulls(in, v)
	if _, ok := v["level"]; ok || len(v) != 1 {
		t.Fatalf("DropOptionalNulls = %v", v)
	}
}

func TestRecordReplay(t *testing.T) {
	srv := newFake(t, reply(429, `{}`), reply(200, openAIAnswer(`{"label":"positive","confidence":0.9}`)))
	file := filepath.Join(t.TempDir(), "run.replay.json")
	rec, err := NewRecorder(file)
	if err != nil {
		t.Fatal(err)
	}
	getenv := env(map[string]string{"OPENAI_API_KEY": "sk-secret", "OPENAI_BASE_URL": srv.URL})
	r := NewRouter(Config{Getenv: getenv, HTTPClient: &http.Client{Transport: rec}, Retry: testRetry(&noSleep{})})
	req := Request{Model: "gpt-4o-mini", Prompt: "Classify: great", Schema: sentiment}
	tg, err := r.Resolve("openai/gpt-4o-mini")
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithPromptHash(context.Background(), "abc123def456")
	want, err := tg.Provider.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ex := rec.Exchanges()
	if len(ex) != 1 || ex[0].Status != 200 || ex[0].PromptHash != "abc123def456" || ex[0].Model != "gpt-4o-mini" {
		t.Fatalf("recorded = %+v (the 429 must not be recorded)", ex)
	}
	raw, _ := jsonFile(file)
	if strings.Contains(raw, "sk-secret") {
		t.Fatal("the record file contains the API key")
	}
	srv.Close() // replay must not need the network

	rp, err := NewReplayer(file)
	if err != nil {
		t.Fatal(err)
	}
	r2 := NewRouter(Config{NoKeys: true, Getenv: env(nil), HTTPClient: &http.Client{Transport: rp}, Retry: testRetry(&noSleep{})})
	tg2, err := r2.Resolve("openai/gpt-4o-mini")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the last answer repeats
		got, err := tg2.Provider.Complete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != want.Content || got.Usage != want.Usage {
			t.Fatalf("replayed %+v, want %+v", got, want)
		}
	}
	changed := req
	changed.Prompt = "Classify: awful"
	_, err = tg2.Provider.Complete(WithPromptHash(context.Background(), "ffffffffffff"), changed)
	var miss *ReplayMissError
	if !errors.As(err, &miss) || !strings.Contains(err.Error(), "no recorded response for request") ||
		!strings.Contains(err.Error(), "model gpt-4o-mini") || !strings.Contains(err.Error(), "prompt hash ffffffffffff") {
		t.Fatalf("err = %v", err)
	}
}

func TestCanonicalRequestIgnoresKeyOrder(t *testing.T) {
	_, h1, _, err := CanonicalRequest("POST", "/v1/chat/completions", []byte(`{"a":1,"b":{"y":2,"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, h2, _, _ := CanonicalRequest("POST", "/v1/chat/completions", []byte(`{"b":{"x":1,"y":2},"a":1}`))
	_, h3, _, _ := CanonicalRequest("POST", "/v1/chat/completions", []byte(`{"b":{"x":1,"y":3},"a":1}`))
	if h1 != h2 || h1 == h3 {
		t.Fatalf("hashes %s %s %s", h1, h2, h3)
	}
}

func ptr(f float64) *float64 { return &f }

func deref(p *float64) any {
	if p == nil {
		return "nil"
	}
	return *p
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func jsonFile(path string) (string, error) {
	b, err := osReadFile(path)
	return string(b), err
}

func TestConnectionResetIsRetried(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Fatal("no hijacker")
		}
		conn, _, _ := hj.Hijack()
		conn.Close() // drop the connection without an answer
	}, reply(200, anthropicAnswer(`{"ok":true}`, "tool_use")))
	c := &Anthropic{BaseURL: srv.URL, Retry: testRetry(&noSleep{})}
	resp, err := c.Complete(context.Background(), Request{Model: "claude-sonnet-4-6", Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Tries != 2 || resp.Content != `{"ok":true}` {
		t.Fatalf("resp = %+v", resp)
	}
}

func TestOllamaHost(t *testing.T) {
	r := NewRouter(Config{Getenv: env(map[string]string{"OLLAMA_HOST": "gpu-box:11434"})})
	tg, err := r.Resolve("ollama/llama3.2")
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.Provider.(*OpenAI).BaseURL; got != "http://gpu-box:11434/v1" {
		t.Fatalf("base URL = %s", got)
	}
}
