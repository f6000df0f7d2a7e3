package mcp_test

import (
	"encoding/json"
	"os/exec"
	"testing"
)

const cacheSpec = `version: "0.2"
contracts:
  Out:
    n: {type: integer}
functions:
  compute:
    mode: compute
    intent: "compute n from x"
    input: {x: {type: string}}
    output: Out
    cache: true
    ensure: ["result.n > 0"]
flows:
  main:
    input: {x: {type: string}}
    steps:
      - {id: a, function: compute, inputs: {x: "$.input.x"}}
      - {id: b, intent: "use n", inputs: {n: "$.steps.a.output.n"}}
`

// cachedRun plans main with x and, when the plan dispatches a, answers it
// with n; it finishes the flow and returns its id and the step the plan
// dispatched first.
func (s *server) cachedRun(x string, n int) (flowID, first string) {
	s.t.Helper()
	out := s.ok("stratum_plan", map[string]any{"spec": cacheSpec, "flow": "main", "inputs": map[string]any{"x": x}}, map[string]any{"status": "execute_step"})
	flowID, first = out["flow_id"].(string), out["step_id"].(string)
	if first == "a" {
		out = s.ok("stratum_step_done", map[string]any{"flow_id": flowID, "step_id": "a", "result": map[string]any{"n": n}},
			map[string]any{"status": "execute_step", "step_id": "b"})
	}
	inputs, _ := json.Marshal(out["inputs"])
	if want, _ := json.Marshal(map[string]any{"n": n}); string(inputs) != string(want) {
		s.t.Fatalf("b's inputs %s, want %s", inputs, want)
	}
	s.ok("stratum_step_done", map[string]any{"flow_id": flowID, "step_id": "b", "result": map[string]any{}}, map[string]any{"status": "complete"})
	return flowID, first
}

// A cache: true step of a flow an agent drives is answered from the result
// cache by a second identical plan (no dispatch; a cache hit in the trace
// and cache_hits in the audit, over MCP and from `stratum audit`); a
// changed input misses; STRATUM_DISABLE_RESULT_CACHE turns it off.
func TestResultCacheOverMCP(t *testing.T) {
	s := start(t)
	if _, first := s.cachedRun("1", 5); first != "a" {
		t.Fatalf("the first plan dispatched %s, want a", first)
	}
	id, first := s.cachedRun("1", 5)
	if first != "b" {
		t.Fatalf("the second identical plan dispatched %s, want b (a answered from the cache)", first)
	}
	audit := s.ok("stratum_audit", map[string]any{"flow_id": id}, map[string]any{"cache_hits": 1, "status": "complete", "budget_state": nil})
	rec := audit["trace"].([]any)[0].(map[string]any)
	if rec["step_id"] != "a" || rec["cache_hit"] != true || rec["attempts"] != 0.0 || rec["cache_key"] == "" {
		t.Fatalf("trace record %v, want a's cache hit", rec)
	}
	cmd := exec.Command(bin, "audit", id)
	cmd.Env = environ(s.home, s.store)
	b, err := cmd.Output()
	var cli map[string]any
	if err != nil || json.Unmarshal(b, &cli) != nil || cli["cache_hits"] != 1.0 {
		t.Fatalf("stratum audit: %v: %s", err, b)
	}

	if _, first := s.cachedRun("2", 7); first != "a" {
		t.Fatalf("a changed input dispatched %s, want a (a miss)", first)
	}

	t.Setenv("STRATUM_DISABLE_RESULT_CACHE", "1")
	off := startIn(t, s.home)
	id, first = off.cachedRun("1", 5)
	if first != "a" {
		t.Fatalf("with the cache turned off the plan dispatched %s, want a", first)
	}
	off.ok("stratum_audit", map[string]any{"flow_id": id}, map[string]any{"cache_hits": 0})
}

// STRATUM_CACHE_MAX_ENTRIES bounds the result cache as the original's does:
// with one entry, caching x=2 removes x=1's entry, so x=1 is dispatched
// again (with the default bound it would be answered from the cache).
func TestResultCacheBoundFromEnvironment(t *testing.T) {
	t.Setenv("STRATUM_CACHE_MAX_ENTRIES", "1")
	s := start(t)
	for _, x := range []string{"1", "2"} {
		if _, first := s.cachedRun(x, 5); first != "a" {
			t.Fatalf("x=%s: the first plan dispatched %s, want a", x, first)
		}
	}
	if _, first := s.cachedRun("2", 5); first != "b" {
		t.Fatalf("x=2 again dispatched %s, want b (the newest entry kept)", first)
	}
	if _, first := s.cachedRun("1", 5); first != "a" {
		t.Fatalf("x=1 again dispatched %s, want a (its entry removed past STRATUM_CACHE_MAX_ENTRIES=1)", first)
	}
}
