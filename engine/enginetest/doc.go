// Package enginetest provides an in-memory engine.Store for tests: a mutex
// and a map of JSON-encoded flow states, so Get returns private copies
// exactly like the real store, with the event log (sequence numbers), the
// pending-gate index and the result cache. A transaction whose function
// returns an error writes nothing.
package enginetest
