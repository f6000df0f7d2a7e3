package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// stepAttemptFailed records a failed attempt of the current step that
// produced no checkable result (a command that exited non-zero, output that
// is not JSON, an LLM answer that could not be parsed, a refusal…). It counts
// the attempt exactly like a failed ensure in StepDone and answers the same
// responses: the step's dispatch again with status ensure_failed and the
// violations while attempts remain; on exhaustion on_fail routing (with
// routed_from and the violations, the step's output set to null) or
// retries_exhausted with the flow failed.
//
// Refusals (finished flow, gate step, another step) are StepDone's.
func stepAttemptFailed(st *state.FlowState, env transitionEnv, stepID string, violations []string) (transitionResult, error) {
	ensureMaps(st)
	step, e := reportable(st, env, stepID, attemptFailedReport)
	if e != nil {
		return refused(e), nil
	}
	if len(violations) == 0 {
		violations = []string{"attempt failed"}
	}
	childID := ""
	var pre transitionResult
	if step.Kind == specs.KindFlow {
		// A failed child run: keep the child's audit like StepDone does.
		childID = snapshotChildAudit(st, env, step.ID, &pre)
	}
	st.Attempts[step.ID]++
	res, err := failAttempt(st, env, step, nil, childID, st.Attempts[step.ID], CheckEnsure, append([]string(nil), violations...))
	if err != nil {
		return transitionResult{}, err
	}
	return mergeResults(pre, res), nil
}

// exhaustBudget ends a running flow (and its active child, by the caller)
// with status budget_exhausted: the run budget (ms, usd, tokens) of the flow
// or of the current call ran out. reason is recorded in the flow_finished
// event and the response. A finished flow is refused unchanged.
func exhaustBudget(st *state.FlowState, env transitionEnv, reason string) (transitionResult, error) {
	ensureMaps(st)
	if isFinished(st) || pastEnd(st, env) {
		return refused(execErrorf("Flow is already finished")), nil
	}
	stepID := ""
	if s := currentStep(st, env); s != nil {
		stepID = s.ID
		delete(st.DispatchedAt, s.ID)
	}
	st.Status = state.StatusBudgetExhausted
	st.Gate = nil
	st.ActiveIteration = nil
	var res transitionResult
	res.Events = append(res.Events, event(st, env, stepID, FlowFinished{
		Status: string(state.StatusBudgetExhausted), Reason: reason,
	}))
	res.Outcome = &BudgetExhausted{FlowID: st.FlowID, StepID: stepID, Reason: reason, Output: flowOutput(st, env),
		Trace: copyRecords(st.Records), TotalDurationMS: durationMS(st.FlowStart, env.Now), BudgetState: auditBudget(env.Flow, st.BudgetState)}
	return res, nil
}

// CallRecord is what the runner records after one executor call: the spend
// that goes into the flow's budget ledger and, for infer calls, the trace
// record.
type CallRecord struct {
	StepID     string
	Attempt    int
	DurationMS int64
	Tokens     int64
	CostUSD    *float64 // nil: unknown (the ledger notes it)
	Agent      bool     // an agent CLI dispatch
	Trace      *state.TraceRecord
	// What the trace event says of the call besides its spend.
	Executor    string   // infer, command, agent…
	CacheHit    bool     // served from the result cache
	ErrorKind   string   // a failed attempt's kind (AttemptError.Kind), with Violations
	Violations  []string // a failed attempt's violations
	TaskID      string   // the fan-out task the call ran for
	ChildFlowID string   // booked to an ancestor: the child flow that made the call
}

// recordCall adds a call's spend to the flow's budget ledger
// (FlowState.BudgetState), appends its trace record to FlowState.Trace and
// emits a trace event. It works on finished flows too (the ledger of a
// failed flow stays accurate).
func recordCall(st *state.FlowState, env transitionEnv, c CallRecord) (transitionResult, error) {
	if st.BudgetState == nil {
		st.BudgetState = &state.BudgetState{}
	}
	b := st.BudgetState
	b.SpentMS += c.DurationMS
	b.SpentTokens += c.Tokens
	if c.CostUSD != nil {
		b.SpentUSD += *c.CostUSD
	} else if c.Tokens > 0 {
		b.CostUnknown = true
	}
	if c.Agent {
		b.AgentDispatch++
	}
	data := Trace{Attempt: c.Attempt, DurationMS: c.DurationMS, Tokens: c.Tokens,
		Executor: c.Executor, CacheHit: c.CacheHit, ErrorKind: c.ErrorKind, Violations: c.Violations,
		TaskID: c.TaskID, ChildFlowID: c.ChildFlowID}
	if c.CostUSD != nil {
		cost := *c.CostUSD
		data.CostUSD = &cost
	}
	if c.Trace != nil {
		raw, err := json.Marshal(c.Trace)
		if err != nil {
			return transitionResult{}, execErrorf("trace record is not JSON-encodable: %v", err)
		}
		st.Trace = append(st.Trace, json.RawMessage(raw))
		tr := *c.Trace
		data.Trace = &tr
	}
	return transitionResult{
		Outcome: &callRecorded{FlowID: st.FlowID, Budget: *b},
		Events:  []Event{event(st, env, c.StepID, data)},
	}, nil
}

// ExhaustBudget is the Service form of ExhaustBudget (lease-checked).
func (s *Service) ExhaustBudget(ctx context.Context, flowID, reason string, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return exhaustBudget(st, env, reason)
	})
}

// RecordCall is the Service form of RecordCall (lease-checked).
func (s *Service) RecordCall(ctx context.Context, flowID string, c CallRecord, opt ReportOptions) (Outcome, error) {
	return s.transition(ctx, flowID, &opt, func(st *state.FlowState, env transitionEnv) (transitionResult, error) {
		return recordCall(st, env, c)
	})
}

// Ledger returns the budget ledger of flow flowID (the zero ledger when
// no call was recorded), what a runner works out a step's budget from.
// Like Audit, it starts from the state this Service committed last when it
// holds it, checked by the flow's summary: no read of the whole flow.
func (q Query) Ledger(ctx context.Context, flowID string) (state.BudgetState, error) {
	if !plausibleFlowID(flowID) {
		return state.BudgetState{}, flowNotFound(flowID)
	}
	var led state.BudgetState
	_, err := q.s.optimisticOn(ctx, "ledger of flow "+flowID, ownBySummary, func(sn *snapshot, _ time.Time) (computed, error) {
		st, err := sn.Get(flowID)
		if errors.Is(err, ErrNotFound) {
			return computed{}, flowNotFound(flowID)
		}
		if err != nil {
			return computed{}, err
		}
		led = state.BudgetState{}
		if st.BudgetState != nil {
			led = *st.BudgetState
		}
		return computed{res: answer(&callRecorded{FlowID: flowID, Budget: led})}, nil
	})
	return led, err
}
