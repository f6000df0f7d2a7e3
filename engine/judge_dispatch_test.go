package engine

import (
	"encoding/json"
	"os"
	"testing"
)

// A judge step's dispatch is the original's judge envelope
// (stratum-mcp tests/test_executor_judge.py::test_judge_envelope_shape):
// predicates as written, stakes, budget, ensure and retries_remaining, no
// inputs or output fields; the JudgeResult the agent reports is checked
// by the step's ensure like any result.
func TestJudgeDispatch(t *testing.T) {
	src, err := os.ReadFile("../testdata/specs/valid/v03-judge-stakes-budget.stratum.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, r := plan(t, string(src), "build", nil)
	got, _ := json.Marshal(r)
	want := `{"agent":"claude","budget":{"max_turns":3,"max_wall_clock_s":30},"ensure":["result.met == True"],"flow_id":"` + f.st.FlowID +
		`","predicates":[{"id":"p1","statement":"file_exists('artifacts/out.txt')","type":"deterministic"}],"retries_remaining":1,"stakes":"cheap","status":"execute_step","step_id":"verify","step_mode":"judge","step_number":1,"total_steps":2}`
	if string(got) != want {
		t.Fatalf("dispatch\n got %s\nwant %s", got, want)
	}
	// One attempt (the original's default for judge steps): a verdict that
	// is not met exhausts it.
	f2, _ := plan(t, string(src), "build", nil)
	if r := f2.stepDone("verify", map[string]any{"met": false, "clean": false}); r["error_type"] != "retries_exhausted" {
		t.Fatalf("not met: %s", show(r))
	}
	r = f.stepDone("verify", map[string]any{"met": true, "clean": true})
	expect(t, r, map[string]any{"step_mode": "judge", "step_id": "review", "stakes": "paranoid", "retries_remaining": 2})
	if r = f.stepDone("review", map[string]any{"met": true, "clean": true}); r["status"] != "complete" {
		t.Fatalf("complete: %s", show(r))
	}
}
