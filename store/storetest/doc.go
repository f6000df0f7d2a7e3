// Package storetest is the contract suite for engine.Store implementations.
// Run it against every backend (the bbolt store in package store, the
// engine's in-memory store) so they cannot drift apart:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) engine.Store { return newStore(t) })
//	}
//
// open must return a fresh, empty store for each call and register its own
// cleanup. The suite uses only the engine.Store / engine.Tx port, plus the
// optional EventLog read API when the store offers it; it imports engine
// only, never a concrete store.
//
// The contract, beyond the port's own comments:
//
//   - Get returns private copies; mutating them (or a state after Put)
//     changes nothing until the next Put.
//   - Put stamps the state it is given: UpdatedAt from the store's clock,
//     CreatedAt when zero (a replacement keeps the stored CreatedAt), and
//     Version = max(stored, given) + 1, so versions never go backwards even
//     when a state built from scratch replaces a stored one.
//   - Update commits all of fn's writes or none: an error or a panic in fn
//     leaves the store as it was, and the store stays usable. A canceled
//     context fails Update/View without running fn.
//   - Writes inside View fail. Delete of a missing flow is not an error and
//     also removes the flow's events.
//   - List is newest-created first (updates do not reorder it), filters by
//     exact status, honours Limit; summaries carry the state's name, status,
//     round, driver, parent, gate, timestamps and version.
//   - PendingGates is exactly the flows with status awaiting_gate and Gate
//     set (order is the store's choice).
//   - Event sequence numbers are strictly increasing and never reused.
//   - Concurrent Updates from many goroutines lose nothing.
package storetest
