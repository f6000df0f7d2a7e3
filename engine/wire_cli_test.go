package engine

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stratum-go/stratum/review"
)

// jsonOf renders r as the CLI prints it (compact, keys sorted).
func jsonOf(t *testing.T, r Response) string {
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
		next    Outcome
		err     error
		verdict GateVerdict
		want    string
	}{
		{"approved", &Completion{Status: StatusComplete, FlowID: "f"}, nil, GateResolved,
			`{"_schema_version":"1","flow_id":"f","ok":true,"outcome":"approve","result":"complete","step_id":"g"}`},
		{"next dispatch", &StepDispatch{FlowID: "f", StepID: "s"}, nil, GateResolved,
			`{"_schema_version":"1","flow_id":"f","ok":true,"outcome":"approve","result":"execute_step","step_id":"g"}`},
		{"max rounds is recorded", nil, &Error{Type: ErrTypeMaxRoundsExceeded, Message: "m", Round: 3}, GateResolved,
			`{"_schema_version":"1","flow_id":"f","ok":true,"outcome":"approve","result":"max_rounds_exceeded","step_id":"g"}`},
		{"unknown flow", nil, refusal(ErrTypeFlowNotFound, "No active flow with id 'f'"), GateNotFound,
			`{"_schema_version":"1","error":{"code":"NOT_FOUND","message":"No active flow with id 'f'"},"flow_id":"f","ok":false,"outcome":"approve","step_id":"g"}`},
		{"already decided", nil, refusal(ErrTypeNotAGateStep, "not a gate"), GateConflict,
			`{"_schema_version":"1","conflict":true,"error":{"code":"not_a_gate_step","message":"not a gate"},"flow_id":"f","ok":false,"outcome":"approve","step_id":"g"}`},
		{"wrapped stale round", nil, fmt.Errorf("gate: %w", refusal(ErrTypeStaleRound, "round 2")), GateConflict,
			`{"_schema_version":"1","conflict":true,"error":{"code":"stale_round","message":"round 2"},"flow_id":"f","ok":false,"outcome":"approve","step_id":"g"}`},
		{"other refusal", nil, refusal(ErrTypeGateRequiresHuman, "human only"), GateRefused,
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

func TestQueryRenderers(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	waiting := FlowSummary{FlowID: "a", FlowName: "main", Status: StatusAwaitingGate, StepNumber: 2, TotalSteps: 3, Round: 1,
		UpdatedAt: at, Gate: &PendingGate{StepID: "review", Round: 1, DispatchedAt: at, Approver: "human", OnTimeout: "kill"}}
	gateless := FlowSummary{FlowID: "b", FlowName: "other", Status: StatusAwaitingGate, UpdatedAt: at}
	for _, tc := range []struct {
		name string
		r    Response
		want string
	}{
		{"no flows is an empty list", QueryFlows(nil), `{"_schema_version":"1","flows":[]}`},
		{"flows", QueryFlows([]FlowSummary{{FlowID: "a", FlowName: "main", Status: StatusComplete, CreatedAt: at, UpdatedAt: at}}),
			`{"_schema_version":"1","flows":[{"flow_id":"a","flow_name":"main","status":"complete","step_number":0,"total_steps":0,"round":0,"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z","version":0}]}`},
		{"flow not found", QueryFlowNotFound("zz"),
			`{"_schema_version":"1","error":{"code":"NOT_FOUND","message":"No flow with id 'zz'"},"ok":false}`},
		{"no gates is an empty list", QueryGates(nil), `{"_schema_version":"1","gates":[]}`},
		{"gates", QueryGates([]FlowSummary{waiting, gateless}),
			`{"_schema_version":"1","gates":[` +
				`{"approver":"human","deadline":null,"dispatched_at":"2026-01-02T03:04:05Z","flow_id":"a","flow_name":"main","on_timeout":"kill","round":1,"status":"awaiting_gate","step_id":"review","step_number":2,"total_steps":3,"updated_at":"2026-01-02T03:04:05Z"},` +
				`{"flow_id":"b","flow_name":"other","round":0,"status":"awaiting_gate","step_number":0,"total_steps":0,"updated_at":"2026-01-02T03:04:05Z"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := jsonOf(t, tc.r); got != tc.want {
				t.Errorf("json =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
	if got := jsonOf(t, QueryFlow(&FlowState{FlowID: "a"})); got[:40] != `{"_schema_version":"1","flow":{"flow_id"` {
		t.Errorf("QueryFlow = %s", got)
	}
}
