// Package storetest is the contract suite for engine.Store implementations.
// Run it against every backend (the bbolt store in package store, the
// engine's in-memory store) so they cannot drift apart:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) engine.Store { return newStore(t) })
//	}
//
// The suite uses only the engine.Store / engine.Tx port, plus the optional
// EventLog read API when the store offers it. open must return a fresh,
// empty store for each call; it should register its own cleanup. The suite
// imports engine only, never a concrete store.
package storetest
