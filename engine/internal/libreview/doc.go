// Package libreview is the rule of a Go program's review (engine/stratum's
// AwaitHuman, stored as state.LibraryReview): the value a decision may
// record, a decision, a timeout, and the gate a review is in the
// pending-gate index. The engine applies it to reviews in the store
// (GateResolve, the deadline sweeps), engine/stratum to the reviews a
// program keeps in memory; the TUI reaches the value rule through
// engine.CheckReviewValue. Not a public API: importable only from inside
// engine/.
package libreview
