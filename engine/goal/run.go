package goal

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/internal/judge"
	"github.com/stratum-go/stratum/specs"
)

// Request is stratum_goal's arguments.
type Request struct {
	GoalID                string            `json:"goal_id" jsonschema:"a stable id chosen by the caller; the same id resumes the goal"`
	Predicates            []map[string]any  `json:"predicates" jsonschema:"the judge predicates {id, type (deterministic|verified|judged), statement, applied_gate}"`
	Mode                  string            `json:"mode" jsonschema:"shadow, advisory or autonomous"`
	Prompt                string            `json:"prompt,omitempty" jsonschema:"the worker's task"`
	Decomposer            string            `json:"decomposer,omitempty" jsonschema:"user (default) or hybrid: the predicates are given; auto is not supported"`
	ArtifactContract      []map[string]any  `json:"artifact_contract,omitempty" jsonschema:"artifacts the worker is asked for, each {name, description}"`
	Worker                map[string]any    `json:"worker,omitempty" jsonschema:"{type: claude|codex|a configured agent, cwd}"`
	Stakes                string            `json:"stakes,omitempty" jsonschema:"cheap, default or paranoid"`
	Budget                map[string]any    `json:"budget,omitempty" jsonschema:"{max_turns (default 10), max_dollars, max_wall_clock_s}"`
	Autonomy              map[string]bool   `json:"autonomy,omitempty" jsonschema:"autonomous mode: predicate types bound without a person ({deterministic, verified, judged} -> bool)"`
	ShadowSource          string            `json:"shadow_source,omitempty" jsonschema:"driven (default) or observed"`
	ObservedArtifacts     map[string]string `json:"observed_artifacts,omitempty" jsonschema:"shadow_source observed: the artifacts to judge"`
	ObservedModifiedFiles []string          `json:"observed_modified_files,omitempty" jsonschema:"shadow_source observed: the files modified"`
}

