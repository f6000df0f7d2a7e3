package infer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
)

const openAISpec = `version: "0.2"
contracts:
  Label:
    label: {type: string}
functions:
  classify:
    mode: infer
    intent: "Classify the text"
    input: {text: {type: string}}
    output: Label
    model: openai/gpt-4o-mini
flows:
  main:
    input: {text: {type: string}}
    steps:
      - id: s1
        function: classify
        inputs: {text: "$.input.text"}
`

// stallingServer answers 200 and the start of a body, then stalls until the
// client gives up.
func stallingServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		io.WriteString(w, `{"id": "chatcmpl-1", "choices": [`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Without an ms budget, a provider that stalls its response body ends the
// attempt at the call timeout (STRATUM_LLM_TIMEOUT here; llm_timeout in
// config; 5 minutes by default), with a violation that says it timed out. It
// held the attempt for about 12 minutes (6 tries of 120 s) before.
func TestStalledBodyTimesOut(t *testing.T) {
	srv := stallingServer(t)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL + "/v1", "STRATUM_LLM_TIMEOUT": "300ms"}
	ex, err := NewExecutor(Setup{Getenv: func(k string) string { return env[k] }, CallTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sp := parse(t, openAISpec)
	flow := sp.Flows["main"]
	start := time.Now()
	_, err = ex.Execute(context.Background(), engine.StepRequest{FlowID: "f", Spec: sp, Flow: flow, Step: flow.Step("s1"),
		Inputs: map[string]any{"text": "hi"}, Attempt: 1})
	elapsed := time.Since(start)
	var ae *engine.AttemptError
	if !errors.As(err, &ae) || ae.Kind != engine.AttemptTimeout || len(ae.Violations) != 1 ||
		!strings.Contains(ae.Violations[0], "timed out after 300ms") || !strings.Contains(ae.Violations[0], "openai/gpt-4o-mini") {
		t.Fatalf("err = %v (%#v), want a timeout violation", err, ae)
	}
	if elapsed > 10*time.Second {
		t.Fatalf("the attempt took %v", elapsed)
	}
}

func TestCallTimeoutSetup(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	ex, err := NewExecutor(Setup{Getenv: getenv})
	if err != nil || ex.CallTimeout != DefaultCallTimeout {
		t.Fatalf("default: %v, %v", ex, err)
	}
	ex, _ = NewExecutor(Setup{Getenv: getenv, CallTimeout: 90 * time.Second})
	if ex.CallTimeout != 90*time.Second {
		t.Fatalf("config llm_timeout: %v", ex.CallTimeout)
	}
	env["STRATUM_LLM_TIMEOUT"] = "10m"
	ex, _ = NewExecutor(Setup{Getenv: getenv, CallTimeout: 90 * time.Second})
	if ex.CallTimeout != 10*time.Minute {
		t.Fatalf("STRATUM_LLM_TIMEOUT must override llm_timeout: %v", ex.CallTimeout)
	}
	for _, bad := range []string{"soon", "-1s", "0"} {
		env["STRATUM_LLM_TIMEOUT"] = bad
		if _, err := NewExecutor(Setup{Getenv: getenv}); err == nil || !strings.Contains(err.Error(), "STRATUM_LLM_TIMEOUT") {
			t.Errorf("STRATUM_LLM_TIMEOUT=%s: %v", bad, err)
		}
	}
}
