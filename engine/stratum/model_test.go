package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// modelFunc is a Model double.
type modelFunc func(ctx context.Context, req *ModelRequest) (*ModelResponse, error)

func (f modelFunc) Generate(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
	return f(ctx, req)
}

// textAnswer is a ModelResponse carrying text.
func textAnswer(text string, in, out int64, cost float64) *ModelResponse {
	return &ModelResponse{Message: Message{Role: RoleAssistant, Parts: []Part{{Text: text}}},
		Usage: Usage{InputTokens: in, OutputTokens: out, CostUSD: cost}, Model: "double-1", FinishReason: "stop"}
}

// noEnv is an environment with nothing set.
func noEnv(string) string { return "" }

// modelRuntime is a Runtime whose only model is m, named name, with no
// environment.
func modelRuntime(t *testing.T, name string, m Model, opts Options) context.Context {
	t.Helper()
	t.Setenv("STRATUM_HOME", t.TempDir())
	opts.Models = map[string]Model{name: m}
	opts.Model = name
	if opts.Getenv == nil {
		opts.Getenv = noEnv
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return WithRuntime(context.Background(), rt)
}

// Rule 17: a custom Model double end to end — it receives the compiled
// prompt and the contract, its answer is checked (a violation retried with
// the feedback), its usage and cost reach the trace and the budget.
func TestCustomModelEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var reqs []*ModelRequest
	double := modelFunc(func(_ context.Context, req *ModelRequest) (*ModelResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, req)
		if len(reqs) == 1 {
			return textAnswer(`{"label":"positive","confidence":0.2}`, 10, 5, 0.001), nil
		}
		return textAnswer(`{"label":"positive","confidence":0.9}`, 10, 5, 0.001), nil
	})
	var traces []CallTrace
	ctx := modelRuntime(t, "double/v1", double, Options{OnCall: func(c CallTrace) { traces = append(traces, c) }})
	f := classify(t, Spec[textIn, sentiment]{Ensure: []Check[sentiment]{
		Ensure("confident", func(s sentiment) bool { return s.Confidence > 0.5 })}})
	got, err := f.Call(ctx, textIn{Text: "great"})
	if err != nil || got.Confidence != 0.9 {
		t.Fatalf("got %+v, %v", got, err)
	}
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	first := reqs[0]
	if first.Model != "v1" || first.Schema == nil || len(first.Messages) != 2 ||
		first.Messages[0].Role != RoleSystem || first.Messages[1].Role != RoleUser {
		t.Fatalf("first request %+v", first)
	}
	if p := first.Messages[1].Parts[0].Text; !strings.Contains(p, "Classify the sentiment") || !strings.Contains(p, "text: great") {
		t.Fatalf("prompt %q", p)
	}
	if p := reqs[1].Messages[1].Parts[0].Text; !strings.Contains(p, "Previous attempt failed:\n  - confident") {
		t.Fatalf("retry prompt %q", p)
	}
	tr := traces[0]
	if tr.Model != "double/v1" || tr.Attempts != 2 || tr.InputTokens != 20 || tr.OutputTokens != 10 || tr.CostUSD == nil || *tr.CostUSD != 0.002 {
		t.Fatalf("trace %+v", tr)
	}
	// The budget is charged with the double's cost: a USD limit below one
	// answer stops the next attempt.
	_, err = classify(t, Spec[textIn, sentiment]{Budget: Budget{USD: 0.0005}, Ensure: []Check[sentiment]{
		Ensure("never", func(sentiment) bool { return false })}}).Call(ctx, textIn{Text: "x"})
	var be *BudgetError
	if !errors.As(err, &be) || be.Reason != "usd" {
		t.Fatalf("err = %v", err)
	}
}

// A Model's error fails the Call at once as a *ProviderError (never a
// parse failure, never retried), its own *ProviderError kept.
func TestCustomModelErrorIsAProviderError(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		retryable bool
	}{
		{"plain", errors.New("backend down"), false},
		{"own", &ProviderError{Status: 503, Retryable: true, Err: errors.New("overloaded")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			ctx := modelRuntime(t, "double/v1", modelFunc(func(context.Context, *ModelRequest) (*ModelResponse, error) {
				calls++
				return nil, tc.err
			}), Options{})
			_, err := classify(t, Spec[textIn, sentiment]{Retries: 3}).Call(ctx, textIn{Text: "x"})
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Model != "double/v1" || pe.Function != "classify" || pe.Retryable != tc.retryable || calls != 1 ||
				!errors.Is(err, ErrStratum) || errors.As(err, new(*ParseError)) {
				t.Fatalf("err = %v (%T) after %d calls", err, err, calls)
			}
		})
	}
}

