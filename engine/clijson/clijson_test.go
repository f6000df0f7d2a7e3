package clijson

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// jsonOf renders r as the CLI prints it (compact, keys sorted).
func jsonOf(t *testing.T, r engine.Response) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGateAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		next    engine.Outcome
		err     error
		verdict GateVerdict
		want    string
	}{
		{"approved", &engine.Completion{Status: state.StatusComplete, FlowID: "f"}, nil, GateResolved,
			`{"_schema_version":"1","flow_id":"f","ok":true,"outcome":"approve","result":"complete","step_id":"g"}`},
		{"next dispatch", &engine.StepDispatch{FlowID: "f", StepID: "s"}, nil, GateResolved,
			`{"_schema_version":"1","flow_id":"f","ok":true,"outcome":"approve","result":"execute_step","step_id":"g"}`},
		{"max rounds is recorded", nil, &engine.Error{Type: engine.ErrTypeMaxRoundsExceeded, Message: "m", Round: 3}, GateResolved,
			`{"_schema_version":"1","flow_id":"f","ok":true,"outcome":"approve","result":"max_rounds_exceeded","step_id":"g"}`},
		{"unknown flow", nil, &engine.Error{Type: engine.ErrTypeFlowNotFound, Message: "No active flow with id 'f'"}, GateNotFound,
			`{"_schema_version":"1","error":{"code":"NOT_FOUND","message":"No active flow with id 'f'"},"flow_id":"f","ok":false,"outcome":"approve","step_id":"g"}`},
		{"already decided", nil, &engine.Error{Type: engine.ErrTypeNotAGateStep, Message: "not a gate"}, GateConflict,
			`{"_schema_version":"1","conflict":true,"error":{"code":"not_a_gate_step","message":"not a gate"},"flow_id":"f","ok":false,"outcome":"approve","step_id":"g"}`},
		{"wrapped stale round", nil, fmt.Errorf("gate: %w", &engine.Error{Type: engine.ErrTypeStaleRound, Message: "round 2"}), GateConflict,
			`{"_schema_version":"1","conflict":true,"error":{"code":"stale_round","message":"round 2"},"flow_id":"f","ok":false,"outcome":"approve","step_id":"g"}`},
		{"other refusal", nil, &engine.Error{Type: engine.ErrTypeGateRequiresHuman, Message: "human only"}, GateRefused,
			`{"_schema_version":"1","error":{"code":"gate_requires_human","message":"human only"},"flow_id":"f","ok":false,"outcome":"approve","step_id":"g"}`},
		{"store failure", nil, fmt.Errorf("disk on fire"), GateRefused,
			`{"_schema_version":"1","error":{"code":"internal_error","message":"An unexpected error occurred."},"flow_id":"f","ok":false,"outcome":"approve","step_id":"g"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, v := GateAnswer("f", "g", review.Approve, tc.next, tc.err)
			if v != tc.verdict {
				t.Errorf("verdict = %d, want %d", v, tc.verdict)
			}
			if got := jsonOf(t, r); got != tc.want {
				t.Errorf("json =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

// TestQueryRenderers pins the derived fields the goldens (engine/query_golden_test.go)
// cannot reach through a Service: a gate whose spec no longer parses, a
// summary without its gate.
func TestQueryRenderers(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	waiting := state.FlowSummary{FlowID: "a", FlowName: "main", Status: state.StatusAwaitingGate, CurrentStep: "review", StepNumber: 2, TotalSteps: 3, Round: 1,
		UpdatedAt: at, Gate: &state.PendingGate{StepID: "review", Round: 1, DispatchedAt: at, Approver: "human", OnTimeout: "kill"}}
	gateless := state.FlowSummary{FlowID: "b", FlowName: "other", Status: state.StatusAwaitingGate, UpdatedAt: at}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"no flows is an empty list", Flows(nil, at), `[]`},
		{"a finished flow", Flows([]state.FlowSummary{{FlowID: "a", FlowName: "main", Status: state.StatusKilled, StepNumber: 3, TotalSteps: 3}}, at),
			`[{"_schema_version":"1","flow_id":"a","flow_name":"main","status":"killed","step_number":3,"total_steps":3,"round":0,` +
				`"created_at":"0001-01-01T00:00:00Z","updated_at":"0001-01-01T00:00:00Z","version":0,` +
				`"current_step_id":null,"step_count":3,"completed_steps":3,"terminal_status":"killed"}]`},
		{"an active flow", Flows([]state.FlowSummary{waiting}, at)[0].CompletedSteps, `1`},
		{"flow not found", FlowNotFound("zz"),
			`{"_schema_version":"1","error":{"code":"NOT_FOUND","message":"Flow 'zz' not found"},"ok":false}`},
		{"no gates is an empty list", Gates(nil), `[]`},
		{"gates without spec steps", Gates([]engine.GateStep{{Summary: waiting}, {Summary: gateless}}),
			`[{"_schema_version":"1","flow_id":"a","flow_name":"main","step_id":"review","function":null,"on_approve":null,"on_revise":null,"on_kill":null,"timeout":null,` +
				`"status":"awaiting_gate","round":1,"step_number":2,"total_steps":3,"updated_at":"2026-01-02T03:04:05Z","dispatched_at":"2026-01-02T03:04:05Z","deadline":null,"approver":"human","on_timeout":"kill"},` +
				`{"_schema_version":"1","flow_id":"b","flow_name":"other","step_id":"","function":null,"on_approve":null,"on_revise":null,"on_kill":null,"timeout":null,` +
				`"status":"awaiting_gate","round":0,"step_number":0,"total_steps":0,"updated_at":"2026-01-02T03:04:05Z","dispatched_at":"0001-01-01T00:00:00Z","deadline":null,"approver":"","on_timeout":""}]`},
		{"a flow whose spec no longer parses", Flow(&engine.FlowWithSpec{State: &state.FlowState{FlowID: "a", Status: state.StatusRunning}}, at).OrderedSteps, `[]`},
		{"a runner's flow with a live lease is not stalled", Flows([]state.FlowSummary{{FlowID: "r", Status: state.StatusRunning, Driver: state.DriverRunner,
			Owner: &state.Lease{ID: "l", ExpiresAt: at.Add(time.Second)}}}, at)[0].Stalled, `false`},
		{"a runner's flow whose lease expired is stalled", Flows([]state.FlowSummary{{FlowID: "r", Status: state.StatusRunning, Driver: state.DriverRunner,
			Owner: &state.Lease{ID: "l", ExpiresAt: at}}}, at)[0].Stalled, `true`},
		{"a stalled flow keeps its status", Flow(&engine.FlowWithSpec{State: &state.FlowState{FlowID: "r", Status: state.StatusAwaitingGate, Driver: state.DriverRunner}}, at).Stalled, `true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(b); got != tc.want {
				t.Errorf("json =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}
