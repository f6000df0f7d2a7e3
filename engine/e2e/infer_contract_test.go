package e2e

import (
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

// scriptedProvider is an OpenAI-compatible chat endpoint that answers the
// nth request with answers[n] (the last one once they run out) and keeps
// every request's prompt text.
type scriptedProvider struct {
	*httptest.Server
	mu      sync.Mutex
	answers []string
	prompts []string
}

func newScriptedProvider(t *testing.T, answers ...string) *scriptedProvider {
	p := &scriptedProvider{answers: answers}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		n := len(p.prompts)
		p.prompts = append(p.prompts, string(b))
		answer := p.answers[min(n, len(p.answers)-1)]
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *scriptedProvider) sent() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.prompts...)
}

// contactSpec is the spec: an infer function whose output contract
// is Contact. STEP_EXTRA is replaced with more keys of the step.
const contactSpec = `version: "0.2"
contracts:
  Contact:
    name: {type: string}
    email: {type: string}
    quantity: {type: integer}
    phone: {type: string}
functions:
  extract:
    mode: infer
    intent: "Extract the contact from the order"
    input: {text: {type: string}}
    output: Contact
flows:
  main:
    input: {text: {type: string}}
    steps:
      - id: extract
        function: extract
        inputs: {text: "$.input.text"}
STEP_EXTRA`

// closedSchema closes the step's answer: no key besides the contract's.
const closedSchema = `        output_schema:
          type: object
          additionalProperties: false
          properties: {name: {}, email: {}, quantity: {}, phone: {}}
`

const goodContact = `{"name":"Ann Lee","email":"ann@example.com","quantity":3,"phone":"555-0100"}`

// TestRunInferContract: under stratum run, an infer step's answer is
// checked against its function's output contract (and the step's
// output_schema) like a command's: an answer with a wrong type, a missing
// required field, or a key a closed schema refuses is a failed attempt,
// retried with exactly that violation in the next prompt; an answer that
// never fits exhausts the step's attempts and the run exits 1 naming the
// violation. Before, the first answer was accepted as-is (1 attempt,
// exit 0, "quantity":"3").
func TestRunInferContract(t *testing.T) {
	cases := []struct {
		name      string
		extra     string
		answers   []string
		exit      int
		attempts  int
		violation string // in the second prompt and in the run's record
	}{
		{"wrong type", "", []string{`{"name":"Ann Lee","email":"ann@example.com","quantity":"3","phone":"555-0100"}`, goodContact},
			0, 2, `output contract 'Contact' violation: at '/quantity': must be of type integer but found string \"3\"`},
		{"missing required", "", []string{`{"name":"Ann Lee","email":"ann@example.com","quantity":3}`, goodContact},
			0, 2, `output contract 'Contact' violation: missing required property 'phone'`},
		{"extra key on a closed schema", closedSchema, []string{`{"name":"Ann Lee","email":"ann@example.com","quantity":3,"phone":"555-0100","product":"Widget"}`, goodContact},
			0, 2, `output_schema violation: property 'product' is not allowed`},
		{"never fits", "", []string{`{"name":"Ann Lee","email":"ann@example.com","quantity":"3","product":"Widget"}`},
			1, 3, `output contract 'Contact' violation: missing required property 'phone'`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newScriptedProvider(t, c.answers...)
			e := newCLIEnv(t)
			spec := filepath.Join(t.TempDir(), "contact.stratum.yaml")
			if err := os.WriteFile(spec, []byte(strings.Replace(contactSpec, "STEP_EXTRA", c.extra, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("OPENAI_BASE_URL", p.URL+"/v1")
			t.Setenv("OPENAI_API_KEY", "sk-test")
			t.Setenv("STRATUM_MODEL", "openai/gpt-4o-mini")
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			code, stdout, stderr := e.run("", "run", spec, "--input", "text=Ann Lee, ann@example.com, 3 widgets", "--json")
			if code != c.exit {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.exit, stderr, stdout)
			}
			sent := p.sent()
			if len(sent) != c.attempts {
				t.Fatalf("%d requests, want %d\n%s", len(sent), c.attempts, stderr)
			}
			if !strings.Contains(sent[1], "Previous attempt failed:") || !strings.Contains(sent[1], c.violation) {
				t.Fatalf("the retry's prompt does not carry %q:\n%s", c.violation, sent[1])
			}
			if strings.Contains(sent[0], "Previous attempt failed:") {
				t.Fatalf("the first prompt carries violations:\n%s", sent[0])
			}
			var out struct {
				FlowStatus string `json:"flow_status"`
				Run        struct {
					ExitCode int `json:"exit_code"`
					Calls    []struct {
						Attempts     int      `json:"attempts"`
						RetryReasons []string `json:"retry_reasons"`
					} `json:"calls"`
				} `json:"run"`
			}
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatalf("%v\n%s", err, stdout)
			}
			want := map[int]string{0: "complete", 1: "failed"}[c.exit]
			if out.FlowStatus != want || out.Run.ExitCode != c.exit {
				t.Fatalf("flow %s exit %d, want %s", out.FlowStatus, out.Run.ExitCode, want)
			}
			unquoted := strings.ReplaceAll(c.violation, `\"`, `"`)
			if c.exit == 1 && !strings.Contains(stderr, "failed after 3 attempts: "+unquoted) {
				t.Fatalf("the failure does not name the violation:\n%s", stderr)
			}
		})
	}
}
