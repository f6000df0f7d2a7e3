package engine

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// stepIndex returns the ordered index of a step id in env.Flow (-1 if
// unknown).
func stepIndex(env transitionEnv, stepID string) int {
	if env.Flow == nil {
		return -1
	}
	for i, idx := range env.Flow.Order {
		if idx >= 0 && idx < len(env.Flow.Steps) && env.Flow.Steps[idx].ID == stepID {
			return i
		}
	}
	return -1
}

// totalSteps is the number of steps in execution order.
func totalSteps(env transitionEnv) int {
	if env.Flow == nil {
		return 0
	}
	return len(env.Flow.Order)
}

// stepAt returns the step at ordered index i, or nil when i is out of range.
func stepAt(env transitionEnv, i int) *specs.Step {
	if env.Flow == nil || i < 0 || i >= len(env.Flow.Order) {
		return nil
	}
	idx := env.Flow.Order[i]
	if idx < 0 || idx >= len(env.Flow.Steps) {
		return nil
	}
	return env.Flow.Steps[idx]
}

// currentStep returns the step under the cursor, or nil past the end.
func currentStep(st *state.FlowState, env transitionEnv) *specs.Step {
	return stepAt(env, st.CurrentIdx)
}

// pastEnd reports whether the cursor is past the last step.
func pastEnd(st *state.FlowState, env transitionEnv) bool { return st.CurrentIdx >= totalSteps(env) }

// clearFrom clears step outputs, attempts, iteration state (outcome, best,
// accumulator, history, the active loop), judge_history and judge_outcome
// (the original's STRAT-JUDGE clear) and dispatch times of every step
// from ordered index idx onward, except the step `except` ("" = none), and
// drops the active child flow pointer when it belongs to a cleared step
// (upstream-behavior §2.8; the original's _clear_from pops the iteration
// history too, so a step run again after on_fail/next starts its stagnation
// window afresh). A gate revise archives the round's history before.
func clearFrom(st *state.FlowState, env transitionEnv, idx int, except string) {
	if idx < 0 {
		idx = 0
	}
	cleared := map[string]bool{}
	for i := idx; i < totalSteps(env); i++ {
		s := stepAt(env, i)
		if s == nil || s.ID == except {
			continue
		}
		cleared[s.ID] = true
		delete(st.StepOutputs, s.ID)
		delete(st.Attempts, s.ID)
		delete(st.IterationOutcome, s.ID)
		delete(st.IterationBest, s.ID)
		delete(st.IterationAccumulator, s.ID)
		delete(st.Iterations, s.ID)
		delete(st.DispatchedAt, s.ID)
		if st.Judge != nil {
			delete(st.Judge.History, s.ID)
			delete(st.Judge.Outcome, s.ID)
		}
		if st.ActiveIteration != nil && st.ActiveIteration.StepID == s.ID {
			st.ActiveIteration = nil
		}
	}
	if st.ActiveChildFlowID != nil {
		if cur := currentStep(st, env); cur == nil || cleared[cur.ID] {
			st.ActiveChildFlowID = nil
		}
	}
}

// ensureMaps makes every map of the state non-nil, so transitions can write
// into them and the JSON shape matches the original ({} rather than null).
func ensureMaps(st *state.FlowState) {
	if st.CurrentIdx < 0 {
		st.CurrentIdx = 0
	}
	if st.Inputs == nil {
		st.Inputs = map[string]any{}
	}
	if st.StepOutputs == nil {
		st.StepOutputs = map[string]any{}
	}
	if st.Records == nil {
		st.Records = []state.Record{}
	}
	if st.Attempts == nil {
		st.Attempts = map[string]int{}
	}
	if st.Checkpoints == nil {
		st.Checkpoints = map[string]*state.Checkpoint{}
	}
	if st.Rounds == nil {
		st.Rounds = [][]state.Record{}
	}
	if st.Iterations == nil {
		st.Iterations = map[string][]state.IterationEntry{}
	}
	if st.ArchivedIterations == nil {
		st.ArchivedIterations = []map[string][]state.IterationEntry{}
	}
	if st.IterationOutcome == nil {
		st.IterationOutcome = map[string]string{}
	}
	if st.IterationBest == nil {
		st.IterationBest = map[string]*state.IterationBest{}
	}
	if st.IterationAccumulator == nil {
		st.IterationAccumulator = map[string]*state.Accumulator{}
	}
	if st.ChildAudits == nil {
		st.ChildAudits = map[string][]json.RawMessage{}
	}
	if st.DispatchedAt == nil {
		st.DispatchedAt = map[string]time.Time{}
	}
}

// isFinished reports whether the flow has reached a final status.
func isFinished(st *state.FlowState) bool { return st.Status.Finished() }

// killedMode reports whether a gate kill set terminal_status "killed": the
// cleanup step (if any) runs, then the flow ends killed.
func killedMode(st *state.FlowState) bool {
	return st.TerminalStatus != nil && *st.TerminalStatus == string(state.StatusKilled)
}

// advanceLinear moves the cursor to the next ordered step, or, while the
// flow runs its kill cleanup step, to the end (README, "Deliberate differences": kill with cleanup
// runs only the cleanup step).
func advanceLinear(st *state.FlowState, env transitionEnv) {
	if killedMode(st) {
		st.CurrentIdx = totalSteps(env)
		return
	}
	st.CurrentIdx++
}

// event builds an event of this flow at env.Now, of the payload's kind.
func event(st *state.FlowState, env transitionEnv, stepID string, p Payload) Event {
	return Event{Time: env.Now, FlowID: st.FlowID, Type: p.Kind(), StepID: stepID, Data: p}
}

// newRecord starts a record of the current round.
func newRecord(st *state.FlowState, env transitionEnv, typ, stepID string) state.Record {
	return state.Record{Type: typ, StepID: stepID, Round: st.Round, RoundStartStepID: copyStrPtr(st.RoundStartStepID), At: env.Now}
}

func strPtr(s string) *string { return &s }

func copyStrPtr(p *string) *string {
	if p == nil {
		return nil
	}
	s := *p
	return &s
}

// nullable renders "" as JSON null.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// durationMS is the milliseconds from t to now (0 when t is zero or later).
func durationMS(t, now time.Time) int64 {
	if t.IsZero() || now.Before(t) {
		return 0
	}
	return now.Sub(t).Milliseconds()
}

// copyRecords returns a copy of a record list (never nil).
func copyRecords(rs []state.Record) []state.Record {
	out := make([]state.Record, len(rs))
	copy(out, rs)
	return out
}

// stateBytes is the JSON of a state (tests compare states by it).
func stateBytes(st *state.FlowState) []byte {
	b, _ := json.Marshal(st)
	return b
}

// sameState reports whether a transition left st as before (a Clone taken
// before it): a deep comparison, four times cheaper than comparing the
// JSON of both. It may see a difference JSON would not (a nil slice made
// empty), which only costs a write; it never misses a real change.
func sameState(before, st *state.FlowState) bool { return reflect.DeepEqual(before, st) }
