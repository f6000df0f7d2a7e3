package llm

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// closedPort returns a loopback address nothing listens on (connection
// refused).
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// A provider that refuses connections fails as *UnreachableError after
// Retry.UnreachableTries (3) tries, in about a second with the default
// policy (it took the six tries of the whole backoff before, ~15 s per
// call); one whose name does not exist or whose TLS fails is not retried.
func TestUnreachableProvider(t *testing.T) {
	t.Run("connection refused, default policy", func(t *testing.T) {
		c := &OpenAI{Name: "openai", BaseURL: "http://" + closedPort(t) + "/v1"}
		start := time.Now()
		_, err := c.Complete(context.Background(), Request{Model: "m", Prompt: "p"})
		took := time.Since(start)
		var down *UnreachableError
		if !errors.As(err, &down) || down.Reason != "connection refused" || down.Tries != 3 || down.Permanent ||
			!strings.HasPrefix(err.Error(), "provider unreachable: openai at 127.0.0.1:") {
			t.Fatalf("err = %v", err)
		}
		if took > 3*time.Second {
			t.Fatalf("refused connections took %s (want about a second: 3 tries)", took)
		}
		t.Logf("connection refused: %d tries in %s", down.Tries, took.Round(time.Millisecond))
	})
	t.Run("DNS: no such host", func(t *testing.T) {
		var dials atomic.Int32
		client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return nil, &net.DNSError{Err: "no such host", Name: "llm.invalid", IsNotFound: true}
		}}}
		c := &OpenAI{Name: "acme", BaseURL: "http://llm.invalid/v1", Client: client, Retry: testRetry(&noSleep{})}
		_, err := c.Complete(context.Background(), Request{Model: "m", Prompt: "p"})
		var down *UnreachableError
		if !errors.As(err, &down) || down.Reason != "DNS" || !down.Permanent || dials.Load() != 1 || down.Host != "llm.invalid" {
			t.Fatalf("err = %v after %d dials", err, dials.Load())
		}
	})
	t.Run("TLS: certificate not trusted", func(t *testing.T) {
		var n atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake the client refused
		srv.StartTLS()
		defer srv.Close()
		c := &OpenAI{Name: "openai", BaseURL: srv.URL + "/v1", Client: &http.Client{}, Retry: testRetry(&noSleep{})}
		_, err := c.Complete(context.Background(), Request{Model: "m", Prompt: "p"})
		var down *UnreachableError
		if !errors.As(err, &down) || down.Reason != "TLS" || !down.Permanent || down.Tries != 1 || n.Load() != 0 {
			t.Fatalf("err = %v", err)
		}
	})
}

// hugeAnswer answers HTTP 200 with size bytes of a JSON answer, with a
// Content-Length or (declare false) chunked, counting the requests.
func hugeAnswer(t *testing.T, size int, declare bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	chunk := []byte(strings.Repeat("x", 1<<20))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if declare {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
				return // the client stopped reading
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// allocated returns the bytes allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// An HTTP 200 answer of 40 MiB is refused once, "answer larger than 32
// MiB", never re-sent (one Call re-sent the paid request 5 times before):
// refused before it is read when it declares its length, after reading at
// most the limit when it does not, in memory about the limit.
func TestOversizedAnswerRefusedOnce(t *testing.T) {
	for _, declare := range []bool{true, false} {
		srv, n := hugeAnswer(t, 40<<20, declare)
		c := &OpenAI{Name: "openai", BaseURL: srv.URL + "/v1"}
		var err error
		alloc := allocated(func() { _, err = c.Complete(context.Background(), Request{Model: "m", Prompt: "p"}) })
		var big *TooLargeError
		if !errors.As(err, &big) || err.Error() != "openai: answer larger than 32 MiB (refused, not re-sent)" || n.Load() != 1 {
			t.Fatalf("declared %v: err = %v after %d requests", declare, err, n.Load())
		}
		limit := uint64(MaxResponseBytes + 2<<20)
		if declare {
			limit = 4 << 20 // nothing of the body is read
		}
		if alloc > limit {
			t.Errorf("declared %v: %d MiB allocated for one refused answer (limit %d MiB)", declare, alloc>>20, limit>>20)
		}
		t.Logf("declared %v: 1 request, %.1f MiB allocated", declare, float64(alloc)/(1<<20))
	}
}

// Concurrent calls that all get an oversized answer hold at most the limit
// each: 40 calls, a 1 MiB limit and 40 MiB answers allocate about 40 MiB
// in all, one request each.
func TestOversizedAnswersConcurrently(t *testing.T) {
	saved := maxResponseBytes
	maxResponseBytes = 1 << 20
	t.Cleanup(func() { maxResponseBytes = saved })
	srv, n := hugeAnswer(t, 40<<20, false)
	c := &OpenAI{Name: "openai", BaseURL: srv.URL + "/v1"}
	const calls = 40
	var refused atomic.Int32
	alloc := allocated(func() {
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				_, err := c.Complete(context.Background(), Request{Model: "m", Prompt: "p"})
				if errors.As(err, new(*TooLargeError)) {
					refused.Add(1)
				}
			})
		}
		wg.Wait()
	})
	if refused.Load() != calls || n.Load() != calls {
		t.Fatalf("%d of %d refused, %d requests", refused.Load(), calls, n.Load())
	}
	if bound := uint64(calls) * (1<<20 + 512<<10); alloc > bound {
		t.Errorf("%d calls allocated %d MiB (bound %d MiB: the limit × calls)", calls, alloc>>20, bound>>20)
	}
	t.Logf("%d calls, 1 MiB limit: %.1f MiB allocated", calls, float64(alloc)/(1<<20))
}

// The retries that stop before the caller's deadline say so, with the
// time left (a 15 s deadline was reported as "timed out after 5m0s").
func TestRetriesStopBeforeTheDeadline(t *testing.T) {
	// The first backoff (Base/2 to 3·Base/2 with jitter: at least 10 s) is
	// always longer than what is left of the 5 s deadline, however slowly a
	// loaded machine serves the first attempt (a tighter schedule failed
	// under load with the context's own error, mid-request).
	srv := newFake(t, reply(503, `{"error":"busy"}`))
	c := &OpenAI{Name: "openai", BaseURL: srv.URL, Retry: Retry{Base: 20 * time.Second, Max: time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Complete(ctx, Request{Model: "m", Prompt: "p"})
	var te *TransportError
	if !errors.As(err, &te) || !te.Deadline || te.Status != 503 || !strings.Contains(err.Error(), "would pass the deadline") {
		t.Fatalf("err = %v", err)
	}
}
