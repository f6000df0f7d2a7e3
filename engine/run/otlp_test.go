package run

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

// The runner's spans reach a real OTLP/HTTP receiver: the flow as root, the
// steps as its children, a retry as a span event.
func TestRunExportsOTLPSpans(t *testing.T) {
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
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		for _, rs := range body.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
	}))
	defer srv.Close()
	exp := otlp.New(otlp.Config{Endpoint: srv.URL + "/v1/traces", Interval: 10 * time.Millisecond})
	e := newEnv(t)
	sp := e.spec(`version: "0.2"
flows:
  main:
    input: {}
    steps:
      - {id: a, intent: "a", retries: 2, run: "echo $STRATUM_ATTEMPT", ensure: ["result == 2"]}
      - {id: b, intent: "b", run: "echo 1"}
`)
	o := e.start(sp, "main", nil, func(o *Options) { o.Tracer = exp.Tracker() })
	wantStatus(t, o, EndComplete, 0)
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	byName := map[string]map[string]any{}
	for _, s := range spans {
		byName[s["name"].(string)] = s
	}
	var root map[string]any
	for _, s := range spans {
		if p, _ := s["parentSpanId"].(string); p == "" {
			root = s
		}
	}
	if root == nil || len(spans) != 3 {
		t.Fatalf("spans: %v", spans)
	}
	children := 0
	retry := false
	for _, s := range spans {
		if s["parentSpanId"] == root["spanId"] {
			children++
		}
		evs, _ := s["events"].([]any)
		for _, ev := range evs {
			if m, _ := ev.(map[string]any); m["name"] == "retry" {
				retry = true
			}
		}
	}
	if children != 2 || !retry {
		t.Fatalf("children %d retry %v: %v", children, retry, spans)
	}
}
