package engine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

func TestAuditShape(t *testing.T) {
	sp, f := extSpec(t, ckptSpecSrc, "main")
	env := extEnv(sp, f)
	env.Now = extNow.Add(1500 * time.Millisecond)

	// A fresh flow: every collection present and empty.
	st := extState(t, env, "a")
	st.FlowStart = extNow
	st.CreatedAt = extNow
	st.UpdatedAt = extNow
	a := auditFlow(st, env).wire()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"flow_id", "flow_name", "status", "steps_completed", "total_steps", "trace", "round",
		"rounds", "iterations", "archived_iterations", "child_audits", "total_duration_ms", "created_at", "updated_at", "flow_status"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("audit lacks %s: %s", k, b)
		}
	}
	if _, ok := m["gate"]; ok {
		t.Fatalf("gate present on a running flow")
	}
	if string(mustJSON(t, m["rounds"])) != "[]" || string(mustJSON(t, m["trace"])) != "[]" ||
		string(mustJSON(t, m["iterations"])) != "{}" || string(mustJSON(t, m["archived_iterations"])) != "[]" ||
		string(mustJSON(t, m["child_audits"])) != "{}" {
		t.Fatalf("empty collections must be [] / {}: %s", b)
	}
	if m["status"] != "in_progress" || m["flow_status"] != string(state.StatusRunning) || m["total_steps"] != 4.0 ||
		m["steps_completed"] != 0.0 || m["total_duration_ms"] != 1500.0 || m["flow_name"] != "main" {
		t.Fatalf("audit %s", b)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAuditContent(t *testing.T) {
	sp, f := extSpec(t, ckptSpecSrc, "main")
	env := extEnv(sp, f)
	st := fullState(t, env)
	st.TerminalStatus = nil
	st.Rounds = [][]state.Record{
		{{Type: state.RecordStep, StepID: "a"}, {Type: state.RecordGate, StepID: "g", Outcome: "revise"}},
		{{Type: state.RecordGate, StepID: "g", Outcome: "revise", Round: 1}},
	}
	st.Records = []state.Record{{Type: state.RecordStep, StepID: "a", Round: 2}, {Type: state.RecordStep, StepID: "b", Round: 2}, {Type: state.RecordSkip, StepID: "c", Round: 2}}
	st.Round = 2
	before := stateBytes(st)

	a := auditFlow(st, env).wire()
	if string(stateBytes(st)) != string(before) {
		t.Fatalf("Audit modified the state")
	}
	if a["steps_completed"] != 3 || a["round"] != 2 {
		t.Fatalf("audit %v", a)
	}
	rounds := a["rounds"].([]map[string]any)
	if len(rounds) != 2 || rounds[0]["round"] != 0 || rounds[1]["round"] != 1 ||
		!reflect.DeepEqual(rounds[0]["steps"], st.Rounds[0]) {
		t.Fatalf("rounds %v", rounds)
	}
	its := a["iterations"].(map[string][]state.IterationEntry)
	if len(its["b"]) != 1 || its["b"][0].Result != nil || its["b"][0].Iteration != 1 || its["b"][0].Score == nil {
		t.Fatalf("iterations must be kept without results: %+v", its)
	}
	if st.Iterations["b"][0].Result == nil {
		t.Fatalf("stripping results touched the state")
	}
	js := mustJSON(t, a["iterations"])
	var back map[string][]map[string]any
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if _, ok := back["b"][0]["result"]; ok {
		t.Fatalf("result key in audit iterations: %s", js)
	}
	arch := a["archived_iterations"].([]map[string][]state.IterationEntry)
	if len(arch) != 1 || arch[0]["b"][0].Outcome != outcomeExitMax {
		t.Fatalf("archived %v", arch)
	}
	if !reflect.DeepEqual(a["child_audits"], st.ChildAudits) {
		t.Fatalf("child audits %v", a["child_audits"])
	}
}

func TestAuditStatus(t *testing.T) {
	sp, f := extSpec(t, ckptSpecSrc, "main")
	env := extEnv(sp, f)
	deadline := extNow.Add(time.Hour)
	tests := []struct {
		status   state.FlowStatus
		terminal *string
		want     string
		gate     bool
	}{
		{state.StatusRunning, nil, "in_progress", false},
		{state.StatusAwaitingGate, nil, "in_progress", true},
		{state.StatusComplete, nil, "complete", false},
		{state.StatusKilled, nil, "killed", false},
		{state.StatusFailed, nil, "failed", false},
		{state.StatusBudgetExhausted, nil, "budget_exhausted", false},
		{state.StatusRunning, strPtr("killed"), "killed", false}, // running the kill cleanup step
	}
	for _, tc := range tests {
		st := extState(t, env, "a")
		st.Status = tc.status
		st.TerminalStatus = tc.terminal
		if tc.status == state.StatusAwaitingGate {
			st.Gate = &state.PendingGate{StepID: "g", DispatchedAt: extNow, Deadline: &deadline, Approver: "human"}
		}
		a := auditFlow(st, env).wire()
		if a["status"] != tc.want || a["flow_status"] != string(tc.status) {
			t.Fatalf("%s: status %v", tc.status, a["status"])
		}
		g, ok := a["gate"].(*state.PendingGate)
		if ok != tc.gate {
			t.Fatalf("%s: gate presence %v", tc.status, ok)
		}
		if ok && (g.Deadline == nil || !g.Deadline.Equal(deadline) || g.StepID != "g") {
			t.Fatalf("gate %+v", g)
		}
	}
}

func TestAuditDurationOfEndedFlow(t *testing.T) {
	sp, f := extSpec(t, ckptSpecSrc, "main")
	env := extEnv(sp, f)
	st := extState(t, env, "a")
	st.FlowStart = extNow
	st.UpdatedAt = extNow.Add(2 * time.Second)
	st.Status = state.StatusComplete
	env.Now = extNow.Add(time.Hour)
	if d := auditFlow(st, env).wire()["total_duration_ms"]; d != int64(2000) {
		t.Fatalf("duration of a finished flow = %v, want 2000", d)
	}
	st.Status = state.StatusRunning
	if d := auditFlow(st, env).wire()["total_duration_ms"]; d != int64(3600000) {
		t.Fatalf("duration of a running flow = %v", d)
	}
}
