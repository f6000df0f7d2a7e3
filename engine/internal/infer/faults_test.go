package infer

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/llm"
)

// A provider that cannot be reached stops `stratum run`'s step at once
// with "provider unreachable" (kind config: the run ends, resumable),
// within the transport's bounded retries: under 5 s with the default
// settings; Loop (the library's) makes one attempt of it.
func TestUnreachableProviderStopsTheStep(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://" + addr + "/v1"}
	ex, err := NewExecutor(Setup{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	sp := parse(t, openAISpec)
	flow := sp.Flows["main"]
	start := time.Now()
	_, err = ex.Execute(context.Background(), engine.StepRequest{FlowID: "f", Spec: sp, Flow: flow, Step: flow.Step("s1"),
		Inputs: map[string]any{"text": "hi"}, Attempt: 1})
	took := time.Since(start)
	var ae *engine.AttemptError
	var down *llm.UnreachableError
	if !errors.As(err, &ae) || ae.Kind != engine.AttemptConfig || !strings.HasPrefix(ae.Violations[0], "provider unreachable: openai at "+addr+" (connection refused) after 3 tries") ||
		!errors.As(err, &down) {
		t.Fatalf("err = %v", err)
	}
	if took > 5*time.Second {
		t.Fatalf("the step took %s", took)
	}
	t.Logf("unreachable provider: step failed in %s", took.Round(time.Millisecond))

	res, err := ex.Loop(context.Background(), LoopRequest{AttemptRequest: AttemptRequest{Function: "classify", Models: []string{"openai/gpt-4o-mini"},
		Parts: PromptParts{Intent: "Classify"}}, Retries: 3, Check: func(any) ([]string, bool) { return nil, false }})
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Provider != "openai" || res.Attempts != 1 {
		t.Fatalf("Loop = %v after %d attempts", err, res.Attempts)
	}
}

// Retries the transport stops because the caller's deadline would pass
// are reported as such, not as the call timeout (a 15 s deadline was
// reported "timed out after 5m0s (llm_timeout…)" after 8 s).
func TestCallersDeadlineIsNotTheCallTimeout(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(503)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL + "/v1"}
	ex, err := NewExecutor(Setup{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	sp := parse(t, openAISpec)
	flow := sp.Flows["main"]
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	_, err = ex.Execute(ctx, engine.StepRequest{FlowID: "f", Spec: sp, Flow: flow, Step: flow.Step("s1"),
		Inputs: map[string]any{"text": "hi"}, Attempt: 1})
	var ae *engine.AttemptError
	if !errors.As(err, &ae) || ae.Kind != engine.AttemptTransport || strings.Contains(err.Error(), "5m0s") ||
		!strings.Contains(err.Error(), "would pass the deadline") || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("err = %v", err)
	}

	// The library's loop does not retry what the transport gave up on.
	n.Store(0)
	ctx, cancel = context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	res, err := ex.Loop(ctx, LoopRequest{AttemptRequest: AttemptRequest{Function: "classify", Models: []string{"openai/gpt-4o-mini"},
		Parts: PromptParts{Intent: "Classify"}}, Retries: 3, Check: func(any) ([]string, bool) { return nil, false }})
	var pe *ProviderError
	if !errors.As(err, &pe) || res.Attempts != 1 {
		t.Fatalf("Loop = %v after %d attempts (%d requests)", err, res.Attempts, n.Load())
	}
}

// An oversized answer stops the step once, never re-sent.
func TestOversizedAnswerStopsTheStep(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Length", "41943040")
		w.WriteHeader(200)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL + "/v1"}
	ex, err := NewExecutor(Setup{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	sp := parse(t, openAISpec)
	flow := sp.Flows["main"]
	_, err = ex.Execute(context.Background(), engine.StepRequest{FlowID: "f", Spec: sp, Flow: flow, Step: flow.Step("s1"),
		Inputs: map[string]any{"text": "hi"}, Attempt: 1})
	var ae *engine.AttemptError
	if !errors.As(err, &ae) || ae.Kind != engine.AttemptConfig || !strings.Contains(err.Error(), "answer larger than 32 MiB") || n.Load() != 1 {
		t.Fatalf("err = %v after %d requests", err, n.Load())
	}
}
