package engine

import (
	"encoding/json"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// auditInProgress is the audit status of a flow that has not ended.
const auditInProgress = "in_progress"

// auditFlow builds the audit snapshot of a flow (upstream-behavior §2.17):
//
//	{flow_id, flow_name, status, steps_completed, total_steps, trace, round,
//	 rounds: [{round, steps}], iterations, archived_iterations, child_audits,
//	 total_duration_ms}
//
// with the original's later cache_hits (the trace's steps answered from the
// result cache) and budget_state (auditBudget), plus ours: created_at,
// updated_at, flow_status (st.Status), while the
// flow waits at a gate, gate (the pending gate with its deadline), and, once
// a judge step's judge ran, judge_history and judge_outcome (by step id),
// and for a flow a Go program drives, calls: its trace entries (inputs,
// retries with their violations, tool calls, streamed), in order.
//
// status is the terminal status when one is set (a kill routed to a cleanup
// step reports "killed"), else derived from st.Status: "complete", "killed",
// "budget_exhausted", "failed", or "in_progress" for a running flow or one
// waiting at a gate. steps_completed counts the active round's records, like
// the original (it can exceed total_steps), but not the gate records a
// revert undid: those stay in the trace with reverted: true (ours). rounds is always present. The
// iteration histories have their `result` stripped. total_duration_ms runs
// from the flow's start to now, or to its last update once it has ended.
//
// auditFlow is a read: it neither mutates st nor appends events.
func auditFlow(st *state.FlowState, env transitionEnv) *AuditReport {
	totalSteps := 0
	if env.Flow != nil {
		totalSteps = len(env.Flow.Order)
	}
	trace := st.Records
	if trace == nil {
		trace = []state.Record{}
	}
	rounds := make([]AuditRound, 0, len(st.Rounds))
	for i, recs := range st.Rounds {
		if recs == nil {
			recs = []state.Record{}
		}
		rounds = append(rounds, AuditRound{Round: i, Steps: recs})
	}
	archived := make([]map[string][]state.IterationEntry, 0, len(st.ArchivedIterations))
	for _, m := range st.ArchivedIterations {
		archived = append(archived, stripIterationResults(m))
	}
	childAudits := st.ChildAudits
	if childAudits == nil {
		childAudits = map[string][]json.RawMessage{}
	}
	a := &AuditReport{
		FlowID:             st.FlowID,
		FlowName:           st.FlowName,
		Status:             auditStatus(st),
		StepsCompleted:     liveRecords(st.Records),
		TotalSteps:         totalSteps,
		Trace:              trace,
		Round:              st.Round,
		Rounds:             rounds,
		Iterations:         stripIterationResults(st.Iterations),
		ArchivedIterations: archived,
		ChildAudits:        childAudits,
		TotalDurationMS:    auditDurationMS(st, env),
		CreatedAt:          st.CreatedAt,
		UpdatedAt:          st.UpdatedAt,
		FlowStatus:         st.Status,
	}
	a.Judge = st.Judge
	a.CacheHits = cacheHits(trace)
	a.BudgetState = auditBudget(env.Flow, st.BudgetState)
	if st.IsLibrary() {
		a.Calls = st.Trace
		if a.Calls == nil {
			a.Calls = []json.RawMessage{}
		}
	}
	if st.Status == state.StatusAwaitingGate && st.Gate != nil {
		g := *st.Gate
		a.Gate = &g
	}
	return a
}

// liveRecords counts the records a revert did not undo.
func liveRecords(recs []state.Record) int {
	n := 0
	for _, r := range recs {
		if !r.Reverted {
			n++
		}
	}
	return n
}

// auditStatus maps the flow state onto the audit's status vocabulary.
func auditStatus(st *state.FlowState) string {
	if st.TerminalStatus != nil && *st.TerminalStatus != "" {
		return *st.TerminalStatus
	}
	if st.Status.Finished() {
		return string(st.Status)
	}
	return auditInProgress
}

// auditDurationMS is the flow's wall-clock duration: from FlowStart to now
// while it runs, to its last update once it has ended (so the audit of a
// finished flow does not keep growing).
func auditDurationMS(st *state.FlowState, env transitionEnv) int64 {
	if st.FlowStart.IsZero() {
		return 0
	}
	end := env.Now
	if st.Status.Finished() && !st.UpdatedAt.IsZero() && st.UpdatedAt.Before(env.Now) {
		end = st.UpdatedAt
	}
	d := end.Sub(st.FlowStart).Milliseconds()
	if d < 0 {
		return 0
	}
	return d
}

// stripIterationResults copies an iteration history map with every entry's
// result removed (the audit never shows iteration results). It never returns
// nil.
func stripIterationResults(m map[string][]state.IterationEntry) map[string][]state.IterationEntry {
	out := make(map[string][]state.IterationEntry, len(m))
	for step, entries := range m {
		cp := make([]state.IterationEntry, len(entries))
		for i, e := range entries {
			e.Result = nil
			cp[i] = e
		}
		out[step] = cp
	}
	return out
}

// auditBudget is the audit's budget_state: nil unless the flow's budget
// caps an axis the ledger enforces (ms, usd, max_agent_dispatches,
// max_tokens), as the original's init_budget_state; consumed is read from
// the one ledger every driver charges (time as seconds, dollars rounded
// like spent_usd).
func auditBudget(f *specs.Flow, led *state.BudgetState) *AuditBudget {
	if f == nil || f.Budget == nil {
		return nil
	}
	b := *f.Budget // a copy: the caps point into it, not into the parsed spec
	var caps AuditBudgetCaps
	if b.MS > 0 {
		caps.MS = &b.MS
	}
	if b.USD != nil {
		usd := *b.USD
		caps.USD = &usd
	}
	if b.MaxAgentDispatches > 0 {
		caps.MaxAgentDispatches = &b.MaxAgentDispatches
	}
	if b.Tokens > 0 {
		caps.MaxTokens = &b.Tokens
	}
	if caps == (AuditBudgetCaps{}) {
		return nil
	}
	out := &AuditBudget{Caps: caps}
	if led != nil {
		out.Consumed = AuditBudgetConsumed{WallS: float64(led.SpentMS) / 1000, Dispatches: led.AgentDispatch,
			Tokens: led.SpentTokens, Dollars: state.RoundUSD(led.SpentUSD)}
	}
	return out
}