// Run advances a goal: it creates it (or resumes it), then runs turns
// until its predicates are met, a decision is needed, or the turns run
// out; it answers the original's GoalResult.
func (s *Service) Run(ctx context.Context, in Request) (engine.Response, error) {
	if r := checkRequest(in); r != nil {
		return r, nil
	}
	preds, bad := predicates(in.Predicates)
	if bad != nil {
		return bad, nil
	}
	st, turns, err := s.read(ctx, in.GoalID)
	if err != nil {
		return nil, err
	}
	switch {
	case st != nil && st.Archived:
		return goalErr("GoalArchivedError", "goal %q was archived; its records stay in the store: start a new goal with another goal_id", in.GoalID), nil
	case st == nil:
		st = newState(in)
		if err := s.save(ctx, st, nil, 0); err != nil {
			return nil, err
		}
	case st.PredicatesHash != hashOf(in.Predicates) || st.Mode != in.Mode:
		return goalErr("GoalImmutabilityError", "goal %q was started with other predicates or another mode; they cannot change", in.GoalID), nil
	}
	switch st.Status {
	case StatusKilled, StatusMet, StatusAwaitingDecision, StatusBudgetExhausted:
		return result(st, turns, lastJudge(turns), st.Status, nil), nil
	}
	if in.Mode == "shadow" && in.ShadowSource == "observed" {
		return s.observed(ctx, st, turns, preds, in)
	}
	if s.Worker == nil {
		return goalErr("worker_unavailable", "this server runs no worker agents"), nil
	}
	for st.Round < st.MaxTurns {
		jr, turn, err := s.turn(ctx, st, turns, preds, in)
		if err != nil {
			return nil, err
		}
		st.Round++
		if turn != nil {
			turns = append(turns, *turn)
		}
		if jr == nil || !turn.Met {
			if err := s.save(ctx, st, turn, len(turns)-btoi(turn != nil)); err != nil {
				return nil, err
			}
			continue
		}
		return s.met(ctx, st, turns, jr)
	}
	st.Status = StatusBudgetExhausted
	if err := s.save(ctx, st, nil, 0); err != nil {
		return nil, err
	}
	return result(st, turns, lastJudge(turns), StatusBudgetExhausted, nil), nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func checkRequest(in Request) engine.Response {
	switch {
	case strings.TrimSpace(in.GoalID) == "":
		return goalErr("invalid_arguments", "goal_id is required")
	case in.Decomposer != "" && in.Decomposer != "user" && in.Decomposer != "hybrid":
		if in.Decomposer == "auto" {
			return goalErr("not_supported", "decomposer='auto' is not supported by this stratum: write the predicates (or draft them with the agent) and pass them with decomposer 'user'")
		}
		return goalErr("invalid_decomposer", "decomposer=%q is invalid; expected one of 'user'|'auto'|'hybrid' ('ask' is a skill-layer concept).", in.Decomposer)
	case in.Mode != "shadow" && in.Mode != "advisory" && in.Mode != "autonomous":
		return goalErr("invalid_mode", "mode must be shadow, advisory or autonomous, not %q", in.Mode)
	case in.Stakes != "" && in.Stakes != specs.StakesCheap && in.Stakes != specs.StakesDefault && in.Stakes != specs.StakesParanoid:
		return goalErr("invalid_stakes", "stakes must be cheap, default or paranoid, not %q", in.Stakes)
	case in.ShadowSource == "observed" && (in.Mode != "shadow" || in.ObservedArtifacts == nil):
		return goalErr("invalid_arguments", "shadow_source 'observed' needs mode 'shadow' and observed_artifacts")
	}
	return nil
}

func newState(in Request) *State {
	st := &State{GoalID: in.GoalID, Predicates: in.Predicates, PredicatesHash: hashOf(in.Predicates), Mode: in.Mode, Prompt: in.Prompt,
		Stakes: in.Stakes, MaxTurns: 10, Autonomy: in.Autonomy, Worker: "claude", Status: StatusInProgress, DecisionGates: []DecisionGate{}}
	if st.Stakes == "" {
		st.Stakes = specs.StakesDefault
	}
	if n, ok := in.Budget["max_turns"].(float64); ok && n >= 1 {
		st.MaxTurns = int(n)
	}
	if w, ok := in.Worker["type"].(string); ok && w != "" {
		st.Worker = w
	}
	if d, ok := in.Worker["cwd"].(string); ok {
		st.Dir = d
	}
	return st
}

// turn runs one worker turn and judges it (nil result: the worker or the
// judge failed; the turn still counts).
func (s *Service) turn(ctx context.Context, st *State, turns []Turn, preds []*specs.Predicate, in Request) (map[string]any, *Turn, error) {
	start := time.Now()
	text, corr, err := s.Worker(ctx, st.Worker, turnPrompt(st, turns, in.ArtifactContract), st.Dir)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, nil
	}
	var modified []string
	if s.Modified != nil && st.Dir != "" {
		modified = s.Modified(ctx, st.Dir)
	}
	jr, err := s.judge(ctx, st, preds, map[string]string{"worker_output": text}, modified)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, nil
	}
	met, _ := jr["met"].(bool)
	return jr, &Turn{Turn: len(turns) + 1, AgentCorrelationID: corr, DurationMS: time.Since(start).Milliseconds(), JudgeResult: jr, Met: met}, nil
}

// judge decides the predicates over the artifacts.
func (s *Service) judge(ctx context.Context, st *State, preds []*specs.Predicate, artifacts map[string]string, modified []string) (map[string]any, error) {
	var v judge.Verifier
	if s.Verifier != nil {
		var err error
		if v, err = s.Verifier(st.Dir); err != nil {
			return nil, err
		}
	}
	res, err := judge.Run(ctx, judge.Request{FlowID: "goal-" + goalKey(st.GoalID)[1:17], StepID: "goal_turn", Predicates: preds, Stakes: st.Stakes,
		Artifacts: artifacts, Modified: modified, Workspace: st.Dir, Root: s.JudgeRoot, Verifier: v, Now: s.Now})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}