// Record and replay apply to a custom Model: a recorded run replays without
// calling it.
func TestCustomModelRecordReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rec.jsonl")
	double := modelFunc(func(context.Context, *ModelRequest) (*ModelResponse, error) {
		return textAnswer(`{"label":"neutral","confidence":0.8}`, 3, 4, 0), nil
	})
	ctx := modelRuntime(t, "double/v1", double, Options{Record: file})
	f := classify(t, Spec[textIn, sentiment]{})
	if _, err := f.Call(ctx, textIn{Text: "meh"}); err != nil {
		t.Fatal(err)
	}
	never := modelFunc(func(context.Context, *ModelRequest) (*ModelResponse, error) {
		t.Error("the model was called in replay")
		return nil, errors.New("called")
	})
	ctx = modelRuntime(t, "double/v1", never, Options{Replay: file})
	got, err := f.Call(ctx, textIn{Text: "meh"})
	if err != nil || got.Label != "neutral" {
		t.Fatalf("replay: %+v, %v", got, err)
	}
	if _, err := f.Call(ctx, textIn{Text: "other"}); err == nil || !strings.Contains(err.Error(), "no recorded response") {
		t.Fatalf("a request not recorded: %v", err)
	}
}

// capture is a scripted provider server: it records each request's path,
// headers and body and answers with reply(n).
type capture struct {
	srv     *httptest.Server
	mu      sync.Mutex
	paths   []string
	headers []http.Header
	bodies  []map[string]any
}

func newCapture(t *testing.T, contentType string, reply func(n int, body map[string]any) string) *capture {
	c := &capture{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		c.mu.Lock()
		n := len(c.bodies)
		c.paths = append(c.paths, r.URL.RequestURI())
		c.headers = append(c.headers, r.Header.Clone())
		c.bodies = append(c.bodies, body)
		c.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, reply(n, body))
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capture) body(n int) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bodies[n]
}

func geminiReply(parts ...map[string]any) string {
	b, _ := json.Marshal(map[string]any{"responseId": "r1", "modelVersion": "gemini-2.5-flash",
		"candidates":    []any{map[string]any{"finishReason": "STOP", "content": map[string]any{"role": "model", "parts": parts}}},
		"usageMetadata": map[string]any{"promptTokenCount": 12, "candidatesTokenCount": 7}})
	return string(b)
}

// NewProvider builds the built-in providers from values, with no
// environment: OpenAI-compatible, Anthropic and Gemini, each sending its
// own request shape with its key and extra headers.
func TestNewProviderWithoutEnvironment(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "STRATUM_MODEL"} {
		t.Setenv(k, "")
	}
	openai := newCapture(t, "application/json", func(int, map[string]any) string {
		return `{"id":"c1","model":"gpt-4o-mini","choices":[{"finish_reason":"stop","message":{"content":"{\"label\":\"positive\",\"confidence\":0.9}"}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`
	})
	anthropic := newCapture(t, "application/json", func(int, map[string]any) string {
		return `{"id":"m1","model":"claude-sonnet-4-6","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t1","name":"output","input":{"label":"positive","confidence":0.9}}],"usage":{"input_tokens":10,"output_tokens":5}}`
	})
	gemini := newCapture(t, "application/json", func(int, map[string]any) string {
		return geminiReply(map[string]any{"text": `{"label":"positive","confidence":0.9}`})
	})
	for _, tc := range []struct {
		name, path, keyHeader string
		srv                   *capture
	}{
		{"openai/gpt-4o-mini", "/chat/completions", "Authorization", openai},
		{"anthropic/claude-sonnet-4-6", "/v1/messages", "X-Api-Key", anthropic},
		{"gemini/gemini-2.5-flash", "/models/gemini-2.5-flash:generateContent", "X-Goog-Api-Key", gemini},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewProvider(tc.name, ProviderConfig{BaseURL: tc.srv.srv.URL, APIKey: "k-123", Headers: map[string]string{"X-Team": "blue"}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := modelRuntime(t, tc.name, m, Options{})
			got, err := classify(t, Spec[textIn, sentiment]{}).Call(ctx, textIn{Text: "good"})
			if err != nil || got.Label != "positive" {
				t.Fatalf("got %+v, %v", got, err)
			}
			tc.srv.mu.Lock()
			path, h := tc.srv.paths[len(tc.srv.paths)-1], tc.srv.headers[len(tc.srv.headers)-1]
			tc.srv.mu.Unlock()
			if path != tc.path || !strings.Contains(h.Get(tc.keyHeader), "k-123") || h.Get("X-Team") != "blue" {
				t.Fatalf("path %s, headers %v", path, h)
			}
		})
	}
	body := gemini.body(0)
	gen, _ := body["generationConfig"].(map[string]any)
	if gen["responseMimeType"] != "application/json" || gen["responseJsonSchema"] == nil || body["systemInstruction"] == nil {
		t.Fatalf("gemini body %v", body)
	}
	if _, err := NewProvider("anthropic/claude-sonnet-4-6", ProviderConfig{}); err == nil || !strings.Contains(err.Error(), "needs an API key") {
		t.Fatalf("no key: %v", err)
	}
	if _, err := NewProvider("acme/model-1", ProviderConfig{}); err == nil || !strings.Contains(err.Error(), "BaseURL") {
		t.Fatalf("unknown provider without a base URL: %v", err)
	}
	if _, err := NewProvider("acme/model-1", ProviderConfig{BaseURL: openai.srv.URL}); err != nil {
		t.Fatalf("an OpenAI-compatible server: %v", err)
	}
}

