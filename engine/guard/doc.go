// Package guard is the guarded-transition primitive (the original's
// STRAT-GUARD): a client registers a resource's transition graph with
// predicates per edge, and a transition is applied only when the edge is
// legal, the resource is in the edge's from state and the edge's
// predicates pass; every attempt, applied or refused, is appended to the
// resource's ledger.
//
// What it owns: the registration (graph, edge predicates, initial and
// terminal states, per-edge stakes, workspace root), checksummed so that a
// changed policy is detected (guard_tampered) and can only be replaced by
// a token-gated migrate; the ledger, append-only and hash-chained (each
// entry's digest covers the entry and the digest before it), kept in the
// store (engine.Tx's Guard methods: bbolt or etcd, so a team shares it),
// from which the current state is derived; idempotency keys (the same key
// and payload replays the recorded answer, another payload is
// idempotency_conflict); the token-gated override (a legal edge without
// its predicates, recorded as a deviation with a rationale) and migrate.
//
// Predicates of type deterministic (the default) are server-read evidence,
// evaluated by this process, never taken from the caller:
// server_file_exists('rel/path') under the workspace root (symlinks
// resolved, as file_exists), git_commit_exists('sha') in the workspace's
// repository, command_exit_zero(['cmd', 'arg']) (only when the server's
// environment allows commands) and verdict_receipt_clean('digest') (an
// applied entry of this ledger). Predicates of the judge's verifier tiers
// (verified, judged) are decided by the judge (Service.Judge:
// engine/internal/judge with the configured verifier agents) over the
// transition's artifacts and modified files; without a judge they are not
// met, with the reason, as the original without a verifier.
//
// Concurrency: the slow part (predicates) runs outside any transaction; the
// commit is one store transaction that re-reads the ledger, re-checks the
// from state and the idempotency key, and appends at the ledger's length,
// so of two processes transitioning one resource at once exactly one is
// applied and the other is told the state moved (stale_from_state).
//
// It imports engine (the store port), engine/internal/judge and specs/py
// (the path rule), and
// nothing that does I/O beyond the injected command runner and the files
// it reads. Part of the stratum command, not a public API.
package guard
