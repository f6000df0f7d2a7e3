package goal

import (
	"context"
	"os"
	"path/filepath"

	"github.com/stratum-go/stratum/engine"
)

// lastJudge is the last turn's judge result (nil: no turn yet).
func lastJudge(turns []Turn) map[string]any {
	if len(turns) == 0 {
		return nil
	}
	return turns[len(turns)-1].JudgeResult
}

// result is the original's GoalResult: the judge result of the turn it
// reports, with the goal's fields.
func result(st *State, turns []Turn, jr map[string]any, status string, sets *outcomeSets) engine.Response {
	out := engine.Response{}
	if jr == nil {
		jr = map[string]any{"clean": false, "met": false, "summary": "No turns ran.", "findings": []any{},
			"meta": map[string]any{"agent_type": "judge", "model_id": "n/a"}, "stakes": st.Stakes, "predicates": []any{},
			"judge_version": "1.0", "consensus": []any{}, "claude_only": []any{}, "codex_only": []any{}, "lenses_run": []any{},
			"auto_fixes": []any{}, "asks": []any{}, "tier_disagreements": []any{},
			"budget_consumed":   map[string]any{"turns": 0, "dollars": 0.0, "wall_clock_s": 0.0},
			"judge_kernel_meta": map[string]any{"decomposer_mode": "user", "smartmemory_priors_consulted": 0, "degraded_judged": false}}
	}
	for k, v := range jr {
		out[k] = v
	}
	if sets == nil {
		sets = &outcomeSets{bound: map[string]bool{}, waiting: map[string]bool{}}
		if status == StatusAwaitingDecision || (status == StatusMet && st.Mode != "shadow") {
			sets.bound, sets.waiting = partition(st, jr)
			if status == StatusMet {
				sets.waiting = map[string]bool{}
			}
		}
	}
	outcomes := []any{}
	ps, _ := jr["predicates"].([]any)
	for _, p := range ps {
		m, _ := p.(map[string]any)
		id, _ := m["id"].(string)
		outcomes = append(outcomes, map[string]any{"id": id, "type": m["type"], "verdict": m["verdict"], "confidence": m["confidence"],
			"applied_gate": m["applied_gate"], "judge_verdict": m["verdict"], "bound_autonomously": sets.bound[id],
			"awaiting_human": sets.waiting[id] && status == StatusAwaitingDecision})
	}
	out["goal_id"], out["goal_version"], out["mode"], out["status"] = st.GoalID, "1.0", st.Mode, status
	out["turns_run"], out["worker_runs"], out["round"], out["predicate_outcomes"] = len(turns), workerRuns(turns), st.Round, outcomes
	if st.Mode == "shadow" && len(turns) > 0 {
		out["would_have_decided"] = wouldHave(jr)
	}
	return out
}

func workerRuns(turns []Turn) []any {
	out := []any{}
	for _, t := range turns {
		out = append(out, map[string]any{"turn": t.Turn, "agent_correlation_id": t.AgentCorrelationID, "duration_ms": t.DurationMS})
	}
	return out
}

// wouldHave is what a shadow goal would have decided on jr.
func wouldHave(jr map[string]any) string {
	if met, _ := jr["met"].(bool); met {
		return "met"
	}
	ps, _ := jr["predicates"].([]any)
	for _, p := range ps {
		if m, _ := p.(map[string]any); m["verdict"] == "ambiguous" {
			return "ambiguous"
		}
	}
	return "not_met"
}

// IDRequest names a goal (stratum_goal_status, stratum_goal_archive).
type IDRequest struct {
	GoalID string `json:"goal_id" jsonschema:"the goal's id"`
}

// Status answers a goal's state without advancing it.
func (s *Service) Status(ctx context.Context, in IDRequest) (engine.Response, error) {
	st, turns, err := s.read(ctx, in.GoalID)
	if err != nil {
		return nil, err
	}
	if st == nil || st.Archived {
		return goalErr("GoalNotFoundError", "No goal found with id '%s'", in.GoalID), nil
	}
	r := result(st, turns, lastJudge(turns), st.Status, nil)
	resp := engine.Response{"goal_id": st.GoalID, "goal_version": "1.0", "mode": st.Mode, "status": st.Status, "round": st.Round,
		"turns_run": len(turns), "worker_runs": r["worker_runs"], "predicate_outcomes": r["predicate_outcomes"],
		"gate_history": gateHistory(st), "decision_gates": st.DecisionGates}
	if n := len(st.DecisionGates); st.Status == StatusAwaitingDecision && n > 0 && s.now().UnixMilli()-st.DecisionGates[n-1].RegisteredAtMS > 24*3600*1000 {
		resp["stale"] = true
	}
	return resp, nil
}

