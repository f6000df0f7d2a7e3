// Package review is the gate protocol of Stratum: a gate becomes a
// PendingReview, which is persisted before any handler is told about it,
// and is closed by exactly one Decision.
//
// Deciding is first-writer-wins and idempotent: the recorder (the engine)
// applies a decision inside one transaction that checks the flow is still
// waiting at that gate and round, so a second decision on the same review
// gets an error matching ErrAlreadyDecided and a decision made for another
// round one matching ErrStaleRound. Every decision records its outcome,
// rationale, reviewer identity, who resolved it (human/agent/system) and the
// channel it came through.
//
// # One rule, one request/decide service
//
// Check is the rule every channel shares: a rationale for revise and kill,
// except through MCP where Python Stratum accepts an empty one (the
// decision's Channel says which). The recorder applies it to every
// decision it records — the engine does, in its gate resolution, so no
// front end (the TUI, `stratum gate`, MCP, a library user) can skip it —
// and Service.Decide applies it for any other recorder. (Whether the
// outcome and resolved_by are valid and the gate still waits in that
// round is the recorder's to say, with Python Stratum's error types.) A
// front end may call Check early, to ask again before anything is read.
//
// Service is how the in-process runner gets a decision: Service.Request
// asks its handlers in order for a decision on a pending review: Policy
// (--approve, --on-gate approve|kill), Console (a prompt at a terminal),
// Notify (offers the review to a Sink such as the TUI and passes), and
// whatever waits for a decision made elsewhere (the runner's store waiter).
// A handler decides, passes (ErrPass), reports the review decided by
// someone else (ErrDecidedElsewhere), or stops the request; when every
// handler passes, Request returns ErrNoReviewer and a headless run stops at
// the gate.
//
// # Separation of duties in a shell
//
// HumanConfirm is the rule of a decision typed in a shell
// (`stratum gate`) on a gate with approver: human: it is made only on an
// interactive terminal (the front end says whether it has one), after the
// reviewer typed the gate's step id or the flow's short id; otherwise
// ErrNeedsTerminal or ErrNotConfirmed, both matching ErrNotAllowed. MCP
// decisions on such gates are refused by the recorder (gate_requires_human).
// ConfirmAt applies it at the gate a flow waits at (WaitingGate) and pins
// a confirmed decision to the gate's round, so it cannot land on a later
// round the reviewer did not see.
//
// # Offering reviews to a UI
//
// Sink is what Notify offers reviews to. Queue is the Sink of an
// in-process UI (the TUI, for flows it runs itself): Emit puts the review
// on a buffered channel the UI reads (Reviews), waiting at most a short
// bound for room and never past ctx; an offer that finds no room is dropped,
// which is safe because the review is already persisted and the UI also
// follows the store. The decision never comes back through a Sink: it is
// made through the recorder like any other.
//
// # Reviews of Go programs
//
// A review a Go program opened (stratum.AwaitHuman) is a PendingReview
// with Library set: its Trigger, its Options (JSON values, numbered from 1
// for reviewers) or, without options, the Schema its value must fit. It is
// decided with a value — Decision.Option (1-based) or Decision.Value —
// and an approve; kill rejects it. The recorder checks the value (not an
// option, or not of the type: refused, the review stays open).
//
// The recorder is a Decider[A]: the engine implements it, answering what
// the flow does next (A is its outcome type), so this package imports
// nothing else of stratum.
package review
