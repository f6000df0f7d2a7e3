package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// A parallel_dispatch step without agent: or run: runs each task with the
// LLM (infer) executor: one call per task to a real OpenAI-compatible HTTP
// endpoint, the task in its prompt, its answer the task's result, its tokens
// in the flow's ledger; a task whose call the provider refuses fails with
// the provider's message, and require decides.
func TestFanOutInferTasks(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	taskRe := regexp.MustCompile(`TASK<([a-z]+)>`)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		// The prompt as sent (content may be a string or a list of parts).
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("provider: %v", err)
		}
		prompt := ""
		for _, m := range req.Messages {
			prompt += string(m) + "\n"
		}
		m := taskRe.FindStringSubmatch(prompt)
		if m == nil {
			t.Errorf("a call without a task in its prompt:\n%s", prompt)
			http.Error(w, "no task", http.StatusBadRequest)
			return
		}
		id := m[1]
		mu.Lock()
		calls[id]++
		mu.Unlock()
		if id == "bad" {
			http.Error(w, `{"error": {"message": "this task is refused", "type": "invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		answer := fmt.Sprintf(`{"done": "%s", "files": 1}`, id)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	defer provider.Close()
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", provider.URL+"/v1")
	t.Setenv("STRATUM_MODEL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")

	e := newEnv(t)
	sp := e.spec(`version: "0.3"
contracts:
  TaskGraph:
    tasks: {type: array}
  Done:
    done: {type: string}
    files: {type: integer}
flows:
  main:
    input: {}
    steps:
      - id: plan
        type: decompose
        intent: "split"
        output_contract: TaskGraph
        run: |
          echo '{"tasks": [{"id": "a", "description": "first"}, {"id": "b", "description": "second"}, {"id": "bad", "description": "broken"}]}'
      - id: fan
        type: parallel_dispatch
        source: "$.steps.plan.output.tasks"
        intent_template: "Do TASK<{id}>: {description}"
        model: openai/gpt-4o-mini
        output_contract: Done
        isolation: none
        require: 2
        retries: 1
        depends_on: [plan]
`)
	var stderr strings.Builder
	out, err := Execute(context.Background(), e.svc, Request{File: sp.File, Inputs: map[string]any{}, OnGate: review.OnGateExit, Cache: CacheSession},
		Setup{Stdin: strings.NewReader(""), Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != EndComplete {
		t.Fatalf("outcome %s: %s\n%s", out.Status, out.Message, stderr.String())
	}
	mu.Lock()
	if calls["a"] != 1 || calls["b"] != 1 || calls["bad"] < 1 {
		t.Errorf("provider calls per task: %v", calls)
	}
	mu.Unlock()
	st := e.state(out.FlowID)
	tasks := st.LastTasksOf("fan")
	for id, want := range map[string]string{"a": state.TaskComplete, "b": state.TaskComplete, "bad": state.TaskFailed} {
		tk := tasks[id]
		if tk.State != want {
			t.Errorf("task %s %s, want %s (%v)", id, tk.State, want, tk.Violations)
		}
		if want != state.TaskComplete {
			if !strings.Contains(strings.Join(tk.Violations, "; "), "this task is refused") {
				t.Errorf("task %s violations %v: not the provider's refusal", id, tk.Violations)
			}
			continue
		}
		res, _ := tk.Result.(map[string]any)
		if res["done"] != id {
			t.Errorf("task %s result %v: not its LLM answer", id, tk.Result)
		}
	}
	// The two answered calls (15 tokens each) are in the budget ledger.
	if st.BudgetState == nil || st.BudgetState.SpentTokens != 30 {
		t.Errorf("budget ledger %+v: the tasks' tokens are not counted", st.BudgetState)
	}
}
