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
// The engine imports specs and review only; it never imports bbolt,
// bubbletea or fsnotify. Its Store port is implemented by package store.
package engine
