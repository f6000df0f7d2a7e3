// Package enginetest provides an in-memory engine.Store for tests. It keeps
// flow states JSON-encoded (so Get returns private copies exactly like the
// real store) next to the summaries Put was given, the event log with its
// sequence numbers, and the result cache. An Update works on a copy of the
// data and swaps it in when fn succeeds, so a transaction whose function
// returns an error or panics writes nothing. Watch is woken by the store's
// own commits and reads the log from the last event it delivered; GC prunes
// the summaries' Prunable flows. It passes store/storetest like the bbolt
// store, so the engine's tests run against the same contract.
//
// ExecutorFunc (executor.go) adapts a function to engine.Executor: the
// executors tests fake.
package enginetest
