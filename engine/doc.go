// Package engine is the flow state machine of Stratum and, around it, the
// service that runs transitions against a Store.
//
// Transitions are the original server's, transition for transition
// (upstream-behavior §2): plan, resume, step_done, gate_resolve,
// check_timeouts, skip_step, the iteration protocol, commit/revert, audit and
// the v0.3 parallel consumer path, with the deliberate differences of
// DESIGN.md §12. A transition is a function of the flow state, the parsed spec
// and the request: it mutates the state it is given (a private copy loaded in
// the current store transaction), and returns the wire response and the events
// to append. Transitions do no I/O: time, ids and the file root for expression
// builtins come in through Env.
//
// Decisions where the original is silent or where we differ (besides
// DESIGN.md §12):
//
//   - Every finished flow is kept with its status: complete, killed, failed
//     (retries exhausted, no on_fail) or budget_exhausted. Reports into a
//     finished flow are execution errors; resume answers its final payload
//     (complete: the completion object; killed: {status, flow_id, trace,
//     total_duration_ms}; failed/budget_exhausted: {status, flow_id}).
//   - A kill routed to an on_kill step runs that step only; while it runs the
//     flow is "running" and resume returns its dispatch (the original
//     answered {status:"killed"}). Its completion is {status:"killed", output…}.
//   - A $-reference that fails while computing the next dispatch is an
//     execution_error and the whole transition is discarded (nothing is
//     written), so the report can be repeated once the cause is fixed.
//   - Plan validates inputs against the flow's (and, for the workflow's entry
//     flow, the workflow's) typed input params and applies workflow
//     defaults; a mismatch is error_type invalid_input. Undeclared inputs are
//     accepted, as the original.
//   - Gates: approver human refuses decisions through MCP (error_type
//     gate_requires_human); a decision naming another round (Decision.Round,
//     or the round of Decision.ReviewID) is stale_round. on_timeout revise
//     that cannot happen (no on_revise, max_rounds reached) kills instead.
//   - A child flow the parent stops waiting for (step_done or skip on the
//     parent step before the child finished) ends killed; a finished child
//     is never revived by re-dispatching the parent step, and completed
//     children are kept (their audits are also snapshotted into the parent's
//     child_audits).
//   - clearFrom (on_fail, next, revise) clears outputs, attempts, the
//     iteration outcome/best/accumulator/history and the active loop of the
//     cleared steps, as the original's _clear_from (a revise archives the
//     round's history first).
//   - A runner lease (FlowState.Owner) that is live refuses agent reports
//     (step_done, parallel_done, skip_step, iteration_*) from anyone but its
//     holder with error_type flow_owned; gate decisions are never refused by
//     a lease.
//
// JSON from outside (a step result or inputs given to the CLI, an MCP
// frame) is held to one rule, jsonlimit.go: at most MaxJSONBytes (16 MiB)
// and MaxJSONDepth (256) levels of nesting.
//
// The engine imports specs and review only; it never imports bbolt,
// bubbletea or fsnotify. Its Store port is implemented by package store.
package engine
