package llm

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"syscall"
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
	// UnreachableTries bounds the requests of one Complete when the
	// provider cannot be reached (connection refused, host or network
	// unreachable, a DNS failure that may pass; default 3, within
	// MaxTries): a provider that is down fails in about a second, not
	// after the whole backoff. A name that does not resolve or a TLS
	// failure is not retried at all.
	UnreachableTries int
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
	if r.UnreachableTries <= 0 {
		r.UnreachableTries = 3
	}
	r.UnreachableTries = min(r.UnreachableTries, r.MaxTries)
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

// maxResponseBytes caps a provider answer (MaxResponseBytes; a variable
// so that tests can lower it).
var maxResponseBytes = MaxResponseBytes

// MaxResponseBytes is the largest answer read from a provider: a larger
// one is refused once (*TooLargeError), never re-sent, and at most this
// much of it is held in memory per request in flight.
const MaxResponseBytes = 32 << 20

// retryable says whether an HTTP status is a transport error worth retrying.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout ||
		status == 409 || status == 529 || status >= 500
}

// post sends body to url with headers, retrying transport errors. It returns
// the final 2xx body, or an *APIError (non-retryable status), a
// *TransportError (retries ran out), an *UnreachableError (the provider
// could not be reached: refused, DNS, TLS), a *TooLargeError (refused at
// once: never re-sent) or ctx's error.
func post(ctx context.Context, client *http.Client, provider, url string, headers map[string]string, body []byte, pol Retry) ([]byte, int, error) {
	return send(ctx, client, provider, url, headers, body, pol, nil)
}

// send is post, with a 2xx answer's body read by sink when it is set (a
// stream): sink's error ends the request at once, never retried (what it
// read may have been passed on), as a *StreamError.
func send(ctx context.Context, client *http.Client, provider, url string, headers map[string]string, body []byte, pol Retry, sink func(io.Reader) error) ([]byte, int, error) {
	pol = pol.withDefaults()
	if client == nil {
		client = http.DefaultClient
	}
	// A provider may echo the key it was sent (`Incorrect API key provided:
	// sk-…`): mask it in every message made from its answers.
	// The redactor is made on the first error (a request that succeeds
	// at once needs none).
	var red *redact.Redactor
	mask := func(s string) string {
		if red == nil {
			red = redact.New(credentials(headers)...)
		}
		return red.String(s)
	}
	errorMessage := func(b []byte) string { return mask(errorMessage(b)) }
	var last string
	lastStatus := 0
	for try := 1; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, try - 1, err
		}
		status, respBody, hdr, err := postOnce(ctx, client, url, headers, body, pol.TryTimeout, sink)
		var wait time.Duration
		var down *UnreachableError
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, try, ctx.Err()
			}
			var miss *ReplayMissError
			var big *TooLargeError
			var se *StreamError
			switch {
			case errors.As(err, &se):
				se.Provider = provider
				if errors.As(se.Err, &big) {
					big.Provider = provider
				}
				return nil, try, se
			case errors.As(err, &miss):
				return nil, try, miss
			case errors.As(err, &big):
				big.Provider = provider
				return nil, try, big
			}
			last, lastStatus = mask(err.Error()), 0
			if down = unreachable(provider, url, err); down != nil {
				down.Tries, down.Err = try, errors.New(last)
				if down.Permanent || try >= pol.UnreachableTries {
					return nil, try, down
				}
			}
		case status >= 200 && status < 300:
			return respBody, try, nil
		case retryable(status):
			last, lastStatus = fmt.Sprintf("HTTP %d: %s", status, errorMessage(respBody)), status
			wait = retryAfter(hdr)
		default:
			return nil, try, &APIError{Provider: provider, Status: status, Message: errorMessage(respBody)}
		}
		if try >= pol.MaxTries {
			return nil, try, &TransportError{Provider: provider, Tries: try, Last: last, Status: lastStatus}
		}
		if wait <= 0 {
			wait = backoff(pol, try)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			msg := fmt.Sprintf(" (stopped: the next retry, in %s, would pass the deadline, %s away)",
				wait.Round(time.Millisecond), max(time.Until(dl), 0).Round(time.Millisecond))
			if down != nil {
				down.Err = errors.New(last + msg)
				return nil, try, down
			}
			return nil, try, &TransportError{Provider: provider, Tries: try, Deadline: true, Status: lastStatus, Last: last + msg}
		}
		if err := pol.Sleep(ctx, wait); err != nil {
			return nil, try, err
		}
	}
}

