// Package storetest is the contract suite for engine.Store implementations.
// Run it against every backend (the bbolt store in package store, the
// engine's in-memory store) so they cannot drift apart; a new backend is a
// package that passes it:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, now func() time.Time) engine.Store {
//			return newStore(t, now)
//		})
//	}
//
// open must return a fresh, empty store whose clock is now (the suite's
// Clock: distinct, increasing readings it can move forward) and register
// its own cleanup. The store's clock is GC's cutoff and the time of events
// appended without one; the stamps of states are the writer's (Put, PutAt). The suite uses only the engine.Store / engine.Tx port; it
// imports engine only, never a concrete store.
//
// The contract, beyond the port's own comments:
//
//   - Get returns private copies; mutating them (or a state after Put)
//     changes nothing until the next Put.
//   - Put is conditional: it writes only over the version it expects
//     (engine.NotStored: the flow must not exist). A stale version, a
//     version ahead of the stored one, a missing flow expected at a
//     version, and an existing flow expected not to exist are each
//     refused with an *engine.VersionError (errors.Is engine.ErrConflict)
//     naming the flow and both versions, and nothing of the transaction is
//     written. A flow put twice in one transaction is at the first Put's
//     version for the second. Of writers that read the same version and
//     write concurrently, exactly one wins; the others get the conflict.
//   - Put stores the state's stamps exactly as given (the store sets none);
//     a version not above the expected one, or an expected version below
//     NotStored, is invalid input (not a conflict).
//   - Put stores the summary it is given, every field exactly (even fields
//     that disagree with the state: the store derives nothing), except
//     CreatedAt, UpdatedAt and Version, which are the state's stamps. A
//     replacement stores its own summary whole. A summary whose FlowID or
//     Status is not the state's is refused. The caller's summary is not
//     shared with the store.
//   - Update commits all of fn's writes or none: an error or a panic in fn
//     leaves the store as it was, and the store stays usable. A canceled
//     context fails Update/View without running fn.
//   - Writes inside View fail. Delete of a missing flow is not an error and
//     also removes the flow's events.
//   - List is newest-created first (updates do not reorder it), filters by
//     exact status, honours Limit.
//   - PendingGates is exactly the flows whose summary has status
//     awaiting_gate and a Gate (order is the store's choice).
//   - GatesDue(now) is exactly the pending gates whose deadline is at or
//     before now (order is the store's choice), and next the earliest
//     deadline after now (nil: none); a gate without a deadline, decided,
//     or of a deleted flow is in neither, and a deadline moved by a Put
//     moves with it.
//   - Append stamps the caller's events in place; sequence numbers are
//     strictly increasing, consecutive within one Append, and never
//     reused. Events, FlowEvents and LastSeq read the log by sequence.
//   - Watch delivers exactly what the log holds after `after`: events
//     committed before and after it started, in order, none twice, none
//     from a failed transaction; several watchers each get everything; a
//     consumer that does not read while many transactions commit still
//     gets every event; concurrent writers lose nothing; the channel
//     closes when ctx ends, and a Watch with a done ctx fails.
//   - GC deletes exactly the Prunable flows (finished, unchanged for longer
//     than the age by the store's clock; the suite stamps them by the same
//     clock) with their events, keeps running
//     and gated flows and recently changed ones, and refuses a negative age.
//     A finished child flow is kept while any ancestor (parent_flow_id,
//     followed up) has not finished; one whose parent is gone is pruned.
//   - Concurrent Updates from many goroutines lose nothing.
//
// Crossing handles and processes (a Watch woken by another process's
// commits) is the backend's own test: package store has them.
//
// RunTransitionCost is not part of Run: it measures what transitions cost a
// backend as its history grows (stratum_plan and stratum_step_done through
// engine.Service on several handles of one store, each with a watcher), by
// the backend's own counters (a Meter), and fails when a transition costs
// more operations or bytes than given, or more at the end than at the
// start. The etcd store runs it on one and three members.
package storetest
