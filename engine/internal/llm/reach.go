package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"
)

// ReachTimeout bounds Reach: a provider that does not answer within it is
// reported as not answering.
const ReachTimeout = 2 * time.Second

// Reach says whether a provider's base URL answers, without spending a
// token: one GET of the base URL itself (no key sent, no model called),
// bounded by ReachTimeout. Any HTTP answer counts (an API's root often
// answers 404 or 401): status is its code. err says why nothing answered:
// the connection refused, the name not found, the time out, TLS.
func Reach(ctx context.Context, client *http.Client, baseURL string) (status int, err error) {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL, nil)
	if err != nil {
		return 0, fmt.Errorf("%q is not a URL: %w", baseURL, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, reachError(err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// reachError says in a few words why a request got no answer.
func reachError(err error) error {
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("connection refused")
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no answer within %s", ReachTimeout)
	case errors.As(err, &dns):
		return fmt.Errorf("the name %s does not resolve", dns.Name)
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}
