// Package review is the gate protocol of Stratum: a gate becomes a
// PendingReview, which is persisted before any Sink is told about it, and is
// closed by exactly one Decision.
//
// Deciding is first-writer-wins and idempotent: the store applies a decision
// inside one transaction that checks the flow is still waiting at that gate
// and round, so a second decision on the same review gets ErrAlreadyDecided
// and a decision made for an earlier round gets ErrStaleRound. Every decision
// records its outcome, rationale, reviewer identity, who resolved it
// (human/agent/system) and the channel it came through.
//
// This package imports nothing else of stratum.
package review
