package engine

import (
	"testing"

	"github.com/stratum-go/stratum/engine/state"
)

const specStepFail = `version: "0.2"
contracts:
  Out:
    ok: {type: boolean}
functions:
  work:
    mode: compute
    intent: "Work"
    input: {}
    output: Out
    retries: 2
    run: "echo '{}'"
  routed:
    mode: compute
    intent: "Work with a fallback"
    input: {}
    output: Out
    retries: 1
    run: "echo '{}'"
flows:
  main:
    input: {}
    steps:
      - id: a
        function: work
      - id: b
        function: routed
        on_fail: fix
      - id: fix
        intent: "repair"
        run: "echo '{}'"
`

func TestStepAttemptFailed(t *testing.T) {
	fail := func(f *fixture, step string, vs ...string) map[string]any {
		t.Helper()
		return f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
			return stepAttemptFailed(st, env, step, vs)
		})
	}
	tests := []struct {
		name  string
		drive func(t *testing.T, f *fixture) map[string]any
		want  map[string]any
		check func(t *testing.T, f *fixture, r map[string]any)
	}{
		{
			name:  "first failure retries with the violations",
			drive: func(t *testing.T, f *fixture) map[string]any { return fail(f, "a", "exit status 3: boom") },
			want:  map[string]any{"status": "ensure_failed", "step_id": "a", "violations": []any{"exit status 3: boom"}, "retries_remaining": 1},
			check: func(t *testing.T, f *fixture, r map[string]any) {
				if f.st.Attempts["a"] != 1 {
					t.Errorf("attempts %d", f.st.Attempts["a"])
				}
			},
		},
		{
			name: "exhaustion without on_fail fails the flow",
			drive: func(t *testing.T, f *fixture) map[string]any {
				fail(f, "a", "x")
				return fail(f, "a", "bad json")
			},
			want: map[string]any{"status": "error", "error_type": "retries_exhausted", "step_id": "a", "violations": []any{"bad json"}},
			check: func(t *testing.T, f *fixture, r map[string]any) {
				if f.st.Status != state.StatusFailed {
					t.Errorf("status %q", f.st.Status)
				}
				if recordTypes(f.st.Records) != "step:a" || f.st.Records[0].Attempts != 2 {
					t.Errorf("records %+v", f.st.Records)
				}
			},
		},
		{
			name: "a success after a failed attempt counts both",
			drive: func(t *testing.T, f *fixture) map[string]any {
				fail(f, "a", "x")
				return f.stepDone("a", map[string]any{"ok": true})
			},
			want: map[string]any{"status": "execute_step", "step_id": "b"},
			check: func(t *testing.T, f *fixture, r map[string]any) {
				if f.st.Records[0].Attempts != 2 {
					t.Errorf("attempts %d", f.st.Records[0].Attempts)
				}
			},
		},
		{
			name: "exhaustion routes on_fail",
			drive: func(t *testing.T, f *fixture) map[string]any {
				f.stepDone("a", map[string]any{"ok": true})
				return fail(f, "b", "timeout after 5s")
			},
			want: map[string]any{"status": "execute_step", "step_id": "fix", "routed_from": "b", "violations": []any{"timeout after 5s"}},
			check: func(t *testing.T, f *fixture, r map[string]any) {
				if v, ok := f.st.StepOutputs["b"]; !ok || v != nil {
					t.Errorf("output of b = %v, %v", v, ok)
				}
			},
		},
		{
			name:  "wrong step is refused unchanged",
			drive: func(t *testing.T, f *fixture) map[string]any { return fail(f, "b", "x") },
			want:  map[string]any{"status": "error", "error_type": "execution_error"},
			check: func(t *testing.T, f *fixture, r map[string]any) {
				if len(f.st.Attempts) != 0 {
					t.Errorf("attempts %v", f.st.Attempts)
				}
			},
		},
		{
			name:  "no violations gets a default one",
			drive: func(t *testing.T, f *fixture) map[string]any { return fail(f, "a") },
			want:  map[string]any{"status": "ensure_failed", "violations": []any{"attempt failed"}},
		},
		{
			name: "finished flow is refused",
			drive: func(t *testing.T, f *fixture) map[string]any {
				fail(f, "a", "x")
				fail(f, "a", "x")
				return fail(f, "a", "x")
			},
			want: map[string]any{"status": "error", "error_type": "execution_error"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := plan(t, specStepFail, "main", nil)
			r := tc.drive(t, f)
			expect(t, r, tc.want)
			if tc.check != nil {
				tc.check(t, f, r)
			}
		})
	}
}

func TestExhaustBudgetAndRecordCall(t *testing.T) {
	f, _ := plan(t, specStepFail, "main", nil)
	cost := 0.25
	r := f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return recordCall(st, env, CallRecord{StepID: "a", Attempt: 1, DurationMS: 40, Tokens: 100, CostUSD: &cost,
			Trace: &state.TraceRecord{Function: "work", Attempts: 1, StepID: "a"}})
	})
	expect(t, r, map[string]any{"status": "recorded"})
	f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return recordCall(st, env, CallRecord{StepID: "a", Attempt: 2, DurationMS: 10, Tokens: 5})
	})
	b := f.st.BudgetState
	if b == nil || b.SpentMS != 50 || b.SpentTokens != 105 || b.SpentUSD != 0.25 || !b.CostUnknown {
		t.Fatalf("ledger %+v", b)
	}
	if len(f.st.Trace) != 1 {
		t.Fatalf("trace %d", len(f.st.Trace))
	}
	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return exhaustBudget(st, env, "flow budget usd 0.2 spent")
	})
	expect(t, r, map[string]any{"status": "budget_exhausted", "step_id": "a"})
	if f.st.Status != state.StatusBudgetExhausted {
		t.Fatalf("status %q", f.st.Status)
	}
	r = f.stepDone("a", map[string]any{"ok": true})
	expect(t, r, map[string]any{"status": "error", "message": "Flow budget exhausted"})
	r = f.do(func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return exhaustBudget(st, env, "again")
	})
	expect(t, r, map[string]any{"status": "error"})
}
