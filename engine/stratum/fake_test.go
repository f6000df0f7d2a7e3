package stratum

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeLLM is an OpenAI-compatible chat server scripted per request: the
// n-th request (counted from 0, in arrival order) gets replies[n] (the
// last one repeats), or what answer returns when it is set.
type fakeLLM struct {
	srv *httptest.Server

	mu      sync.Mutex
	replies []string
	answer  func(n int, prompt string) string
	delay   time.Duration
	bodies  []map[string]any
	prompts []string
}

// newFake starts a scripted server; it is closed when the test ends.
func newFake(tb testing.TB, replies ...string) *fakeLLM {
	f := &fakeLLM{replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(f.srv.Close)
	return f
}

func (f *fakeLLM) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	prompt := promptOf(body)
	f.mu.Lock()
	n := len(f.prompts)
	f.bodies = append(f.bodies, body)
	f.prompts = append(f.prompts, prompt)
	delay, answer := f.delay, f.answer
	content := ""
	if answer == nil && len(f.replies) > 0 {
		content = f.replies[min(n, len(f.replies)-1)]
	}
	f.mu.Unlock()
	if answer != nil {
		content = answer(n, prompt)
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	resp, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("c%d", n), "model": "gpt-4o-mini",
		"choices": []any{map[string]any{"finish_reason": "stop", "message": map[string]any{"content": content}}},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 10}})
	w.Write(resp)
}

// promptOf returns the user turn's instruction text.
func promptOf(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] != "user" {
			continue
		}
		parts, _ := mm["content"].([]any)
		if len(parts) > 0 {
			p, _ := parts[0].(map[string]any)
			s, _ := p["text"].(string)
			return s
		}
	}
	return ""
}

// requests returns the prompts received so far.
func (f *fakeLLM) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.prompts...)
}

// env is the environment of a runtime over the fake.
func (f *fakeLLM) env() map[string]string {
	return map[string]string{"OPENAI_BASE_URL": f.srv.URL, "OPENAI_API_KEY": "test-key", "STRATUM_MODEL": "openai/gpt-4o-mini"}
}

// runtime returns a Runtime over the fake with opts (Getenv, Stderr set
// when empty) in a temporary STRATUM_HOME, and a context carrying it.
func (f *fakeLLM) runtime(tb testing.TB, opts Options) (*Runtime, context.Context) {
	tb.Helper()
	if t, ok := tb.(*testing.T); ok {
		t.Setenv("STRATUM_HOME", t.TempDir())
	}
	env := f.env()
	if opts.Getenv == nil {
		opts.Getenv = func(k string) string { return env[k] }
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	rt, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close(context.Background()) })
	return rt, WithRuntime(context.Background(), rt)
}

// lines returns the prompt's lines after its first line that starts with
// from.
func after(prompt, from string) string {
	i := strings.Index(prompt, from)
	if i < 0 {
		return ""
	}
	return prompt[i:]
}
