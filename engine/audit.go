package engine

import (
	"encoding/json"
)

// Audit statuses (the original's `status` key of stratum_audit).
const (
	auditComplete   = "complete"
	auditInProgress = "in_progress"
)

// Audit builds the audit snapshot of a flow (upstream-behavior §2.17):
//
//	{flow_id, flow_name, status, steps_completed, total_steps, trace, round,
//	 rounds: [{round, steps}], iterations, archived_iterations, child_audits,
//	 total_duration_ms}
//
// plus ours: created_at, updated_at, flow_status (st.Status) and, while the
// flow waits at a gate, gate (the pending gate with its deadline).
//
// status is the terminal status when one is set (a kill routed to a cleanup
// step reports "killed"), else derived from st.Status: "complete", "killed",
// "budget_exhausted", "failed", or "in_progress" for a running flow or one
// waiting at a gate. steps_completed counts the active round's records, like
// the original (it can exceed total_steps). rounds is always present. The
// iteration histories have their `result` stripped. total_duration_ms runs
// from the flow's start to now, or to its last update once it has ended.
//
// Audit is a read: it neither mutates st nor appends events.
func Audit(st *FlowState, env Env) Response {
	totalSteps := 0
	if env.Flow != nil {
		totalSteps = len(env.Flow.Order)
	}
	trace := st.Records
	if trace == nil {
		trace = []Record{}
	}
	rounds := make([]map[string]any, 0, len(st.Rounds))
	for i, recs := range st.Rounds {
		if recs == nil {
			recs = []Record{}
		}
		rounds = append(rounds, map[string]any{"round": i, "steps": recs})
	}
	archived := make([]map[string][]IterationEntry, 0, len(st.ArchivedIterations))
	for _, m := range st.ArchivedIterations {
		archived = append(archived, stripIterationResults(m))
	}
	childAudits := st.ChildAudits
	if childAudits == nil {
		childAudits = map[string][]json.RawMessage{}
	}

	resp := Response{
		"flow_id":             st.FlowID,
		"flow_name":           st.FlowName,
		"status":              auditStatus(st),
		"steps_completed":     len(st.Records),
		"total_steps":         totalSteps,
		"trace":               trace,
		"round":               st.Round,
		"rounds":              rounds,
		"iterations":          stripIterationResults(st.Iterations),
		"archived_iterations": archived,
		"child_audits":        childAudits,
		"total_duration_ms":   auditDurationMS(st, env),
		"created_at":          st.CreatedAt,
		"updated_at":          st.UpdatedAt,
		"flow_status":         st.Status,
	}
	if st.Status == StatusAwaitingGate && st.Gate != nil {
		g := *st.Gate
		resp["gate"] = &g
	}
	return resp
}

// auditStatus maps the flow state onto the audit's status vocabulary.
func auditStatus(st *FlowState) string {
	if st.TerminalStatus != nil && *st.TerminalStatus != "" {
		return *st.TerminalStatus
	}
	switch st.Status {
	case StatusComplete, StatusKilled, StatusBudgetExhausted, StatusFailed:
		return st.Status
	default:
		return auditInProgress
	}
}

// auditFlowEnded reports whether the flow reached a final status.
func auditFlowEnded(st *FlowState) bool {
	switch st.Status {
	case StatusComplete, StatusKilled, StatusBudgetExhausted, StatusFailed:
		return true
	}
	return false
}

// auditDurationMS is the flow's wall-clock duration: from FlowStart to now
// while it runs, to its last update once it has ended (so the audit of a
// finished flow does not keep growing).
func auditDurationMS(st *FlowState, env Env) int64 {
	if st.FlowStart.IsZero() {
		return 0
	}
	end := env.Now
	if auditFlowEnded(st) && !st.UpdatedAt.IsZero() && st.UpdatedAt.Before(env.Now) {
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
func stripIterationResults(m map[string][]IterationEntry) map[string][]IterationEntry {
	out := make(map[string][]IterationEntry, len(m))
	for step, entries := range m {
		cp := make([]IterationEntry, len(entries))
		for i, e := range entries {
			e.Result = nil
			cp[i] = e
		}
		out[step] = cp
	}
	return out
}