// unreachable classifies a request error that means the provider could
// not be reached (nil for any other): connection refused, host or network
// unreachable, a DNS failure (permanent when the name does not exist), a
// TLS failure (permanent: a certificate that does not verify, a server
// that does not speak TLS).
func unreachable(provider, rawURL string, err error) *UnreachableError {
	e := &UnreachableError{Provider: provider, Host: rawURL}
	if u, perr := neturl.Parse(rawURL); perr == nil && u.Host != "" {
		e.Host = u.Host
	}
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var hostname x509.HostnameError
	var authority x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.As(err, &dns):
		e.Reason, e.Permanent = "DNS", dns.IsNotFound
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Reason = "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH):
		e.Reason = "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		e.Reason = "network unreachable"
	case errors.As(err, &cert), errors.As(err, &hostname), errors.As(err, &authority), errors.As(err, &invalid),
		errors.As(err, &record), errors.As(err, &alert):
		e.Reason, e.Permanent = "TLS", true
	default:
		return nil
	}
	return e
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

func postOnce(ctx context.Context, client *http.Client, url string, headers map[string]string, body []byte, timeout time.Duration, sink func(io.Reader) error) (int, []byte, http.Header, error) {
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
	if sink != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		lr := &io.LimitedReader{R: resp.Body, N: int64(maxResponseBytes) + 1}
		err := sink(lr)
		if lr.N <= 0 {
			err = &TooLargeError{Limit: maxResponseBytes}
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				err = fmt.Errorf("request timed out after %s", timeout)
			}
			return 0, nil, nil, &StreamError{Err: err}
		}
		return resp.StatusCode, nil, resp.Header, nil
	}
	b, err := readBounded(resp.Body, resp.ContentLength, maxResponseBytes)
	if err != nil {
		var big *TooLargeError
		if !errors.As(err, &big) {
			err = fmt.Errorf("reading the response: %w", err)
		}
		return 0, nil, nil, err
	}
	return resp.StatusCode, b, resp.Header, nil
}

// readBounded reads a body of at most limit bytes: one that declares more
// (contentLength, -1 when unknown) is refused before anything is read, one
// that turns out longer once limit+1 bytes were read. A body of unknown
// length is read in blocks joined at the end, so a refused one costs at
// most limit+1 bytes of memory and an accepted one about twice its size,
// briefly.
func readBounded(r io.Reader, contentLength int64, limit int) ([]byte, error) {
	if contentLength > int64(limit) {
		return nil, &TooLargeError{Limit: limit, Declared: contentLength}
	}
	if contentLength >= 0 {
		// One buffer of the declared size (+1: the read that sees the end,
		// or a body longer than it declared).
		buf := make([]byte, 0, contentLength+1)
		for {
			n, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			switch {
			case err == io.EOF:
				return buf, nil
			case err != nil:
				return nil, err
			case len(buf) == cap(buf):
				return readBlocks(r, buf, limit) // longer than declared: read on in blocks
			}
		}
	}
	return readBlocks(r, nil, limit)
}

// readBlocks reads r after first in blocks of readBlock bytes, refusing a
// total over limit, and joins them.
func readBlocks(r io.Reader, first []byte, limit int) ([]byte, error) {
	blocks := [][]byte{}
	total := len(first)
	if total > 0 {
		blocks = append(blocks, first)
	}
	for {
		if total > limit {
			return nil, &TooLargeError{Limit: limit}
		}
		b := make([]byte, min(readBlock, limit+1-total))
		n, err := io.ReadFull(r, b)
		if n > 0 {
			blocks = append(blocks, b[:n])
			total += n
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if total > limit {
				return nil, &TooLargeError{Limit: limit}
			}
			return bytes.Join(blocks, nil), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readBlock is the block size of a body of unknown length.
const readBlock = 64 << 10

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
