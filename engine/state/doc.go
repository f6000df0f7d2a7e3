// Package state is the persisted shape of a flow: what a Store keeps for it
// and what front ends read back. Part of the stratum command, not a public
// API: its exported names serve the command's packages and may change.
//
// FlowState is one flow execution, stored as JSON with the original's keys
// (upstream-behavior §2.19) and ours after them, with its stored parts: the
// progress a checkpoint saves and a revert restores (StepProgress,
// RoundProgress, ChildProgress, Checkpoint), the trace Records and their
// JSON (record_json.go: the keys of each record type), the iteration loops
// (ActiveIteration, IterationEntry, IterationBest, Accumulator), the fan-out
// (ParallelTask, ParallelRun), a Go program's flow (LibraryState,
// LibraryReview), the pending gate, the runner's Lease, the BudgetState
// ledger and the TraceRecords of infer calls (amounts of money rounded in
// their JSON, money.go). FlowStatus is a typed enum with predicates
// (Finished, Active). FlowSummary is what listings read without decoding a
// state: the engine computes it (engine.Summarize) and Tx.Put stores it
// next to the state; GateReview is the question of its pending gate.
//
// The package is plain data and the rules that need nothing but the data:
// the deep copy (Clone, clone.go: no map, slice or pointer shared), the
// write stamps (FlowState.Stamp), a fan-out's recorded tasks of the current
// dispatch (TasksOf, LastTasksOf, ParallelRunOf), whether a lease is live
// and whether a flow is stalled. Behaviour that needs a spec or the
// engine's rules — transitions, summaries, `$` references, the pending
// review and a library review's value — is the engine's (package engine).
// The type names and their JSON are the ones package engine had, so a
// stored state, the wire output and the goldens are byte-identical.
//
// It imports only the standard library: nothing of stratum.
package state
