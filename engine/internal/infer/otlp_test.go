package infer

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/internal/otlp"
)

// TestInferSpan checks the executor's chat span: a CLIENT child of the step
// span in ctx, with GenAI and stratum attributes and a retry event.
func TestInferSpan(t *testing.T) {
	var mu sync.Mutex
	var spans []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []map[string]any `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range body.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}))
	defer srv.Close()
	exp := otlp.New(otlp.Config{Endpoint: srv.URL, Interval: time.Hour})
	tr := exp.Tracker()
	tr.FlowStarted("flow-1", "main", "")
	ctx := tr.StepStarted(context.Background(), "flow-1", "s1", 2)

	sp := parse(t, classifySpec)
	fp := &fakeProvider{answers: []fakeAnswer{{content: `{"label":"positive","confidence":0.9}`}}}
	if _, err := New(&fakeModels{p: fp}).Execute(ctx, request(sp, 2, []string{"ensure: result.confidence > 0.7"})); err != nil {
		t.Fatal(err)
	}
	tr.StepEnded("flow-1", "s1", "passed", nil)
	tr.FlowEnded("flow-1", "complete", "")
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, s := range spans {
		byName[s["name"].(string)] = s
	}
	chat, step := byName["chat model-1"], byName["step s1"]
	if chat == nil || step == nil {
		t.Fatalf("spans: %v", byName)
	}
	if chat["parentSpanId"] != step["spanId"] || chat["kind"] != float64(otlp.KindClient) {
		t.Fatalf("chat span: %v", chat)
	}
	attrs := map[string]map[string]any{}
	for _, a := range chat["attributes"].([]any) {
		m := a.(map[string]any)
		attrs[m["key"].(string)] = m["value"].(map[string]any)
	}
	for key, want := range map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "fake", "gen_ai.request.model": "model-1",
		"stratum.function": "classify", "stratum.step_id": "s1", "stratum.compiled_prompt_hash": nil, "stratum.contract_hash": sp.Contracts["Sentiment"].Hash,
	} {
		v, ok := attrs[key]
		if !ok || (want != nil && v["stringValue"] != want) {
			t.Errorf("attribute %s = %v, want %v", key, v, want)
		}
	}
	if attrs["gen_ai.usage.input_tokens"]["intValue"] != "1000" || attrs["gen_ai.usage.output_tokens"]["intValue"] != "100" {
		t.Errorf("usage attributes: %v %v", attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"])
	}
	evs, _ := chat["events"].([]any)
	if len(evs) != 1 || evs[0].(map[string]any)["name"] != "retry" {
		t.Errorf("events: %v", evs)
	}
}