// gateHistory is the decisions made, as gate records.
func gateHistory(st *State) []any {
	out := []any{}
	for _, g := range st.DecisionGates {
		if g.Outcome != nil {
			out = append(out, map[string]any{"type": "gate", "step_id": "goal_decision", "outcome": *g.Outcome, "rationale": g.Note,
				"resolved_by": g.ResolvedBy, "round": g.Round})
		}
	}
	return out
}

// DecideRequest is stratum_goal_decide's arguments.
type DecideRequest struct {
	GoalID   string `json:"goal_id" jsonschema:"the goal awaiting a decision"`
	Decision string `json:"decision" jsonschema:"confirm (the goal is met), reject (the loop resumes with the note), kill"`
	Note     string `json:"note,omitempty" jsonschema:"the rationale; on reject it is put in the next turn's prompt"`
}

// Decide resolves an advisory pause: confirm → met, reject → the loop
// resumes at the next stratum_goal call with the note in the prompt, kill
// → killed. It answers the decision like a gate resolution.
func (s *Service) Decide(ctx context.Context, in DecideRequest) (engine.Response, error) {
	st, turns, err := s.read(ctx, in.GoalID)
	if err != nil {
		return nil, err
	}
	if st == nil || st.Archived {
		return goalErr("GoalNotFoundError", "No goal found with id '%s'", in.GoalID), nil
	}
	outcome, ok := map[string]string{"confirm": "approve", "reject": "revise", "kill": "kill"}[in.Decision]
	switch {
	case st.Status != StatusAwaitingDecision || len(st.DecisionGates) == 0:
		return goalErr("no_pending_decision", "Goal '%s' is not awaiting a decision (status %s).", in.GoalID, st.Status), nil
	case !ok:
		return goalErr("invalid_decision", "decision must be 'confirm', 'reject', or 'kill'; got '%s'", in.Decision), nil
	}
	g := &st.DecisionGates[len(st.DecisionGates)-1]
	now, human := s.now().UnixMilli(), "human"
	g.Decision, g.Outcome, g.ResolvedAtMS, g.ResolvedBy, g.Note = outcome, &outcome, &now, &human, in.Note
	switch in.Decision {
	case "confirm":
		st.Status = StatusMet
	case "reject":
		st.Status = StatusInProgress
		if in.Note != "" {
			note := in.Note
			g.RejectionNote = &note
		}
	case "kill":
		st.Status = StatusKilled
	}
	if err := s.save(ctx, st, nil, len(turns)); err != nil {
		return nil, err
	}
	return engine.Response{"status": map[string]string{"approve": "complete", "revise": "in_progress", "kill": "killed"}[outcome],
		"goal_id": in.GoalID, "decision": in.Decision, "outcome": outcome, "goal_status": st.Status, "round": st.Round}, nil
}

// Archive ends a goal: its judge turns' staging is removed and the goal is
// marked archived (its records stay in the store, append-only); a goal id
// archived can start a new goal.
func (s *Service) Archive(ctx context.Context, in IDRequest) (engine.Response, error) {
	st, turns, err := s.read(ctx, in.GoalID)
	if err != nil {
		return nil, err
	}
	if st == nil || st.Archived {
		return engine.Response{"status": "already_archived"}, nil
	}
	removed, remaining := []string{}, []string{}
	if s.JudgeRoot != "" {
		dir := filepath.Join(s.JudgeRoot, "goal-"+goalKey(st.GoalID)[1:17])
		if err := os.RemoveAll(dir); err != nil {
			remaining = append(remaining, "judge_dir")
		} else {
			removed = append(removed, "judge_dir")
		}
	}
	st.Archived = true
	if err := s.save(ctx, st, nil, len(turns)); err != nil {
		return nil, err
	}
	removed = append(removed, "goal_dir")
	if len(remaining) > 0 {
		return engine.Response{"status": "partial", "removed": removed, "remaining": remaining}, nil
	}
	return engine.Response{"status": "complete", "removed": removed}, nil
}
