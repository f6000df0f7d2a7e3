package mcp_test

import (
	"strings"
	"testing"
)

func budgetSpec(budget string) string {
	return `version: "0.2"
flows:
  main:
    input: {}
    budget: ` + budget + `
    steps:
      - {id: a, intent: "do a", agent: claude}
      - {id: b, intent: "do b", agent: claude}
      - {id: c, intent: "do c", agent: claude}
`
}

// Usage reported with stratum_step_done is charged to the flow's budget
// ledger; the report that spends an axis ends the flow budget_exhausted.
func TestBudgetOverMCP(t *testing.T) {
	s := start(t)
	tests := []struct {
		name, budget string
		usage        []map[string]any // per step a, b, c
		exhaustedAt  string
		reason       string
	}{
		{"tokens", "{max_tokens: 1000}", []map[string]any{{"tokens": 600}, {"input_tokens": 300, "output_tokens": 200, "model": "claude-sonnet-4-6"}},
			"b", "token budget of flow 'main' is spent (1100 of 1000 tokens)"},
		{"usd priced from the table", "{usd: 0.01}", []map[string]any{{"input_tokens": 1000, "output_tokens": 1000, "model": "claude-sonnet-4-6"}},
			"a", "cost budget (usd) of flow 'main' is spent ($0.0180 of $0.01)"},
		{"usd pre-priced", "{usd: 0.75}", []map[string]any{{"dollars": 0.5}, {"dollars": "0.25"}},
			"b", "cost budget (usd) of flow 'main' is spent ($0.7500 of $0.75)"},
		{"agent dispatches", "{max_agent_dispatches: 2}", []map[string]any{{"tokens": 1}, {"tokens": 1}},
			"b", "flow 'main' used its 2 agent dispatches"},
		{"bad usage counts nothing", "{max_tokens: 10}", []map[string]any{{"tokens": "lots", "dollars": -3}, {"input_tokens": 5, "output_tokens": 5, "model": "no-such-model"}},
			"b", "token budget of flow 'main' is spent (10 of 10 tokens)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := s.ok("stratum_plan", map[string]any{"spec": budgetSpec(tt.budget), "flow": "main"}, map[string]any{"step_id": "a"})
			flowID := out["flow_id"].(string)
			for i, id := range []string{"a", "b", "c"} {
				out = s.ok("stratum_step_done", map[string]any{"flow_id": flowID, "step_id": id, "result": map[string]any{"ok": true}, "usage": tt.usage[i]}, nil)
				if id == tt.exhaustedAt {
					expect(t, "step_done "+id, out, map[string]any{"status": "budget_exhausted", "flow_id": flowID, "step_id": nextOf(id)})
					// The original's terminal payload: output, trace, total_duration_ms, budget_state.
					if bs, _ := out["budget_state"].(map[string]any); bs == nil || bs["caps"] == nil || bs["consumed"] == nil ||
						out["output"] == nil || len(out["trace"].([]any)) == 0 || out["total_duration_ms"] == nil {
						t.Fatalf("budget_exhausted payload %s", canon(t, out))
					}
					if !strings.Contains(out["reason"].(string), tt.reason) {
						t.Fatalf("reason %q, want %q", out["reason"], tt.reason)
					}
					s.ok("stratum_resume", map[string]any{"flow_id": flowID}, map[string]any{"status": "budget_exhausted"})
					return
				}
				expect(t, "step_done "+id, out, map[string]any{"status": "execute_step"})
			}
			t.Fatal("the budget never ran out")
		})
	}
	// Without a budget, usage is recorded and changes nothing.
	out := s.ok("stratum_plan", map[string]any{"spec": strings.Replace(budgetSpec("{}"), "    budget: {}\n", "", 1), "flow": "main"}, nil)
	s.ok("stratum_step_done", map[string]any{"flow_id": out["flow_id"], "step_id": "a", "result": map[string]any{}, "usage": map[string]any{"tokens": 1e9}},
		map[string]any{"status": "execute_step", "step_id": "b"})
	if res, isErr := s.call("stratum_step_done", map[string]any{"flow_id": out["flow_id"], "step_id": "b", "result": map[string]any{}, "usage": "lots"}); !isErr || res["error_type"] != "invalid_arguments" {
		t.Fatalf("usage not an object: %v", res)
	}
}

func nextOf(id string) string { return map[string]string{"a": "b", "b": "c", "c": "c"}[id] }
