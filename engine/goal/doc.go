// Package goal is the worker→judge loop toward predicates (the original's
// STRAT-GOAL): a goal is a task and a list of judge predicates; each turn
// sends the task (with the judge's findings of the turns before, and a
// rejected decision's note) to a worker agent, stages its answer as the
// turn's evidence and has the judge (engine/internal/judge) decide the
// predicates, until they are met or the turns run out (max_turns, default
// 10).
//
// Modes (the original's): shadow observes — it never binds, and reports
// what it would have decided (would_have_decided; with shadow_source
// "observed" it judges the caller's artifacts once, no worker); advisory
// stops at the first met turn for a person's decision (awaiting_decision;
// stratum_goal_decide confirm, reject with a note folded into the next
// turn's prompt, or kill); autonomous binds by itself when every met
// predicate's type is allowed by the call's autonomy map
// ({deterministic, verified, judged} → bool, default none), else it waits
// for a decision like advisory.
//
// A goal is kept in the store (engine.Tx's keyed records, beside the
// guard's resources): its state as the registration, its turns as an
// append-only ledger, so every process sharing the store sees it and a
// goal resumes where it stood after a restart. The first call fixes the
// goal's predicates and mode (another call with different ones is
// GoalImmutabilityError). Part of the stratum command, not a public API.
package goal
