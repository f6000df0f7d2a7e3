package run

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A provider that echoes the API key in its 401 body: the key appears in
// none of stderr, the --json report, the --record file, the store or the
// OTLP payload; the masked form does.
func TestSecretsAreMaskedEverywhere(t *testing.T) {
	const key = "sk-proj-SECRETabcdef0123456789XYZ"
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		msg := "Incorrect API key provided: " + r.Header.Get("Authorization") + " (" + key + ")"
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
	}))
	defer provider.Close()
	var mu sync.Mutex
	var otlpBodies bytes.Buffer
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		otlpBodies.Write(b)
		mu.Unlock()
	}))
	defer receiver.Close()
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("OPENAI_BASE_URL", provider.URL+"/v1")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)
	t.Setenv("STRATUM_MODEL", "")

	e := newEnv(t)
	sp := e.spec(`version: "0.2"
contracts:
  Out:
    answer: {type: string}
flows:
  main:
    input: {}
    steps:
      - id: ask
        intent: "say hello"
        model: openai/gpt-4o-mini
        output_contract: Out
`)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	var stderr bytes.Buffer
	out, err := Execute(context.Background(), e.svc, Request{File: sp.File, Inputs: map[string]any{}, OnGate: OnGateExit, Cache: CacheSession},
		Setup{Stdin: strings.NewReader(""), Stderr: &stderr, Record: record})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Conclude(context.Background(), e.svc, out, &stderr, "", true)
	if err != nil {
		t.Fatal(err)
	}
	report, _ := json.Marshal(rep)
	rec, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.svc.Get(context.Background(), out.FlowID)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := json.Marshal(st)
	evs, _ := e.svc.Events(context.Background(), 0, 0)
	audit, _ := e.svc.Audit(context.Background(), out.FlowID)
	auditJSON, _ := json.Marshal(audit)
	events, _ := json.Marshal(evs)
	mu.Lock()
	spans := otlpBodies.String()
	mu.Unlock()
	for name, text := range map[string]string{"stderr": stderr.String(), "--json": string(report), "record": string(rec),
		"store": string(stored), "events": string(events), "audit": string(auditJSON), "otlp": spans, "outcome": out.Message} {
		if strings.Contains(text, key) || strings.Contains(text, "SECRETabcdef") {
			t.Errorf("%s shows the key:\n%s", name, text)
		}
	}
	if !strings.Contains(stderr.String(), "sk-proj-…[redacted]") || !strings.Contains(string(rec), "sk-proj-…[redacted]") {
		t.Errorf("the masked key is not shown:\nstderr %s\nrecord %s", stderr.String(), rec)
	}
	if spans == "" {
		t.Error("no OTLP payload was received")
	}
}