// The Gemini provider is also a built-in one of the environment
// (STRATUM_MODEL=gemini/…, GEMINI_API_KEY, GEMINI_BASE_URL).
func TestGeminiFromEnvironment(t *testing.T) {
	srv := newCapture(t, "application/json", func(int, map[string]any) string {
		return geminiReply(map[string]any{"text": `{"label":"negative","confidence":0.7}`})
	})
	env := map[string]string{"GEMINI_BASE_URL": srv.srv.URL, "GEMINI_API_KEY": "g-key", "STRATUM_MODEL": "gemini/gemini-2.5-flash"}
	t.Setenv("STRATUM_HOME", t.TempDir())
	rt, err := New(Options{Getenv: func(k string) string { return env[k] }, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	got, err := classify(t, Spec[textIn, sentiment]{}).Call(WithRuntime(context.Background(), rt), textIn{Text: "bad"})
	if err != nil || got.Label != "negative" {
		t.Fatalf("got %+v, %v", got, err)
	}
	if tr := rt.Trace()[0]; tr.Model != "gemini/gemini-2.5-flash" || tr.InputTokens != 12 || tr.OutputTokens != 7 ||
		tr.CostUSD == nil || math.Abs(*tr.CostUSD-(12*0.3+7*2.5)/1e6) > 1e-12 {
		t.Fatalf("trace %+v", tr)
	}
}

// Rule 17: the zero Options read the config files as `stratum run` does:
// $STRATUM_HOME/config.yaml's default_model and base_urls.
func TestConfigFileIsRead(t *testing.T) {
	f := newFake(t, `{"label":"positive","confidence":0.95}`)
	home := t.TempDir()
	t.Setenv("STRATUM_HOME", home)
	cfg := fmt.Sprintf("default_model: openai/gpt-4o-mini\nbase_urls:\n  openai: %s\n", f.srv.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": "k"}
	rt, err := New(Options{Getenv: func(k string) string { return env[k] }, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	got, err := classify(t, Spec[textIn, sentiment]{}).Call(WithRuntime(context.Background(), rt), textIn{Text: "x"})
	if err != nil || got.Confidence != 0.95 || len(f.requests()) != 1 {
		t.Fatalf("got %+v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("default_model: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Getenv: noEnv}); err == nil || !strings.Contains(err.Error(), "config") {
		t.Fatalf("a broken config file: %v", err)
	}
}

// Rule 17: a NewProvider Model whose server refuses connections fails the
// Call as a *ProviderError in under 5 s; Options.HTTPClient carries the
// built-in providers' requests.
func TestProviderModelUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	m, err := NewProvider("openai/gpt-4o-mini", ProviderConfig{BaseURL: "http://" + addr + "/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := modelRuntime(t, "openai/gpt-4o-mini", m, Options{})
	start := time.Now()
	_, err = classify(t, Spec[textIn, sentiment]{Retries: 2}).Call(ctx, textIn{Text: "x"})
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Provider != "openai" || !pe.Retryable || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v (%T)", err, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %s", took)
	}
}

// countingTransport counts the requests it carries.
type countingTransport struct {
	mu sync.Mutex
	n  int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// Options.HTTPClient sends the built-in providers' requests.
func TestOptionsHTTPClient(t *testing.T) {
	f := newFake(t, `{"label":"positive","confidence":0.95}`)
	ct := &countingTransport{}
	_, ctx := f.runtime(t, Options{HTTPClient: &http.Client{Transport: ct}})
	if _, err := classify(t, Spec[textIn, sentiment]{}).Call(ctx, textIn{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if ct.n != 1 {
		t.Fatalf("%d requests through the client", ct.n)
	}
}
