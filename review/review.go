package review

import (
	"encoding/json"
	"errors"
	"os"
	"os/user"
	"time"
)

// Outcome is a gate decision.
type Outcome string

const (
	Approve Outcome = "approve" // the work stands; the flow goes on
	Revise  Outcome = "revise"  // the work is sent back with the rationale as feedback
	Kill    Outcome = "kill"    // the flow (or a tool call, a review) is refused
)

// Outcomes lists the valid outcomes, sorted (Python Stratum's error message lists them sorted).
var Outcomes = []Outcome{Approve, Kill, Revise}

// Valid reports whether o is approve, revise or kill.
func (o Outcome) Valid() bool { return o == Approve || o == Revise || o == Kill }

// ResolvedBy says what kind of actor decided.
type ResolvedBy string

const (
	Human  ResolvedBy = "human"  // a person
	Agent  ResolvedBy = "agent"  // a coding agent or a program
	System ResolvedBy = "system" // stratum itself, such as a deadline passing
)

// Valid reports whether r is human, agent or system.
func (r ResolvedBy) Valid() bool { return r == Human || r == Agent || r == System }

// Channel is how a decision reached the store.
type Channel string

const (
	ChannelTUI     Channel = "tui"     // stratum tui's Gates pane
	ChannelCLI     Channel = "cli"     // stratum gate from a shell
	ChannelMCP     Channel = "mcp"     // stratum_gate_resolve over MCP (an agent)
	ChannelPolicy  Channel = "policy"  // a headless run's policy (--approve, --on-gate)
	ChannelTimeout Channel = "timeout" // the review's deadline passed
	ChannelConsole Channel = "console" // the console prompt of `stratum run`, or of a Go program
	// ChannelProgram is a decision a Go program made itself
	// (stratum.Runtime.Resolve, called by a review sink, a web form, a
	// chat bot): nobody showed it was a person.
	ChannelProgram Channel = "program"
)

// Approver says who may decide a gate.
type Approver string

const (
	// AnyApprover (the default) lets any channel decide.
	AnyApprover Approver = "any"
	// HumanApprover accepts only the channels where a person is present
	// (see Allows), so an agent or a program cannot approve its own work.
	HumanApprover Approver = "human"
)

// Allows reports whether a decision that came through channel c may
// decide a gate or review whose approver is a. Any approver but
// HumanApprover allows every channel. HumanApprover allows only the
// channels that made sure a person decides, and the system's clock: the
// TUI, `stratum gate` (ChannelCLI) and a console (both after
// HumanConfirm), a run's --approve GATE (ChannelPolicy, after
// HumanConfirm; --on-gate kill), and a deadline (ChannelTimeout). It
// refuses MCP (an agent), ChannelProgram (a Go program's own decision)
// and any other or unnamed channel. The recorder applies it to every
// decision; error_type gate_requires_human.
func (a Approver) Allows(c Channel) bool {
	if a != HumanApprover {
		return true
	}
	switch c {
	case ChannelTUI, ChannelCLI, ChannelConsole, ChannelPolicy, ChannelTimeout:
		return true
	}
	return false
}

// CheckChannel is Allows with the reason: nil when a decision through c
// may decide the gate or review named what ("Gate 'deploy'", "Review
// 'review-1'") whose approver is a, else an error matching ErrNotAllowed
// that says so and where a person decides it instead.
func (a Approver) CheckChannel(c Channel, what string) error {
	if a.Allows(c) {
		return nil
	}
	how := "through channel '" + string(c) + "'"
	switch c {
	case ChannelMCP:
		how = "through MCP"
	case ChannelProgram:
		how = "by a program (Runtime.Resolve, a review sink)"
	case "":
		how = "through an unnamed channel"
	}
	return channelRefused(what + " requires a human decision (approver: human) and cannot be resolved " + how +
		"; decide it in `stratum tui` or with `stratum gate`")
}

// channelRefused is CheckChannel's error: its text is the whole message.
type channelRefused string

// Error returns the refusal's whole message.
func (e channelRefused) Error() string { return string(e) }

// Is makes a refusal match ErrNotAllowed.
func (e channelRefused) Is(target error) bool { return target == ErrNotAllowed }

// Errors of the gate protocol.
var (
	ErrAlreadyDecided = errors.New("gate already resolved")
	ErrStaleRound     = errors.New("decision is for an earlier round of this gate")
	ErrNotAllowed     = errors.New("decision not allowed through this channel")
)

// PendingReview is an open gate as a reviewer sees it.
type PendingReview struct {
	ReviewID string // flow_id/step_id/round: stable for the life of the gate round
	FlowID   string
	FlowName string
	StepID   string
	Round    int
	Question string // what is being asked (the gate function's intent, or a default)
	// Artifacts is what the reviewer needs to decide.
	Artifacts Artifacts
	Outcomes  []Outcome
	Approver  Approver
	OpenedAt  time.Time
	Deadline  *time.Time // nil = no timeout
	OnTimeout Outcome

	// A review a Go program opened (stratum.AwaitHuman) is decided with a
	// value: one of Options (numbered from 1 for reviewers), or, when it
	// has none, any value that fits Schema. Approve records the value;
	// kill rejects the review; it is never revised.
	Library bool
	Trigger string            // why it was opened ("explicit", "debate_disagreement", …)
	Options []json.RawMessage // the values to pick from (nil: any value of Schema)
	Schema  map[string]any    // JSON Schema of the value's type
}

// Artifacts is the context of a pending review: the flow's inputs, the
// outputs of the steps so far and the decisions of earlier rounds.
type Artifacts struct {
	Inputs            map[string]any
	StepOutputs       map[string]any
	PreviousDecisions []PriorDecision
	// Values are the artifacts a Go program attached to its review.
	Values map[string]any
}

// PriorDecision is a decision of an earlier round of a gate.
type PriorDecision struct {
	Round     int
	StepID    string
	Outcome   Outcome
	Rationale string
	Reviewer  string
}

// ID builds the review id of a gate round.
func ID(flowID, stepID string, round int) string {
	return flowID + "/" + stepID + "/" + itoa(round)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// Decision closes a PendingReview.
type Decision struct {
	ReviewID   string
	FlowID     string
	StepID     string
	Round      *int // when set, the decision is refused unless the gate is in this round
	Outcome    Outcome
	Rationale  string
	Reviewer   string // identity (user name, agent name)
	ResolvedBy ResolvedBy
	Channel    Channel
	DecidedAt  time.Time
	// Option (1-based) or Value is the value an approve records on a
	// review a Go program opened (PendingReview.Library); the recorder
	// refuses one that is not among its options or does not fit its type.
	Option int
	Value  json.RawMessage
}

// CurrentUser is the reviewer identity recorded with decisions made in this
// process: $USER, else the account name, else "unknown".
func CurrentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}
