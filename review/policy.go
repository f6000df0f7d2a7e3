package review

import (
	"context"
	"fmt"
)

// What a headless run does at a gate that no --approve covers.
const (
	OnGateExit    = "exit"    // stop: nobody here decides (exit 4)
	OnGateWait    = "wait"    // wait for a decision made elsewhere
	OnGateApprove = "approve" // approve (system), except approver: human gates
	OnGateKill    = "kill"    // kill (system)
	OnGatePrompt  = "prompt"  // ask on the console
)

// ValidOnGate reports whether s is an --on-gate value.
func ValidOnGate(s string) bool {
	switch s {
	case OnGateExit, OnGateWait, OnGateApprove, OnGateKill, OnGatePrompt:
		return true
	}
	return false
}

// Policy is the policy handler of a headless run: --approve GATE (a human
// decision: the person who typed the flag), --approve all and --on-gate
// approve (system decisions, never for approver: human gates), --on-gate
// kill. It passes on everything else.
type Policy struct {
	// Approve lists gate step ids to approve; "all" approves every gate.
	Approve []string
	// OnGate is one of the OnGate* constants; only approve and kill decide
	// here.
	OnGate string
	// Reviewer is recorded with the decisions.
	Reviewer string
	// Human is the presence rule for --approve GATE on a gate with
	// approver: human: the flag is typed by whoever runs the command, an
	// agent too, so such a gate is approved only on an interactive
	// terminal after the typed confirmation (HumanConfirm), as with
	// `stratum gate`; otherwise ErrNeedsTerminal / ErrNotConfirmed and
	// nothing is decided.
	Human HumanConfirm
}

// Handle implements Handler.
func (p Policy) Handle(_ context.Context, r PendingReview) (Decision, error) {
	human := r.Approver == HumanApprover
	d := Decision{Reviewer: p.Reviewer, Channel: ChannelPolicy}
	for _, a := range p.Approve {
		if a == r.StepID {
			d.Outcome, d.ResolvedBy, d.Rationale = Approve, Human, "approved by --approve "+a
			d.FlowID, d.StepID = r.FlowID, r.StepID
			if err := p.Human.Confirm(d, r.Approver); err != nil {
				return Decision{}, err
			}
			return d, nil
		}
	}
	for _, a := range p.Approve {
		if a == "all" && !human {
			d.Outcome, d.ResolvedBy, d.Rationale = Approve, System, "approved by --approve all"
			return d, nil
		}
	}
	switch p.OnGate {
	case OnGateApprove:
		if !human {
			d.Outcome, d.ResolvedBy, d.Rationale = Approve, System, "approved by --on-gate approve"
			return d, nil
		}
	case OnGateKill:
		d.Outcome, d.ResolvedBy, d.Rationale = Kill, System, "killed by --on-gate kill"
		return d, nil
	}
	return Decision{}, ErrPass
}

// Sink is told about every review that opens. Emit must not block for long;
// the decision comes back through the store (any process may decide).
type Sink interface {
	Emit(ctx context.Context, r PendingReview) error
}

// Notify is a handler that offers the review to a Sink (a UI that will
// decide through the store) and passes it on.
type Notify struct{ Sink Sink }

// Handle implements Handler.
func (n Notify) Handle(ctx context.Context, r PendingReview) (Decision, error) {
	if n.Sink != nil {
		if err := n.Sink.Emit(ctx, r); err != nil {
			return Decision{}, fmt.Errorf("offering gate %s: %w", r.StepID, err)
		}
	}
	return Decision{}, ErrPass
}
