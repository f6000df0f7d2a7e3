package mcp_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/store"
)

// TestStoreMigratedUnderServer: a newer stratum migrates the store while an
// older `stratum mcp` is running. Every tool that touches the store then
// answers a JSON error (store_upgraded) whose message says the store was
// written by a newer stratum and to restart or upgrade the server — not
// internal_error "An unexpected error occurred." with the reason only on
// stderr, which MCP hosts hide. The tools that never touch the store
// answer as before.
func TestStoreMigratedUnderServer(t *testing.T) {
	s := start(t)
	id, _ := s.plan("main", map[string]any{"x": "1"}, map[string]any{"status": "execute_step"})

	// What a newer stratum's migration leaves: a schema version this
	// binary does not know.
	db, err := bolt.Open(filepath.Join(s.home, store.FileName), 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte(strconv.Itoa(store.SchemaVersion+1)))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	res, err := s.sess.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"flow_id": id, "step_id": "build", "spec": flowSpec, "flow": "main", "inputs": map[string]any{"x": "1"},
		"result": map[string]any{"ok": true, "n": 1}, "outcome": "approve", "rationale": "ok", "resolved_by": "agent",
		"task_results": []any{}, "merge_status": "clean", "label": "l", "reason": "r", "timeout_seconds": 1,
		"tasks_dir": t.TempDir(), "draft": map[string]any{}, "project_dir": t.TempDir(), "workflows_dir": t.TempDir(),
		"predicates": []any{}, "artifacts": map[string]any{},
		"prompt": "go", "correlation_id": id,
		"resource_id": "r", "graph": map[string]any{"a": []any{"b"}}, "edge_predicates": map[string]any{}, "initial": "a",
		"from_state": "a", "to_state": "b", "override_token": "t", "new_graph": map[string]any{"a": []any{"b"}},
		"new_edge_predicates": map[string]any{},
		"goal_id":             "g", "mode": "advisory", "decision": "confirm",
	}
	noStore := map[string]bool{"stratum_validate": true, "stratum_decompose": true, "stratum_compile_speckit": true,
		"stratum_draft_pipeline": true, "stratum_list_workflows": true, "stratum_cancel_agent_run": true, "stratum_distill": true,
		"stratum_guard_override": true, "stratum_guard_migrate": true, // refused before the store: no token in the server's env
		"stratum_goal": true} // refused before the store: no predicates
	for _, tool := range res.Tools {
		args := map[string]any{}
		schema, _ := tool.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		for name := range props {
			if v, ok := values[name]; ok {
				args[name] = v
			}
		}
		req, _ := schema["required"].([]any)
		for _, r := range req {
			if _, ok := args[r.(string)]; !ok {
				t.Fatalf("%s: no test value for required argument %s", tool.Name, r)
			}
		}
		out, isErr := s.call(tool.Name, args)
		if out["error_type"] == "internal_error" {
			t.Errorf("%s: %v", tool.Name, out)
			continue
		}
		if noStore[tool.Name] {
			continue
		}
		msg, _ := out["message"].(string)
		if !isErr || out["error_type"] != "store_upgraded" || out["status"] != "error" ||
			!strings.Contains(msg, "written by a newer stratum") || !strings.Contains(msg, "Restart the MCP server") {
			t.Errorf("%s: isError %v, %v", tool.Name, isErr, out)
		}
	}
}
