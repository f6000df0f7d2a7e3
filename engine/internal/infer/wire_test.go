package infer

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/llm"
)

// TestExecuteOverTheWire runs the executor over the real clients against
// httptest servers speaking each wire format.
func TestExecuteOverTheWire(t *testing.T) {
	openAI := func(content string) string {
		b, _ := json.Marshal(map[string]any{"id": "c1", "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"finish_reason": "stop", "message": map[string]any{"content": content}}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 10}})
		return string(b)
	}
	anthropic := func(input string) string {
		return `{"id":"m1","model":"claude-sonnet-4-6","stop_reason":"tool_use","content":[{"type":"text","text":"Here."},{"type":"tool_use","name":"output","input":` + input + `}],"usage":{"input_tokens":90,"output_tokens":12}}`
	}
	cases := []struct {
		name     string
		model    string
		statuses []int
		bodies   []string
		wantErr  string // AttemptError kind; "" = success
		wantReqs int
		wantCost bool
	}{
		{"openai success after 429", "openai/gpt-4o-mini", []int{429, 200}, []string{`{"error":{"message":"slow down"}}`, openAI(`{"label":"positive","confidence":0.9}`)}, "", 2, true},
		{"openai malformed content", "openai/gpt-4o-mini", []int{200}, []string{openAI(`{"label": "positive", "confidence": 0.9`)}, engine.AttemptParse, 1, true},
		{"anthropic tool answer after 503", "anthropic/claude-sonnet-4-6", []int{503, 200}, []string{`{"error":{"type":"overloaded_error","message":"busy"}}`, anthropic(`{"label":"neutral","confidence":0.8}`)}, "", 2, true},
		{"anthropic 400 fails fast", "anthropic/claude-sonnet-4-6", []int{400}, []string{`{"error":{"type":"invalid_request_error","message":"tools.0.input_schema: invalid"}}`}, engine.AttemptConfig, 1, false},
		{"local model costs zero", "ollama/llama3.2", []int{200}, []string{openAI(`{"label":"negative","confidence":0.75}`)}, "", 1, true},
		{"unknown model cost is unknown", "openai/gpt-next", []int{200}, []string{openAI(`{"label":"negative","confidence":0.75}`)}, "", 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				i := min(int(n.Add(1))-1, len(tc.statuses)-1)
				w.Header().Set("Content-Type", "application/json")
				if tc.statuses[i] == 429 {
					w.Header().Set("Retry-After", "0")
				}
				w.WriteHeader(tc.statuses[i])
				io.WriteString(w, tc.bodies[i])
			}))
			defer srv.Close()
			env := map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k",
				"OPENAI_BASE_URL": srv.URL, "ANTHROPIC_BASE_URL": srv.URL, "OLLAMA_BASE_URL": srv.URL}
			cfg, err := llm.ConfigFromEnv(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			cfg.Retry = llm.Retry{Base: time.Millisecond, Max: 2 * time.Millisecond}
			ex := New(llm.NewRouter(cfg))
			sp := parse(t, strings.Replace(classifySpec, "model: fake/model-1", "model: "+tc.model, 1))
			out, err := ex.Execute(context.Background(), request(sp, 1, nil))
			var ae *engine.AttemptError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.wantErr != "" && (!errors.As(err, &ae) || ae.Kind != tc.wantErr):
				t.Fatalf("err = %v, want kind %s", err, tc.wantErr)
			}
			if int(n.Load()) != tc.wantReqs {
				t.Fatalf("requests = %d, want %d", n.Load(), tc.wantReqs)
			}
			if (out.CostUSD != nil) != tc.wantCost {
				t.Fatalf("cost = %v, want known=%v", out.CostUSD, tc.wantCost)
			}
			if tc.model == "ollama/llama3.2" && *out.CostUSD != 0 {
				t.Fatalf("local cost = %v", *out.CostUSD)
			}
			if tc.wantErr == "" && out.Trace.Attempts != 1 {
				t.Fatalf("transport retries must not count as attempts: %+v", out.Trace)
			}
		})
	}
}
