package mcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/guard"
	"github.com/stratum-go/stratum/engine/run"
)

// Guarded transitions (engine/guard): the original's five STRAT-GUARD
// tools over the shared store.

func (s *server) guards() *guard.Service {
	return &guard.Service{Store: s.svc.Store, Now: s.svc.Now, Run: run.ExitStatus, Channel: "mcp", Judge: run.GuardJudge()}
}

func guardTool[T any](f func(*guard.Service) func(context.Context, T) (engine.Response, error), s *server) toolFunc[T] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in T) (engine.Response, error) {
		return guard.Answer(f(s.guards())(ctx, in))
	}
}

func (s *server) registerGuardTools(srv *mcp.Server) {
	addTool(srv, s, &mcp.Tool{Name: "stratum_guard_register", Description: `Register a guarded resource: its transition graph with predicates per edge. Inputs: resource_id (opaque, e.g. 'compose:FEAT-1'), graph ({from_state: [to_state, ...]}), edge_predicates ({'from->to': [{id, type, statement}]}), initial (the first state), terminal (list), stakes ({'from->to': 'cheap'|'default'|'paranoid'}), workspace_root (absolute directory for server-read file, git and command evidence).
Deterministic predicates are server-read evidence: server_file_exists('rel/path'), git_commit_exists('sha'), command_exit_zero(['cmd', 'arg']) (only when the server's STRATUM_GUARD_ALLOW_COMMANDS=1), verdict_receipt_clean('ledger_ref'). The policy is checksummed and immutable: the same policy again answers status 'exists', another is refused (use stratum_guard_migrate). Returns {guard_id, checksum, status: 'registered'|'exists'} or {status: 'error', error_type, message}.`},
		guardTool(func(g *guard.Service) func(context.Context, guard.RegisterRequest) (engine.Response, error) {
			return g.Register
		}, s))
	addTool(srv, s, &mcp.Tool{Name: "stratum_guard_transition", Description: `Attempt a guarded transition from_state -> to_state. The edge must be legal and from_state the resource's current state; the edge's predicates are checked by the server (never taken from the caller); every attempt is appended to the resource's hash-chained ledger. Inputs: resource_id, from_state, to_state, artifacts ({name: content}), modified_files, idempotency_key (the same key and payload replays the answer; another payload is idempotency_conflict), resolved_by.
Returns {status: 'applied'|'refused'|'replayed', verdict (JudgeResult: met, predicates with verdicts, meta.guard_evidence), ledger_ref (the entry's digest: a receipt for verdict_receipt_clean), current_state} or {status: 'error', error_type (guard_not_found, illegal_edge, stale_from_state, guard_tampered, ledger_corrupt, …), message}.`},
		guardTool(func(g *guard.Service) func(context.Context, guard.TransitionRequest) (engine.Response, error) {
			return g.Transition
		}, s))
	addTool(srv, s, &mcp.Tool{Name: "stratum_guard_override", Description: `The single sanctioned bypass of an edge's predicates: moves a LEGAL edge without checking them and records a 'deviation' ledger entry with the rationale. Requires the out-of-band override_token (the server's STRATUM_GUARD_OVERRIDE_TOKEN; an agent cannot mint it), resolved_by 'human' and a rationale. Inputs: resource_id, from_state, to_state, override_token, rationale, resolved_by. Returns {status: 'deviation', ledger_ref, current_state, rationale} or {status: 'error', error_type: 'override_unavailable', …}.`},
		guardTool(func(g *guard.Service) func(context.Context, guard.OverrideRequest) (engine.Response, error) {
			return g.Override
		}, s))
	addTool(srv, s, &mcp.Tool{Name: "stratum_guard_migrate", Description: `Replace a guarded resource's policy (graph, predicates, terminal, stakes), token-gated like override so an agent cannot weaken it: bumps graph_version and records a 'graph_version' ledger entry; the current state must stay a node of the new graph. Inputs: resource_id, new_graph, new_edge_predicates, override_token, rationale, new_terminal, new_stakes. Returns {status: 'migrated', checksum, graph_version, ledger_ref, rationale}.`},
		guardTool(func(g *guard.Service) func(context.Context, guard.MigrateRequest) (engine.Response, error) {
			return g.Migrate
		}, s))
	addTool(srv, s, &mcp.Tool{Name: "stratum_guard_history", Annotations: readOnly(), Description: `A guarded resource's current state and its append-only, hash-chained ledger, the chain verified first (a broken one answers error_type 'ledger_corrupt' with first_broken, the index of the first entry that does not hash or link). Input: resource_id. Returns {resource_id, current_state, graph_version, checksum, ledger: [{ts_ms, from_state, to_state, outcome, kind, resolved_by, idempotency_key, payload_digest, rationale, verdict, channel, prev_digest, entry_digest}]}.`},
		guardTool(func(g *guard.Service) func(context.Context, guard.HistoryRequest) (engine.Response, error) {
			return g.History
		}, s))
}
