package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
)

// otlpSink collects the spans POSTed to it.
type otlpSink struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []map[string]any
}

func newOTLPSink(t *testing.T) *otlpSink {
	s := &otlpSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []map[string]any `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		json.Unmarshal(b, &body)
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, rs := range body.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				s.spans = append(s.spans, ss.Spans...)
			}
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// Rule 6: spans flow → infer NAME → chat MODEL, a retry event per retry on
// the infer span; one trace record per Call, failed ones too.
func TestSpansAndTrace(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.1}`, `{"label":"positive","confidence":0.9}`)
	sink := newOTLPSink(t)
	env := fake.env()
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = sink.srv.URL
	var seen []CallTrace
	rt, ctx := fake.runtime(t, Options{Getenv: func(k string) string { return env[k] }, OnCall: func(c CallTrace) { seen = append(seen, c) }})
	f := classify(t, Spec[textIn, sentiment]{Ensure: []Check[sentiment]{Ensure("confident", func(s sentiment) bool { return s.Confidence > 0.5 })}})
	flow := NewFlow("triage", Budget{}, func(ctx context.Context, in textIn) (sentiment, error) { return f.Call(ctx, in) })
	if _, err := flow.Run(ctx, textIn{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	byName := map[string][]map[string]any{}
	for _, s := range sink.spans {
		byName[s["name"].(string)] = append(byName[s["name"].(string)], s)
	}
	flowSp, inferSp, chats := byName["flow triage"], byName["infer classify"], byName["chat gpt-4o-mini"]
	if len(flowSp) != 1 || len(inferSp) != 1 || len(chats) != 2 {
		t.Fatalf("spans: %v", byName)
	}
	if inferSp[0]["parentSpanId"] != flowSp[0]["spanId"] || chats[0]["parentSpanId"] != inferSp[0]["spanId"] || chats[1]["parentSpanId"] != inferSp[0]["spanId"] {
		t.Fatal("span tree is not flow → infer → chat")
	}
	evs, _ := inferSp[0]["events"].([]any)
	if len(evs) != 1 || evs[0].(map[string]any)["name"] != "retry" {
		t.Fatalf("infer events: %v", evs)
	}
	if len(seen) != 1 || seen[0].Attempts != 2 || seen[0].FlowID == "" || seen[0].ContractHash != f.ContractHash() || seen[0].PromptHash == "" {
		t.Fatalf("OnCall records: %+v", seen)
	}
}

// Record then replay: the same exchanges answer the calls with no server
// and no key.
func TestRecordAndReplay(t *testing.T) {
	fake := newFake(t, `{"label":"negative","confidence":0.8}`)
	file := filepath.Join(t.TempDir(), "calls.replay")
	rt, ctx := fake.runtime(t, Options{Record: file})
	f := classify(t, Spec[textIn, sentiment]{})
	want, err := f.Call(ctx, textIn{Text: "meh"})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close(context.Background())

	t.Setenv("STRATUM_HOME", t.TempDir())
	rp, err := New(Options{Replay: file, Getenv: func(k string) string {
		if k == "STRATUM_MODEL" {
			return "openai/gpt-4o-mini"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close(context.Background())
	got, err := f.Call(WithRuntime(context.Background(), rp), textIn{Text: "meh"})
	if err != nil || got != want {
		t.Fatalf("replayed %+v, %v; recorded %+v", got, err, want)
	}
	// a call the recording does not hold is a clear error
	_, err = f.Call(WithRuntime(context.Background(), rp), textIn{Text: "something else"})
	if err == nil || !errors.Is(err, ErrStratum) {
		t.Fatalf("replay miss: %v", err)
	}
	if _, err := New(Options{Replay: file, Record: file}); err == nil {
		t.Fatal("Record and Replay together accepted")
	}
}
