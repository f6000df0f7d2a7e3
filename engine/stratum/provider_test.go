package stratum

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// runtimeAt is a Runtime whose model is openai/gpt-4o-mini at baseURL.
func runtimeAt(t *testing.T, baseURL string) context.Context {
	t.Helper()
	t.Setenv("STRATUM_HOME", t.TempDir())
	env := map[string]string{"OPENAI_BASE_URL": baseURL, "OPENAI_API_KEY": "test-key", "STRATUM_MODEL": "openai/gpt-4o-mini"}
	rt, err := New(Options{Getenv: func(k string) string { return env[k] }, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return WithRuntime(context.Background(), rt)
}

// Rule 17: a provider that refuses connections fails the Call as a
// *ProviderError (not a *ParseError) after the transport's few bounded
// tries, in under 5 s with the default settings and Retries: 1 (about 53 s
// before: every attempt ran the whole transport backoff).
func TestUnreachableProviderIsAProviderError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx := runtimeAt(t, "http://"+addr+"/v1")
	f := classify(t, Spec[textIn, sentiment]{Retries: 1})
	start := time.Now()
	_, err = f.Call(ctx, textIn{Text: "x"})
	took := time.Since(start)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Provider != "openai" || pe.Model != "openai/gpt-4o-mini" || pe.Status != 0 || !pe.Retryable ||
		!errors.Is(err, ErrStratum) || !strings.Contains(err.Error(), "provider unreachable: openai at "+addr+" (connection refused)") {
		t.Fatalf("err = %v (%T)", err, err)
	}
	if errors.As(err, new(*ParseError)) {
		t.Error("a provider failure is a *ParseError")
	}
	if took > 5*time.Second {
		t.Fatalf("the Call took %s", took)
	}
	t.Logf("unreachable provider: %s", took.Round(time.Millisecond))
}

// An HTTP 200 answer of 40 MiB is refused once ("answer larger than 32
// MiB"): one request, never re-sent (5 before), a *ProviderError that is
// not retryable.
func TestOversizedAnswerIsRefusedOnce(t *testing.T) {
	var requests atomic.Int32
	chunk := []byte(strings.Repeat(" ", 1<<20))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		for range 40 { // chunked: no length declared, so it is read up to the limit
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	ctx := runtimeAt(t, srv.URL)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := classify(t, Spec[textIn, sentiment]{}).Call(ctx, textIn{Text: "x"})
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Status != 200 || pe.Retryable || !strings.Contains(err.Error(), "answer larger than 32 MiB") || requests.Load() != 1 {
		t.Fatalf("err = %v after %d requests", err, requests.Load())
	}
}
