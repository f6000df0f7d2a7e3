package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// pieces splits s into n pieces of about the same length.
func pieces(s string, n int) []string {
	var out []string
	size := (len(s) + n - 1) / n
	for len(s) > 0 {
		k := min(size, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// sseServer answers each request with the events events(n) returns, one
// write and flush each; a request whose body lacks "stream": true fails.
type sseServer struct {
	srv      *httptest.Server
	mu       sync.Mutex
	n        int
	canceled chan struct{}
}

func newSSE(t *testing.T, events func(n int) []string, hold bool) *sseServer {
	s := &sseServer{canceled: make(chan struct{}, 4)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		if body["stream"] != true && !strings.Contains(r.URL.Path, "streamGenerateContent") {
			http.Error(w, `{"error":{"message":"not a streamed request"}}`, 400)
			return
		}
		s.mu.Lock()
		n := s.n
		s.n++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, e := range events(n) {
			fmt.Fprintf(w, "data: %s\n\n", e)
			fl.Flush()
		}
		if hold {
			select {
			case <-r.Context().Done():
				s.canceled <- struct{}{}
			case <-time.After(10 * time.Second):
			}
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func openAIEvents(answer string, n int) []string {
	var out []string
	for _, p := range pieces(answer, n) {
		b, _ := json.Marshal(map[string]any{"id": "c", "model": "gpt-4o-mini", "choices": []any{map[string]any{"delta": map[string]any{"content": p}}}})
		out = append(out, string(b))
	}
	out = append(out, `{"choices":[{"delta":{},"finish_reason":"stop"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":20}}`, "[DONE]")
	return out
}

func anthropicEvents(answer string, n int) []string {
	out := []string{`{"type":"message_start","message":{"id":"m","model":"claude-sonnet-4-6","usage":{"input_tokens":50}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"output","input":{}}}`}
	for _, p := range pieces(answer, n) {
		b, _ := json.Marshal(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		out = append(out, string(b))
	}
	return append(out, `{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}`, `{"type":"message_stop"}`)
}

func geminiEvents(answer string, n int) []string {
	var out []string
	ps := pieces(answer, n)
	for i, p := range ps {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": p}}}}
		if i == len(ps)-1 {
			c["finishReason"] = "STOP"
		}
		b, _ := json.Marshal(map[string]any{"candidates": []any{c}, "usageMetadata": map[string]any{"promptTokenCount": 50, "candidatesTokenCount": 20}})
		out = append(out, string(b))
	}
	return out
}

// collect runs a Stream to its end.
func collect[T any](seq func(func(Partial[T], error) bool)) ([]Partial[T], error) {
	var out []Partial[T]
	for p, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Rule 19: each built-in provider streams over SSE — at least 5 deltas
// before Final, partial values along the way; a failed attempt yields its
// violations (Retry) and the next attempt streams; the Final value is
// checked; the trace is a Call's.
func TestStreamDeltasRetryFinal(t *testing.T) {
	bad := `{"label":"positive","confidence":0.3}`
	good := `{"label":"positive","confidence":0.9}`
	for _, c := range []struct {
		name, env string
		events    func(string, int) []string
	}{
		{"openai/gpt-4o-mini", "OPENAI", openAIEvents},
		{"anthropic/claude-sonnet-4-6", "ANTHROPIC", anthropicEvents},
		{"gemini/gemini-2.5-flash", "GEMINI", geminiEvents},
	} {
		t.Run(c.env, func(t *testing.T) {
			srv := newSSE(t, func(n int) []string {
				if n == 0 {
					return c.events(bad, 6)
				}
				return c.events(good, 6)
			}, false)
			t.Setenv("STRATUM_HOME", t.TempDir())
			env := map[string]string{c.env + "_BASE_URL": srv.srv.URL, c.env + "_API_KEY": "k", "STRATUM_MODEL": c.name}
			rt, err := New(Options{Getenv: func(k string) string { return env[k] }, Stderr: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(context.Background())
			ctx := WithRuntime(context.Background(), rt)
			fn := classify(t, Spec[textIn, sentiment]{Ensure: []Check[sentiment]{
				Ensure("confidence above 0.5", func(s sentiment) bool { return s.Confidence > 0.5 })}})
			got, err := collect(fn.Stream(ctx, textIn{Text: "nice"}))
			if err != nil {
				t.Fatal(err)
			}
			var deltas1, deltas2 int
			var retry []string
			var text1 strings.Builder
			sawPartial := false
			for _, p := range got {
				switch {
				case p.Retry != nil:
					retry = p.Retry
				case p.Final:
				case p.Attempt == 1:
					deltas1++
					text1.WriteString(p.Delta)
					sawPartial = sawPartial || p.Value.Label == "positive"
				case p.Attempt == 2:
					deltas2++
				}
			}
			last := got[len(got)-1]
			if deltas1 < 5 || deltas2 < 5 || text1.String() != bad || !sawPartial ||
				len(retry) != 1 || retry[0] != "confidence above 0.5" || !last.Final || last.Value.Confidence != 0.9 || last.Attempt != 2 {
				t.Fatalf("%d+%d deltas, retry %v, last %+v, text %q, partial %v", deltas1, deltas2, retry, last, text1.String(), sawPartial)
			}
			if tr := rt.Trace()[0]; tr.Attempts != 2 || tr.InputTokens != 100 || tr.OutputTokens != 40 || len(tr.Violations) != 1 {
				t.Fatalf("trace %+v", tr)
			}
		})
	}
}

// Rule 19: breaking out of the loop cancels the request in flight (the
// server sees the connection end) and leaves no goroutine behind.
func TestStreamBreakCancels(t *testing.T) {
	srv := newSSE(t, func(int) []string { return openAIEvents(`{"label":"posi`, 3)[:3] }, true)
	t.Setenv("STRATUM_HOME", t.TempDir())
	env := map[string]string{"OPENAI_BASE_URL": srv.srv.URL, "OPENAI_API_KEY": "k", "STRATUM_MODEL": "openai/gpt-4o-mini"}
	rt, err := New(Options{Getenv: func(k string) string { return env[k] }, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	ctx := WithRuntime(context.Background(), rt)
	fn := classify(t, Spec[textIn, sentiment]{})
	before := ourGoroutines()
	n := 0
	start := time.Now()
	for p, err := range fn.Stream(ctx, textIn{Text: "x"}) {
		if err != nil {
			t.Fatal(err)
		}
		if p.Delta != "" {
			n++
			break
		}
	}
	took := time.Since(start)
	select {
	case <-srv.canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the request was not cancelled")
	}
	if n != 1 || took > 5*time.Second {
		t.Fatalf("%d deltas, %s", n, took)
	}
	if after := goroutinesAfter(before); after > before {
		t.Fatalf("goroutines %d → %d:\n%s", before, after, strings.Join(goroutineStacks(), "\n\n"))
	}
	if tr := rt.Trace(); len(tr) != 1 || !strings.Contains(tr[0].Error, "context canceled") {
		t.Fatalf("trace %+v", tr)
	}
}

// Rule 19: a Model that does not stream yields one Final element; an
// error ends the sequence.
func TestStreamWithoutStreamingModel(t *testing.T) {
	ctx := modelRuntime(t, "double/v1", modelFunc(func(context.Context, *ModelRequest) (*ModelResponse, error) {
		return textAnswer(`{"label":"neutral","confidence":0.8}`, 1, 1, 0), nil
	}), Options{})
	got, err := collect(classify(t, Spec[textIn, sentiment]{}).Stream(ctx, textIn{Text: "x"}))
	if err != nil || len(got) != 1 || !got[0].Final || got[0].Value.Label != "neutral" {
		t.Fatalf("%+v, %v", got, err)
	}
	ctx = modelRuntime(t, "double/v1", modelFunc(func(context.Context, *ModelRequest) (*ModelResponse, error) {
		return nil, errors.New("down")
	}), Options{})
	_, err = collect(classify(t, Spec[textIn, sentiment]{}).Stream(ctx, textIn{Text: "x"}))
	var pe *ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v", err)
	}
}

// decodePrefix decodes what a prefix of a JSON answer says so far.
func TestDecodePrefix(t *testing.T) {
	for _, c := range []struct {
		text string
		want sentiment
		ok   bool
	}{
		{``, sentiment{}, false},
		{`{"lab`, sentiment{}, true},
		{`{"label":"pos`, sentiment{Label: "pos"}, true},
		{`{"label":"positive","confid`, sentiment{Label: "positive"}, true},
		{`{"label":"positive","confidence":0.`, sentiment{Label: "positive"}, true},
		{`{"label":"positive","confidence":0.9}`, sentiment{Label: "positive", Confidence: 0.9}, true},
	} {
		got, ok := decodePrefix[sentiment](c.text)
		if ok != c.ok || got != c.want {
			t.Errorf("%q: %+v %v", c.text, got, ok)
		}
	}
}
