package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine/internal/redact"
)

// Retry policy of the transport layer (see Retry).
type Retry struct {
	// MaxTries bounds the HTTP requests of one Complete (default 6).
	MaxTries int
	// Base is the first backoff (default 500ms); it doubles each try, with
	// ±50% jitter, capped at Max (default 20s).
	Base, Max time.Duration
	// TryTimeout bounds one HTTP request (default 120s); a try that times out
	// is retried.
	TryTimeout time.Duration
	// Sleep waits (tests replace it); nil = a timer honouring ctx.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (r Retry) withDefaults() Retry {
	if r.MaxTries <= 0 {
		r.MaxTries = 6
	}
	if r.Base <= 0 {
		r.Base = 500 * time.Millisecond
	}
	if r.Max <= 0 {
		r.Max = 20 * time.Second
	}
	if r.TryTimeout <= 0 {
		r.TryTimeout = 120 * time.Second
	}
	if r.Sleep == nil {
		r.Sleep = sleepCtx
	}
	return r
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// maxResponseBytes caps a provider answer.
const maxResponseBytes = 32 << 20

// retryable says whether an HTTP status is a transport error worth retrying.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout ||
		status == 409 || status == 529 || status >= 500
}

// post sends body to url with headers, retrying transport errors. It returns
// the final 2xx body, or an *APIError (non-retryable status), a
// *TransportError (retries ran out) or ctx's error.
func post(ctx context.Context, client *http.Client, provider, url string, headers map[string]string, body []byte, pol Retry) ([]byte, int, error) {
	pol = pol.withDefaults()
	if client == nil {
		client = http.DefaultClient
	}
	// A provider may echo the key it was sent (`Incorrect API key provided:
	// sk-…`): mask it in every message made from its answers.
	red := redact.New(credentials(headers)...)
	errorMessage := func(b []byte) string { return red.String(errorMessage(b)) }
	var last string
	for try := 1; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, try - 1, err
		}
		status, respBody, hdr, err := postOnce(ctx, client, url, headers, body, pol.TryTimeout)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, try, ctx.Err()
			}
			var miss *ReplayMissError
			if errors.As(err, &miss) {
				return nil, try, miss
			}
			last = red.String(err.Error())
		case status >= 200 && status < 300:
			return respBody, try, nil
		case retryable(status):
			last = fmt.Sprintf("HTTP %d: %s", status, errorMessage(respBody))
			wait = retryAfter(hdr)
		default:
			return nil, try, &APIError{Provider: provider, Status: status, Message: errorMessage(respBody)}
		}
		if try >= pol.MaxTries {
			return nil, try, &TransportError{Provider: provider, Tries: try, Last: last}
		}
		if wait <= 0 {
			wait = backoff(pol, try)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, try, &TransportError{Provider: provider, Tries: try, Deadline: true,
				Last: last + fmt.Sprintf(" (next retry in %s would pass the deadline)", wait.Round(time.Millisecond))}
		}
		if err := pol.Sleep(ctx, wait); err != nil {
			return nil, try, err
		}
	}
}

func backoff(pol Retry, try int) time.Duration {
	d := pol.Base << (try - 1)
	if d > pol.Max || d <= 0 {
		d = pol.Max
	}
	// ±50% jitter.
	j := time.Duration(rand.Int64N(int64(d)))
	return d/2 + j
}

// retryAfter parses a Retry-After header (seconds or an HTTP date); 0 when
// absent or unparsable. Values are capped at 60s.
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		if ms := h.Get("retry-after-ms"); ms != "" {
			if n, err := strconv.ParseFloat(ms, 64); err == nil && n >= 0 {
				return capWait(time.Duration(n * float64(time.Millisecond)))
			}
		}
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
		return capWait(time.Duration(n * float64(time.Second)))
	}
	if t, err := http.ParseTime(v); err == nil {
		return capWait(time.Until(t))
	}
	return 0
}

func capWait(d time.Duration) time.Duration {
	if d > 60*time.Second {
		return 60 * time.Second
	}
	if d < 0 {
		return 0
	}
	return d
}

func postOnce(ctx context.Context, client *http.Client, url string, headers map[string]string, body []byte, timeout time.Duration) (int, []byte, http.Header, error) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(tctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return 0, nil, nil, fmt.Errorf("request timed out after %s", timeout)
		}
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading the response: %w", err)
	}
	if len(b) > maxResponseBytes {
		return 0, nil, nil, fmt.Errorf("response larger than %d bytes", maxResponseBytes)
	}
	return resp.StatusCode, b, resp.Header, nil
}

// credentials are the values of the authentication headers of a request
// (Authorization, x-api-key, api-key, …).
func credentials(headers map[string]string) []string {
	var out []string
	for k, v := range headers {
		switch strings.ToLower(k) {
		case "authorization", "x-api-key", "api-key", "proxy-authorization", "x-goog-api-key":
			out = append(out, v)
		}
	}
	return out
}

// credentialHeaders are the values of a request's authentication headers.
func credentialHeaders(h http.Header) []string {
	m := map[string]string{}
	for k := range h {
		m[k] = h.Get(k)
	}
	return credentials(m)
}

// errorMessage extracts a provider's error message ({"error":{"message":…}}
// for both dialects, or {"error":"…"}), else a prefix of the body.
func errorMessage(b []byte) string {
	var v struct {
		Error any `json:"error"`
	}
	if err := jsonUnmarshal(b, &v); err == nil {
		switch e := v.Error.(type) {
		case string:
			return e
		case map[string]any:
			if m, ok := e["message"].(string); ok {
				if t, ok := e["type"].(string); ok && t != "" {
					return t + ": " + m
				}
				return m
			}
		}
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}
