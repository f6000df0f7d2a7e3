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

// otlpSpan is a span as an OTLP/HTTP JSON receiver sees it.
type otlpSpan struct {
	Name       string `json:"name"`
	SpanID     string `json:"spanId"`
	ParentID   string `json:"parentSpanId"`
	Attributes []struct {
		Key   string `json:"key"`
		Value struct {
			StringValue string `json:"stringValue"`
		} `json:"value"`
	} `json:"attributes"`
	Status struct {
		Code any `json:"code"`
	} `json:"status"`
}

func (s otlpSpan) attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.StringValue
		}
	}
	return ""
}

// otlpReceiver is a real OTLP/HTTP endpoint collecting the spans it is sent.
func otlpReceiver(t *testing.T) (*otlp.Exporter, func() []otlpSpan) {
	var mu sync.Mutex
	var spans []otlpSpan
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []otlpSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("receiver: %v", err)
		}
		mu.Lock()
		for _, rs := range body.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	exp := otlp.New(otlp.Config{Endpoint: srv.URL + "/v1/traces", Interval: 10 * time.Millisecond})
	return exp, func() []otlpSpan {
		if err := exp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]otlpSpan(nil), spans...)
	}
}

// Each task of a fan-out is one span whose parent is the parallel_dispatch
// step's span, naming the task, its step and the state it settled in.
func TestFanOutTaskSpans(t *testing.T) {
	exp, collect := otlpReceiver(t)
	e := newEnv(t)
	sp := e.spec(fanSpec(`{"tasks": [{"id": "a"}, {"id": "b"}, {"id": "bad"}]}`, `        isolation: none
        require: any
        run: |
          [ "$STRATUM_TASK_ID" = bad ] && exit 1
          echo '{}'
`))
	o := e.start(sp, "main", nil, func(o *Options) { o.Tracer = exp.Tracker() })
	wantStatus(t, o, EndComplete, 0)
	spans := collect()
	var step *otlpSpan
	for i, s := range spans {
		if s.attr("stratum.step_id") == "fan" && s.attr("stratum.task_id") == "" {
			if step != nil {
				t.Fatalf("two spans for step fan: %+v", spans)
			}
			step = &spans[i]
		}
	}
	if step == nil {
		t.Fatalf("no span for step fan: %+v", spans)
	}
	got := map[string]string{}
	for _, s := range spans {
		id := s.attr("stratum.task_id")
		if id == "" {
			continue
		}
		if _, dup := got[id]; dup {
			t.Errorf("two spans for task %s", id)
		}
		got[id] = s.attr("stratum.task_state")
		if s.ParentID != step.SpanID {
			t.Errorf("task %s span's parent %q, want the step's span %q", id, s.ParentID, step.SpanID)
		}
		if s.Name != "task "+id || s.attr("stratum.step_id") != "fan" {
			t.Errorf("task span %q step %q", s.Name, s.attr("stratum.step_id"))
		}
	}
	want := map[string]string{"a": "complete", "b": "complete", "bad": "failed"}
	if len(got) != len(want) {
		t.Fatalf("task spans %v, want %v", got, want)
	}
	for id, state := range want {
		if got[id] != state {
			t.Errorf("task %s span state %q, want %q", id, got[id], state)
		}
	}
}
