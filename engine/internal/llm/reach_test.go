package llm

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Reach (stratum doctor's provider check): one GET of the base URL, no key
// and no model call; any HTTP answer counts; a refused connection, a name
// that does not resolve and a provider silent past ReachTimeout (2 s) are
// said in a few words, the last within the bound.
func TestReach(t *testing.T) {
	var got *http.Request
	answers := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		w.WriteHeader(http.StatusNotFound)
	}))
	defer answers.Close()
	if status, err := Reach(context.Background(), nil, answers.URL+"/v1"); err != nil || status != 404 {
		t.Fatalf("an answering provider: %d, %v", status, err)
	}
	if got.Method != http.MethodGet || got.URL.Path != "/v1" || got.Header.Get("Authorization") != "" || got.ContentLength > 0 {
		t.Fatalf("the request: %s %s, Authorization %q, %d bytes", got.Method, got.URL.Path, got.Header.Get("Authorization"), got.ContentLength)
	}

	if _, err := Reach(context.Background(), nil, "http://"+closedPort(t)+"/v1"); err == nil || err.Error() != "connection refused" {
		t.Fatalf("a closed port: %v", err)
	}

	noDNS := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no such host", Name: "llm.invalid", IsNotFound: true}
	}}}
	if _, err := Reach(context.Background(), noDNS, "http://llm.invalid/v1"); err == nil || err.Error() != "the name llm.invalid does not resolve" {
		t.Fatalf("no such host: %v", err)
	}

	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	defer close(release)
	start := time.Now()
	_, err := Reach(context.Background(), nil, silent.URL+"/v1")
	took := time.Since(start)
	if err == nil || err.Error() != "no answer within 2s" {
		t.Fatalf("a silent provider: %v", err)
	}
	if took < ReachTimeout || took > ReachTimeout+10*time.Second {
		t.Fatalf("a silent provider took %s, want about %s", took, ReachTimeout)
	}
}
