// Package engine is the flow state machine of Stratum and, around it, the
// service that runs transitions against a Store.
//
// Part of the stratum command, not a public API: its exported names serve
// the command's packages and may change.
//
// # Types inside, JSON at the edges
//
// A transition answers a typed Outcome — one of *StepDispatch,
// *ParallelDispatch, *GateDispatch, *ChildDispatch, *Completion, *Stopped,
// *BudgetExhausted, *IterationReported, or an answer only Wire renders
// (a call booked, no timeout, a checkpoint, an iteration started or
// aborted, an audit: unexported, no front end acts on them) —
// or a *Error, the original's error envelope: its ErrorType is the
// original's error_type, and it matches the review sentinels with errors.Is
// (a decision on a gate that moved on is review.ErrAlreadyDecided, one for
// another round review.ErrStaleRound, one refused for its channel
// review.ErrNotAllowed, one without the rationale it needs
// review.ErrRationaleRequired). Service methods return (Outcome, error): a *Error
// or a store failure. Two errors are answered after the transition was
// committed (Error.Committed): retries_exhausted and max_rounds_exceeded.
// Notes carry what a report adds to the outcome it answers with (a failed
// attempt's violations, on_fail routing, a revert's label, a timeout).
// A flow's status (state.FlowStatus) is a typed enum with predicates
// (Finished, Active).
//
// Wire is the one function that renders the original's JSON, byte for byte
// what the original's clients read: the MCP tools and the CLI's JSON output
// print what it returns (json.Marshal of an outcome renders the same).
// WireJSON is its JSON, the same bytes: the audit, the longest answer,
// writes them with a typed encoder (wire_audit.go) instead of a map.
// The CLI's own objects (`stratum query`, over the reads FlowWithSpec and
// PendingGateSteps of query.go, and `stratum gate`) are engine/clijson's.
// Nothing inside stratum reads a rendered response back: the runner, the
// TUI and the CLI switch on the outcome's type.
//
// Transitions are the original server's, transition for transition
// (upstream-behavior §2): plan, resume, step_done, gate_resolve,
// check_timeouts, skip_step, the iteration protocol, commit/revert, audit and
// the v0.3 parallel consumer path, with the deliberate differences of
// README, "Deliberate differences from the original". A transition is a function of the flow state, the parsed spec
// and the request: it mutates the state it is given (a private copy read
// from the store), and returns the wire response and the events to append.
// Transitions do no I/O: time, ids, the file root for expression builtins,
// the request's context (transitionEnv.Ctx: every evaluation stops once it is done)
// and the reader of child flows come in through transitionEnv. The transitions
// (planFlow, resumeFlow, stepDone, gateResolve, …) are unexported: the
// Service is the one way to run them, so nothing outside the package
// depends on their signatures.
//
// Service has one method per transition, each taking a request struct
// where a report has optional parts (StepReport, AttemptFailure,
// ParallelReport), the event feed (Watch) and the deadline sweeps. Beside
// it, over the same store and committing through it: Query (Service.Query:
// flows, summaries, events, pending gates and reviews), Leases
// (Service.Leases: a runner's lease on a flow or a fan-out step) and
// Library (NewLibrary: the recorder of Go programs' flows).
//
// The exported names are what the Service (and its FlowWriter, a
// process's one writer of a flow, its Query, Leases and Library), its ports (Store, Tx, Executor, the
// optional EventLimiter), its outcomes, errors and events need, and the
// few reads of a flow state that need the engine's rules (Summarize,
// PendingReview, ReviewArtifacts, ResolveStepInputs, ResolveSource,
// CheckReviewValue, PrunableLine). The persisted shape of a flow — FlowState
// and its stored parts, FlowStatus, FlowSummary, what Tx.Get and Tx.Put
// carry and front ends read — is package engine/state, plain data that
// imports nothing of ours. Plumbing shared only by packages under engine/
// lives in engine/internal (llm, infer, otlp, redact, jsonlimit: the limits
// on JSON from outside, fanout: the task graph, task prompts and require of
// a fan-out, libreview: the rule of a Go program's review, contract: the
// one check of an answer against an output contract).
//
// # The Service: snapshot, verdict, version re-check
//
// Nothing expensive runs under the store's lock (DESIGN.md §5; snapshot.go).
// The Service computes each transition on a snapshot, outside any write
// transaction: the flow is read in a short View (a private copy with its
// Version), its spec parsed through the per-process cache keyed by the
// sha256 of the text, the lease checked (flow_owned) and the pure
// transition run — every expression evaluated, child flows read through
// transitionEnv.Children, each in its own short View with its Version noted — and
// its summaries computed. Only then does one Update apply the verdict: it
// checks that every flow the transition read is at the version read (a
// flow only read is re-read; a flow written is checked by Tx.Put's
// conditional put, so it is not decoded again: each written flow is
// stamped once, before the transaction (state.FlowState.Stamp: UpdatedAt,
// CreatedAt, Version one past the one read), and Put writes it only over
// the version read, NotStored for a flow the transition creates, else
// fails with ErrConflict), then writes the states, deletions and events
// exactly as computed. If another writer got in between, the
// transaction writes nothing and the whole transition is computed again
// from a fresh snapshot, at most 5 times, then the call fails with an
// error wrapping ErrConflict that names the flow (writers of one process
// that write a flow concurrently share a FlowWriter, flowwriter.go, which
// commits their writes one batch at a time, so they never conflict with
// each other). Transitions are pure, so
// the committed result is the one the transition would have computed
// inside the transaction. An answer that writes nothing (a refusal, a
// read such as resume) needs no write transaction; when it read more than
// one flow, one View re-checks their versions first. A transition whose
// context ends (SIGINT/SIGTERM through main's signal.NotifyContext, a
// client's cancellation) before it is written is discarded, even if its
// evaluation finished, with an error wrapping the context's cause. Events
// are published to the in-process broker only after their commit. Claim,
// TakeOver and Release run the same way, and the reads that need a spec
// (Audit, PendingReviews, PendingGateSteps) parse it after their View.
// A flow this Service committed last is not read again: the snapshot
// starts from a copy of the state it wrote (owncommits.go, a few flows'
// worth), which the conditional put confirms; an answer that writes
// nothing computed on such a copy is given only if one View finds the flow
// unchanged, else computed again from a fresh read. The copies share the
// recorded values (state.FlowState.Fork, ShareWith), so a transition
// follows one rule: it never writes into a recorded value in place. It
// replaces or deletes a step's output (StepOutputs[id] = v) or a fan-out
// task's record (ParallelTasks[id] = v), appends a record or sets a new
// slice of them, appends a trace entry; it never changes what an output,
// a task record, a record already in Records (or what its pointers point
// to) or a trace entry holds, and neither does a caller with a value it
// got from an outcome. Stores rely on it too (Tx.Put: a value handed to
// Put and handed again is unchanged). The engine's tests check it (and
// any test built with -tags stratum_owncheck): a copy found changed fails.
//
// Decisions where the original is silent or where we differ (besides
// README, "Deliberate differences from the original"):
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
//   - Gates: a revise or kill without a rationale is refused on every
//     channel but MCP (review.Check, applied by Service.GateResolve and
//     Decide before the flow is read: error_type rationale_required, which
//     matches review.ErrRationaleRequired); approver human refuses
//     decisions through MCP (error_type gate_requires_human); a decision naming another round (Decision.Round,
//     or the round of Decision.ReviewID) is stale_round. on_timeout revise
//     that cannot happen (no on_revise, max_rounds reached) kills instead.
//   - No way around a human (human.go): while a flow or any active
//     descendant waits at an approver human gate, nothing may end, skip or
//     orphan that gate — step_done, skip_step or a failed attempt of the
//     parent's flow: step, a revert that leaves the waiting child behind
//     (any channel), a revert off the flow's own pending human gate (any
//     channel but a human's: humanChannel, ReportOptions.Channel) — error_type
//     human_gate_pending with gate_flow_id and gate_step_id; nothing is
//     written. Iteration calls and parallel_done cannot target a flow: step,
//     and a gate kill or a budget kill never has an active child.
//   - Revert never erases a decision: every gate record the checkpoint does
//     not hold (any round, matched by content) is appended to the restored
//     trace with reverted: true (not counted by steps_completed nor by the
//     fired-timeout check). Undoing a human's decision (a record made
//     through tui, cli or console) needs a human's channel, else
//     gate_requires_human.
//   - check_timeouts tells what happened to a deadline that already fired
//     (applied by the background sweep, another process or an earlier
//     check; the original, which has no sweep, never meets this): when the
//     flow's last gate decision is a timeout (channel timeout, resolved_by
//     system), a flow the timeout killed answers killed with reason
//     "timeout", its trace and total_duration_ms up to its last record, and
//     a flow where no step was reported since the timeout answers its
//     current dispatch exactly as resume does (the step after an approve or
//     the completion, the on_revise target after a revise, the on_kill
//     cleanup step) — what the check that applied it answered. A caller that
//     waited at the gate and checks after a restart thus learns the outcome
//     and its next step. A pending deadline of a later gate is checked
//     first; after a human decision, or once a step was reported, the
//     original's no_timeout answers stand. The sweep counts only the
//     deadlines it applies itself.
//   - A child flow the parent stops waiting for (step_done or skip on the
//     parent step before the child finished) ends killed; a finished child
//     is never revived by re-dispatching the parent step, and completed
//     children are kept (their audits are also snapshotted into the parent's
//     child_audits).
//   - clearFrom (on_fail, next, revise) clears outputs, attempts, the
//     iteration outcome/best/accumulator/history and the active loop of the
//     cleared steps, as the original's _clear_from (a revise archives the
//     round's history first).
//   - Flow ids may be abbreviated: front ends resolve what they are given
//     with Query.ResolveFlowID (ids.go) before calling the Service — the
//     id itself, or a unique prefix of at least minFlowIDPrefix (4)
//     characters; an ambiguous prefix is error_type ambiguous_flow_id with
//     candidates, a shorter or unknown one flow_not_found.
//   - A runner lease (FlowState.Owner) that is live refuses agent reports
//     (step_done, parallel_done, skip_step, iteration_*) and checkpoint
//     calls (commit, revert: a revert mid-run pulls the flow from under the
//     runner) from anyone but its holder with error_type flow_owned; gate
//     decisions are never refused by a lease.
//
// # Flows of Go programs (library.go)
//
// A flow a Go program runs through the library (engine/stratum) is stored
// like any flow, with Driver "library", no spec (RawSpec empty) and
// FlowState.Library set. Its writes are Library's (library_service.go), a
// type beside Service that commits through it (same store, events and
// watchers): Library.StartFlow creates it with the program's lease
// (renewed by RenewLease; FlowSummary.Stalled once it expired); RecordCall
// books each call in one commit (a step record, the spend, a trace record
// and a trace event, as an infer step of the runner); FinishFlow ends it
// complete or failed. OpenReview
// opens a review: a gate whose step id is its review id (review-1,
// review-2, …), several open at once, each a row of PendingGateSteps and
// PendingReviews (review.PendingReview.Library, with its trigger, options
// and the JSON Schema of its value); the flow is awaiting_gate while one
// is open, Gate naming the oldest. GateResolve decides a review like a
// gate: approve records a value (Decision.Option or Decision.Value,
// checked by libreview.Decide / CheckReviewValue: one of the options,
// or a value that fits the schema; else invalid_review_value and the
// review stays open), kill rejects it, revise is refused, approver human
// refuses the mcp channel, a closed review answers review_closed
// (review.ErrAlreadyDecided). Deadlines are absolute and applied by every
// sweep (libreview.Expire: the OnTimeout value, or a timeout without
// one); Library.WithdrawReview closes a review the program stopped waiting
// for.
// Every spec transition (resume, step_done, skip, commit, revert, the
// iteration protocol …) refuses a library flow with error_type
// library_flow, and `stratum run --resume` refuses it too.
//
// # The result cache
//
// CacheKey is the one key rule of the result cache (cachekey.go): the
// runner's session and global caches and the engine's own for flows an
// agent drives. For those, currentDispatch answers a cacheable step from
// the store's cache, through the transition's snapshot, instead of
// dispatching it, and an accepted result is cached in the commit that
// records it (resultcache.go; Service.NoResultCache turns it off, as the
// original's STRATUM_DISABLE_RESULT_CACHE does: ResultCacheDisabled).
// Every driver reads and writes the store's cache through ResultCache
// (cachebound.go), the one bound: an entry older than 30 days is a miss and
// writing past 2,000 entries removes the oldest written, whatever the store
// (the stratum command reads other limits from the original's
// STRATUM_CACHE_MAX_AGE_DAYS and STRATUM_CACHE_MAX_ENTRIES: ParseCacheBound).
//
// # The store port
//
// Store (ports.go) is everything the engine, main.go and the TUI need from
// persistence, defined here by its consumer: Update and View run
// transactions over a Tx (flow states with their summaries, the pending-gate
// index, the event log — Append, Events, FlowEvents, LastSeq — and the
// result cache); Watch delivers committed events by sequence number as
// they commit, in any process; GC prunes finished flows. Three packages
// implement this one port, unchanged: store over a bbolt file (one
// machine), store/etcdstore over an etcd cluster (team mode: many
// machines; each Update is one etcd transaction compared on the revisions
// it read, Watch an etcd watch), and enginetest in memory. store/storetest
// is the contract all three pass; store/shared picks bbolt or etcd from
// STRATUM_STORE / store: for main.go and Go programs, so nothing else —
// the engine, its front ends, the TUI — knows which backend it is on (the
// etcd opener is registered by store/team, so a program on bbolt links no
// etcd). A new backend is one package that passes storetest plus a case
// in store/shared (or a registered opener, as store/team's).
//
// The runner lease is flow state (FlowState.Owner, checked and renewed in
// the same transaction as the flow it guards), not a store operation, so
// it works the same on every backend; see store/etcdstore's "Runner
// leases" for what that guarantees across machines.
//
// Summaries are the engine's: Summarize computes every field of a
// state.FlowSummary from a state and its flow (step k/n, current step, round,
// driver, parent, gate, the runner lease, the pending gate's question and
// whether it accepts revise), and every state the Service
// writes — transitions and the child flows they create or end, Claim,
// TakeOver, Release — goes to Tx.Put with its summary. Stores persist it as
// given, stamping only CreatedAt, UpdatedAt and Version. Listings read
// summaries only: List, and GateReviews, the gates' reviews without their
// artifacts (the TUI's and `stratum tui --plain`'s gate list, 25,000 gates
// without decoding a state).
//
// # In-process events
//
// Every transition the Service commits publishes its events, with the
// sequence numbers Append stamped into them, to the Service's in-process
// broker (watch.go). Publishing never waits: each subscriber has a buffer
// of 64 batches, and a subscriber whose buffer is full misses the batch.
// Service.Watch(ctx, after) is the one way to follow events: it merges the
// broker's publications (this process's commits, at once) with the store's
// Watch (every commit, other processes' included) by sequence number, so
// its consumer gets every event after `after` once and in order. A
// publication that leaves a gap (another process committed in between, or
// publications were dropped) makes it read the gap from the log; whether
// an event follows another is the store's rule (Store.Follows: the next
// number in bbolt, the next commit's first in etcd); what the store's Watch
// delivers that was already delivered is skipped. A slow consumer holds
// only its own Watch back, never a transition.
//
// An event's Data is the payload of its kind, one struct type per kind
// (Payload, payload.go: StepFailed for step_failed, GateResolved for
// gate_resolved, …): a transition emits one (event(st, env, stepID,
// payload), the type follows from the payload) and front ends switch on
// its concrete type, the same for an event fresh from the broker and one
// read back from the log. JSON is its form in the log only:
// Event.MarshalJSON writes the keys the log has always held (the payload's
// json tags), and which of them an event writes is its payload's rule
// (appendData: the keys its transition always sets, any other when set),
// so the stores keep writing the bytes they wrote when Data was a map
// (testdata/events pins them); Event.UnmarshalJSON decodes the data into
// the payload type of its kind. Front ends that show the data generically
// list it with Event.DataFields.
// A gate_resolved event carries the whole decision (outcome, rationale,
// reviewer, resolved_by, channel, round, a revise's revise_target;
// max_rounds_exceeded when the gate waits on): every waiter of a gate (the
// runner, MCP's stratum_wait_gate) reads its event batches with GateNews,
// which returns that decision (Event.GateDecision), and reads the flow only
// when the events do not tell. A Go program's review is decided the same
// way: its gate_resolved carries the review's status, value and option
// too, and the program waiting on it (engine/stratum) reads its batches
// with ReviewNews, reading the flow only when its flow finished without
// the review's event, for an older build's event, or past its deadline.
//
// JSON from outside (a step result or inputs given to the CLI, an MCP
// frame) is held to one rule, engine/internal/jsonlimit: at most 16 MiB
// and 256 levels of nesting.
//
// The engine imports specs, review and engine/state only (and its own
// engine/internal); it never imports store, bbolt, etcd, bubbletea or
// fsnotify (.ci/imports checks it), nor the expression compiler: a spec is
// parsed with Service.ParseSpec (exprlang.ParseSpec of package
// specs/exprlang, set by the stratum command and the tests). A Service
// without it is a Go program's (the library's, which so links neither the
// spec parser nor expr-lang): it runs the flows of Go programs and refuses
// every spec with a diagnostic naming Service.ParseSpec.
package engine
