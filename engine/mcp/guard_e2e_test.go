package mcp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// guardCLI runs `stratum guard ACTION` with args as JSON on stdin.
func (s *server) guardCLI(action string, args map[string]any, extraEnv ...string) (map[string]any, int) {
	s.t.Helper()
	b, _ := json.Marshal(args)
	cmd := exec.Command(bin, "guard", action)
	cmd.Env = append(environ(s.home, s.store), extraEnv...)
	cmd.Stdin = strings.NewReader(string(b))
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	var resp map[string]any
	if err := json.Unmarshal(out, &resp); err != nil {
		s.t.Fatalf("guard %s: %v: %s", action, err, out)
	}
	return resp, code
}

// The guard over MCP and the CLI on one store: register over MCP, a
// refused and an applied transition, two CLI processes transitioning at
// once (exactly one applied), override needing the token, history with
// its chain; on bbolt and etcd.
func TestGuard(t *testing.T) { onBoth(t, testGuard) }

func testGuard(t *testing.T) {
	home := t.TempDir()
	work := t.TempDir()
	s := startIn(t, home)
	res := "app:FEAT-" + filepath.Base(work)
	s.ok("stratum_guard_register", map[string]any{"resource_id": res, "initial": "design", "workspace_root": work,
		"graph": map[string]any{"design": []any{"build"}, "build": []any{"done"}},
		"edge_predicates": map[string]any{
			"design->build": []any{map[string]any{"id": "doc", "type": "deterministic", "statement": "server_file_exists('design.md')"}},
			"build->done":   []any{map[string]any{"id": "slow", "statement": "command_exit_zero(['sleep', '0.5'])"}},
		}}, map[string]any{"status": "error", "error_type": "command_execution_disabled"})
	// Registered through the CLI, whose environment allows commands (the
	// server's does not: there the command predicate is not met).
	allow := "STRATUM_GUARD_ALLOW_COMMANDS=1"
	reg := map[string]any{"resource_id": res, "initial": "design", "workspace_root": work,
		"graph": map[string]any{"design": []any{"build"}, "build": []any{"done"}},
		"edge_predicates": map[string]any{
			"design->build": []any{map[string]any{"id": "doc", "type": "deterministic", "statement": "server_file_exists('design.md')"},
				map[string]any{"id": "slow", "statement": "command_exit_zero(['sleep', '0.3'])"}},
		}}
	if o, code := s.guardCLI("register", reg, allow); code != 0 || o["status"] != "registered" {
		t.Fatalf("register: %v (exit %d)", o, code)
	}
	s.ok("stratum_guard_register", reg, map[string]any{"status": "error", "error_type": "command_execution_disabled"})
	r := s.ok("stratum_guard_transition", map[string]any{"resource_id": res, "from_state": "design", "to_state": "build"},
		map[string]any{"status": "refused", "current_state": "design"})
	if v := r["verdict"].(map[string]any); v["met"] != false || v["stakes"] != "default" {
		t.Errorf("verdict %v", v)
	}
	if err := os.WriteFile(filepath.Join(work, "design.md"), []byte("# design"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two processes at once, both in their predicates together: exactly
	// one is applied.
	var wg sync.WaitGroup
	outs := make([]map[string]any, 2)
	codes := make([]int, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], codes[i] = s.guardCLI("transition", map[string]any{"resource_id": res, "from_state": "design", "to_state": "build"}, allow)
		}()
	}
	wg.Wait()
	applied := 0
	for i, o := range outs {
		switch {
		case o["status"] == "applied" && codes[i] == 0:
			applied++
		case o["error_type"] == "stale_from_state" && codes[i] == 1:
		default:
			t.Errorf("transition %d: %v (exit %d)", i, o, codes[i])
		}
	}
	if applied != 1 {
		t.Fatalf("%d applied: %v", applied, outs)
	}
	o, code := s.guardCLI("override", map[string]any{"resource_id": res, "from_state": "build", "to_state": "done", "override_token": "t0k", "rationale": "shipped by hand"})
	if code != 1 || o["error_type"] != "override_unavailable" {
		t.Errorf("override without the server's token: %v (exit %d)", o, code)
	}
	o, code = s.guardCLI("override", map[string]any{"resource_id": res, "from_state": "build", "to_state": "done", "override_token": "t0k", "rationale": "shipped by hand"},
		"STRATUM_GUARD_OVERRIDE_TOKEN=t0k")
	if code != 0 || o["status"] != "deviation" {
		t.Errorf("override: %v (exit %d)", o, code)
	}
	if o, code := s.guardCLI("transition", map[string]any{"resource_id": res, "from_state": "done", "bogus": 1}); code != 1 || o["error_type"] != "invalid_arguments" {
		t.Errorf("unknown argument: %v (exit %d)", o, code)
	}
	h := s.ok("stratum_guard_history", map[string]any{"resource_id": res}, map[string]any{"current_state": "done", "graph_version": 1})
	var kinds []string
	for _, e := range h["ledger"].([]any) {
		m := e.(map[string]any)
		kinds = append(kinds, m["outcome"].(string)+"/"+m["channel"].(string))
	}
	if strings.Join(kinds, " ") != "refused/mcp applied/cli deviation/cli" {
		t.Errorf("ledger: %v", kinds)
	}
}

// A verified predicate is decided by the judge's verifier (the configured
// "judge" agent) over the transition's artifacts.
func TestGuardVerifiedPredicate(t *testing.T) {
	home := t.TempDir()
	fakeVerifiers(t, home)
	s := startIn(t, home)
	s.ok("stratum_guard_register", map[string]any{"resource_id": "app:tests", "initial": "build",
		"graph":           map[string]any{"build": []any{"review"}},
		"edge_predicates": map[string]any{"build->review": []any{map[string]any{"id": "tests", "type": "verified", "statement": "the tests pass"}}}},
		map[string]any{"status": "registered"})
	r := s.ok("stratum_guard_transition", map[string]any{"resource_id": "app:tests", "from_state": "build", "to_state": "review",
		"artifacts": map[string]any{"pytest": "12 passed\n"}}, map[string]any{"status": "applied", "current_state": "review"})
	ps := r["verdict"].(map[string]any)["predicates"].([]any)
	if len(ps) != 1 || ps[0].(map[string]any)["id"] != "tests" || ps[0].(map[string]any)["verdict"] != "met" {
		t.Errorf("predicates: %v", ps)
	}
}

// A tool of the original this stratum does not carry answers not_supported
// naming the alternative.
func TestUnsupportedTools(t *testing.T) {
	s := start(t)
	out := s.ok("stratum_distill", map[string]any{"window_days": 30}, map[string]any{"status": "error", "error_type": "not_supported"})
	if msg, _ := out["message"].(string); !strings.Contains(msg, "stratum_validate") || !strings.Contains(msg, "/stratum-onboard") {
		t.Errorf("message names no alternative: %q", msg)
	}
}