// met handles a met turn: autonomous with every met predicate's type
// allowed binds (met); otherwise the goal waits for a decision.
func (s *Service) met(ctx context.Context, st *State, turns []Turn, jr map[string]any) (engine.Response, error) {
	bound, waiting := partition(st, jr)
	st.Status = StatusAwaitingDecision
	switch {
	case st.Mode == "shadow":
		st.Status = StatusMet
	case st.Mode == "autonomous" && len(waiting) == 0:
		st.Status = StatusMet
	default:
		st.DecisionGates = append(st.DecisionGates, DecisionGate{Round: st.Round, Decision: "pending", RegisteredAtMS: s.now().UnixMilli()})
	}
	if err := s.save(ctx, st, &turns[len(turns)-1], len(turns)-1); err != nil {
		return nil, err
	}
	return result(st, turns, jr, st.Status, &outcomeSets{bound: bound, waiting: waiting}), nil
}

type outcomeSets struct{ bound, waiting map[string]bool }

// partition splits the met predicates into those bound by autonomy and
// those awaiting a person (autonomy counts only in autonomous mode).
func partition(st *State, jr map[string]any) (bound, waiting map[string]bool) {
	bound, waiting = map[string]bool{}, map[string]bool{}
	ps, _ := jr["predicates"].([]any)
	for _, p := range ps {
		m, _ := p.(map[string]any)
		if m["verdict"] != "met" {
			continue
		}
		id, _ := m["id"].(string)
		typ, _ := m["type"].(string)
		if st.Mode == "autonomous" && st.Autonomy[typ] {
			bound[id] = true
		} else {
			waiting[id] = true
		}
	}
	return bound, waiting
}

// observed judges the caller's artifacts once (shadow, observed).
func (s *Service) observed(ctx context.Context, st *State, turns []Turn, preds []*specs.Predicate, in Request) (engine.Response, error) {
	jr, err := s.judge(ctx, st, preds, in.ObservedArtifacts, in.ObservedModifiedFiles)
	if err != nil {
		return goalErr("judge_failed", "the judge could not decide: %v", err), nil
	}
	met, _ := jr["met"].(bool)
	t := Turn{Turn: len(turns) + 1, AgentCorrelationID: "observed", JudgeResult: jr, Met: met}
	st.Round++
	status := StatusNotMet
	if met {
		status, st.Status = StatusMet, StatusMet
	}
	if err := s.save(ctx, st, &t, len(turns)); err != nil {
		return nil, err
	}
	return result(st, append(turns, t), jr, status, nil), nil
}

// turnPrompt is the worker's prompt: the task, a rejected decision's note,
// the artifacts to produce, the judge's findings of the last three turns.
func turnPrompt(st *State, turns []Turn, contract []map[string]any) string {
	var b strings.Builder
	b.WriteString("[Task]\n" + st.Prompt + "\n")
	if n := len(st.DecisionGates); n > 0 && st.DecisionGates[n-1].RejectionNote != nil {
		b.WriteString("\n[Human override]\n" + *st.DecisionGates[n-1].RejectionNote + "\n")
	}
	if len(contract) > 0 {
		b.WriteString("\n[Artifacts to produce this turn]\n")
		for _, a := range contract {
			fmt.Fprintf(&b, "- %v: %v\n", a["name"], a["description"])
		}
	}
	b.WriteString("\n[Previous judge feedback]\n")
	if len(turns) == 0 {
		b.WriteString("None: this is the first turn.\n")
	}
	for i := max(0, len(turns)-3); i < len(turns); i++ {
		fmt.Fprintf(&b, "Turn %d: %v\n", turns[i].Turn, turns[i].JudgeResult["summary"])
		ps, _ := turns[i].JudgeResult["predicates"].([]any)
		for _, p := range ps {
			m, _ := p.(map[string]any)
			if m["verdict"] != "met" {
				fmt.Fprintf(&b, "  - %v: %v\n", m["id"], m["verdict"])
			}
		}
	}
	b.WriteString("\n[Constraints]\nDo the task in the working directory; end with a short report of what you did and the evidence (test output, files changed).\n")
	return b.String()
}
