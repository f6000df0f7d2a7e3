package mcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/goal"
	"github.com/stratum-go/stratum/engine/internal/judge"
	"github.com/stratum-go/stratum/engine/run"
)

// Goals (engine/goal): the original's four STRAT-GOAL tools. The worker
// is an agent run (run.RunAgentCall, the configured claude or codex); the
// judge is the judge of judge steps with the configured verifier agents.

func (s *server) goals() *goal.Service {
	g := &goal.Service{Store: s.svc.Store, Now: s.svc.Now, Modified: run.ModifiedFiles,
		Verifier: func(dir string) (judge.Verifier, error) {
			if dir == "" {
				dir = "."
			}
			return run.JudgeVerifier(dir)
		},
		Worker: func(ctx context.Context, agent, prompt, dir string) (string, string, error) {
			d := dir
			if d == "" {
				d = "."
			}
			cfg, err := config.Load(d)
			if err != nil {
				return "", "", err
			}
			id := engine.NewUUID()
			text, err := run.RunAgentCall(ctx, run.AgentCall{Agent: agent, Agents: run.Agents(cfg.Agents), Prompt: prompt, Dir: dir})
			return text, id, err
		}}
	if root, err := run.JudgeRoot(); err == nil {
		g.JudgeRoot = root
	}
	return g
}

func (s *server) registerGoalTools(srv *mcp.Server) {
	addTool(srv, s, &mcp.Tool{Name: "stratum_goal", Description: `Worker→judge loop toward predicates: each turn sends the task to a worker agent (worker.type: claude by default, or codex / a configured agent; worker.cwd its directory), stages its answer and has the judge decide the predicates, with the judge's findings fed into the next turn, until they are met or budget.max_turns (default 10) run out.
Modes: shadow (observe, never bind; would_have_decided; shadow_source 'observed' judges observed_artifacts once without a worker), advisory (pause for a person at the first met turn: stratum_goal_decide), autonomous (bind by itself when every met predicate's type is allowed by autonomy {deterministic, verified, judged} -> bool, else pause). Inputs: goal_id (stable; the same id resumes the goal), predicates [{id, type, statement, applied_gate}], mode, prompt, decomposer ('user'|'hybrid'; 'auto' not supported), artifact_contract, worker, stakes, budget, autonomy, shadow_source, observed_artifacts, observed_modified_files.
Returns the GoalResult: the last turn's JudgeResult plus goal_id, goal_version, mode, status (met, not_met, awaiting_decision, budget_exhausted, killed), turns_run, worker_runs, round, predicate_outcomes. Predicates and mode are fixed by the first call (GoalImmutabilityError).`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in goal.Request) (engine.Response, error) {
			return s.goals().Run(ctx, in)
		})
	addTool(srv, s, &mcp.Tool{Name: "stratum_goal_status", Annotations: readOnly(), Description: `A goal's state without advancing it. Input: goal_id. Returns {goal_id, goal_version, mode, status (in_progress, awaiting_decision, met, budget_exhausted, killed), round, turns_run, worker_runs, predicate_outcomes, gate_history, decision_gates, stale (true after 24 h awaiting a decision)}, or {status: 'error', error_type: 'GoalNotFoundError'}.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in goal.IDRequest) (engine.Response, error) {
			return s.goals().Status(ctx, in)
		})
	addTool(srv, s, &mcp.Tool{Name: "stratum_goal_decide", Description: `Resolve a goal's advisory pause (status awaiting_decision): confirm → the goal is met; reject → the loop resumes at the next stratum_goal call, the note put into the worker's prompt; kill → the goal is killed. Inputs: goal_id, decision ('confirm'|'reject'|'kill'), note. Returns {status: complete|in_progress|killed, goal_id, decision, outcome (approve|revise|kill), goal_status, round}, or {status: 'error', error_type: 'no_pending_decision'|'invalid_decision'|'GoalNotFoundError'}.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in goal.DecideRequest) (engine.Response, error) {
			return s.goals().Decide(ctx, in)
		})
	addTool(srv, s, &mcp.Tool{Name: "stratum_goal_archive", Description: `Archive a goal: its judge staging is removed and the goal is ended (its records stay in the store, append-only; the id cannot start a new goal). Idempotent. Input: goal_id. Returns {status: 'complete', removed}, {status: 'partial', removed, remaining}, or {status: 'already_archived'}.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in goal.IDRequest) (engine.Response, error) {
			return s.goals().Archive(ctx, in)
		})
}
