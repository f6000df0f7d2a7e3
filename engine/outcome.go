package engine

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Outcome is a transition's typed answer. It is one of:
//
//	*StepDispatch      execute_step: do the step (function, inline, decompose)
//	*ParallelDispatch  parallel_dispatch: run the tasks, report parallel_done
//	*GateDispatch      await_gate: the flow waits for a decision
//	*ChildDispatch     execute_flow: a flow: step started its child flow
//	*Completion        complete or killed: the cursor is past the end
//	*Stopped           failed or budget_exhausted (resume of such a flow)
//	*BudgetExhausted   exhaustBudget ended the flow
//	*IterationReported stratum_iteration_report
//
// and, unexported because no front end acts on them (Wire renders them):
// callRecorded (recordCall booked a call's spend), notTimedOut
// (check_timeouts found nothing to apply), checkpointCommitted
// (stratum_commit), iterationStarted, iterationAborted and AuditReport
// (stratum_audit).
//
// Errors the original answers as envelopes are a *Error instead. Consumers
// switch on the type; Wire renders any of them as the original's JSON.
type Outcome interface {
	// WireStatus is the "status" key of the rendered object.
	WireStatus() string
	wire() Response
}

// Notes are what a report adds to the outcome it answers with; every kind
// of dispatch (and a completion reached by routing) may carry them.
type Notes struct {
	// Failure is set when the same step is dispatched again after a failed
	// attempt: the status becomes the failure and Violations are the
	// attempt's.
	Failure CheckFailure
	// RoutedFrom is set when on_fail routed here from a step whose attempts
	// ran out; Violations are that step's last ones.
	RoutedFrom string
	Violations []string
	// RevertedTo is the checkpoint a revert restored.
	RevertedTo string
	// Reason says why a flow was killed outside a decision ("timeout").
	Reason string
	// BouncedTasks are set on the failure answers of a fan-out step's
	// report: the tasks bounced before merge (a failed pre_merge_verify
	// gate, a merge conflict), as the original's records.
	BouncedTasks []any
}

// Annotations returns the notes (every outcome kind embeds Notes).
func (n *Notes) Annotations() *Notes { return n }

func (n *Notes) apply(r Response) Response {
	if n.Failure != "" {
		r["status"] = string(n.Failure)
		r["violations"] = n.Violations
	}
	if n.RoutedFrom != "" {
		r["routed_from"] = n.RoutedFrom
		r["violations"] = n.Violations
	}
	if n.RevertedTo != "" {
		r["reverted_to"] = n.RevertedTo
	}
	if n.Reason != "" {
		r["reason"] = n.Reason
	}
	if n.BouncedTasks != nil && (n.Failure != "" || n.RoutedFrom != "") {
		r["bounced_tasks"] = n.BouncedTasks
	}
	return r
}

// annotated is implemented by the outcome kinds that embed Notes.
type annotated interface{ Annotations() *Notes }

// NotesOf returns the notes of an outcome (nil for kinds without them).
func NotesOf(o Outcome) *Notes {
	if a, ok := o.(annotated); ok {
		return a.Annotations()
	}
	return nil
}

// FlowIDOf is the flow an outcome is about ("" when it names none): the
// parent's for an execute_flow.
func FlowIDOf(o Outcome) string {
	switch o := o.(type) {
	case *StepDispatch:
		return o.FlowID
	case *ParallelDispatch:
		return o.FlowID
	case *GateDispatch:
		return o.FlowID
	case *ChildDispatch:
		return o.ParentFlowID
	case *Completion:
		return o.FlowID
	case *Stopped:
		return o.FlowID
	case *BudgetExhausted:
		return o.FlowID
	case *callRecorded:
		return o.FlowID
	case *checkpointCommitted:
		return o.FlowID
	case *iterationStarted:
		return o.FlowID
	case *IterationReported:
		return o.FlowID
	case *iterationAborted:
		return o.FlowID
	case *AuditReport:
		return o.FlowID
	}
	return ""
}

// Step modes of dispatches (the original's step_mode).
const (
	modeFunction  = "function"
	modeInline    = "inline"
	modeDecompose = "decompose"
	modeJudge     = "judge"
)

// StepDispatch is execute_step: the step to do now (upstream-behavior §2.3).
// Which of Function/Mode/Intent/Model the wire object carries depends on
// StepMode: function steps carry function, mode and intent; inline steps
// intent and model; decompose steps intent; judge steps carry predicates,
// stakes and budget instead of inputs, output_contract, output_fields and
// intent (the original's judge envelope: the agent calls stratum_judge with
// them and reports the JudgeResult with stratum_step_done).
type StepDispatch struct {
	Notes
	FlowID           string
	StepID           string
	StepNumber       int // 1-based position in execution order
	TotalSteps       int
	StepMode         string // ModeFunction, ModeInline or ModeDecompose
	Agent            string // "" = none (null)
	Inputs           map[string]any
	OutputContract   string // "" = none (null)
	OutputFields     map[string]string
	Ensure           []string
	RetriesRemaining int
	Function         string // function steps
	Mode             string // function steps: the function's mode
	Intent           string
	Model            string // inline steps ("" = null)
	// Judge is the judge step's block (judge steps only): its predicates as
	// written, stakes and budget.
	Judge *specs.Judge
	// ReviseFeedback is the decision that sent the flow back to this step
	// (nil when none did).
	ReviseFeedback *ReviseFeedback
}

// ReviseFeedback is the revise decision a step is redone for: set on the
// dispatches of a revise's on_revise target until it completes in the new
// round, so whoever redoes the work sees why it came back.
type ReviseFeedback struct {
	Gate      string `json:"gate"`
	Round     int    `json:"round"` // the round the decision closed
	Rationale string `json:"rationale"`
	Reviewer  string `json:"reviewer"`
	Channel   string `json:"channel"`
}

// Prompt is the feedback as a section of a prompt.
func (f *ReviseFeedback) Prompt() string {
	by := f.Reviewer
	if by == "" {
		by = "a reviewer"
	}
	if f.Channel != "" {
		by += " via " + f.Channel
	}
	rationale := f.Rationale
	if rationale == "" {
		rationale = "(no rationale given)"
	}
	return "The reviewer sent this back (gate " + f.Gate + ", round " + strconv.Itoa(f.Round) + ", " + by + "): " + rationale +
		"\nAddress this feedback in this attempt."
}

// Attempt is the 1-based attempt number this dispatch asks for, given the
// step's total attempts.
func (d *StepDispatch) Attempt(total int) int {
	if total < 1 {
		total = 1
	}
	if a := total - d.RetriesRemaining + 1; a >= 1 {
		return a
	}
	return 1
}

// WireStatus implements Outcome.
func (d *StepDispatch) WireStatus() string { return wireStatus(&d.Notes, dispatchExecuteStep) }

// ParallelDispatch is parallel_dispatch: the tasks of a v0.3 fan-out.
type ParallelDispatch struct {
	Notes
	FlowID           string
	StepID           string
	StepNumber       int
	TotalSteps       int
	StepMode         string
	Tasks            any // the resolved source
	Agent            string
	MaxConcurrent    int
	Isolation        string
	Require          string
	Merge            string
	IntentTemplate   string
	Ensure           []string
	RetriesRemaining int
	PreMergeVerify   any // nil = absent
	ReviseFeedback   *ReviseFeedback
	// Pipeline is set for a pipeline step: Tasks is then its task graph
	// (a task per item and stage) and Stages its stages, as the original's
	// dispatch lists them.
	Pipeline bool
	Stages   []any
}

// WireStatus implements Outcome.
func (d *ParallelDispatch) WireStatus() string { return wireStatus(&d.Notes, dispatchParallel) }

// GateDispatch is await_gate: the flow waits at a gate. Deadline and
// Approver are ours (the only additions to any dispatch object).
type GateDispatch struct {
	Notes
	FlowID     string
	StepID     string
	StepNumber int
	TotalSteps int
	Function   string
	Agent      string
	OnApprove  string
	OnRevise   string
	OnKill     string
	Timeout    int        // seconds; 0 = none (null)
	Deadline   *time.Time // the persisted absolute deadline; nil = none
	Approver   review.Approver
}

// WireStatus implements Outcome.
func (d *GateDispatch) WireStatus() string { return wireStatus(&d.Notes, dispatchAwaitGate) }

// ChildDispatch is execute_flow: a flow: step's child flow, with the child's
// own current answer.
type ChildDispatch struct {
	Notes
	ParentFlowID  string
	ParentStepID  string
	ChildFlowID   string
	ChildFlowName string
	Child         Outcome
	StepNumber    int
	TotalSteps    int
}

// WireStatus implements Outcome.
func (d *ChildDispatch) WireStatus() string { return wireStatus(&d.Notes, dispatchExecuteFlow) }

// Completion is the answer of a flow whose cursor is past the end: status
// complete or killed. A kill without a cleanup step has no output key
// (HasOutput false), as the original.
type Completion struct {
	Notes
	Status          state.FlowStatus // StatusComplete or StatusKilled
	FlowID          string
	Output          any
	HasOutput       bool
	Trace           []state.Record // the active round's records
	TotalDurationMS int64
}

// WireStatus implements Outcome.
func (c *Completion) WireStatus() string { return wireStatus(&c.Notes, string(c.Status)) }

// Stopped is the answer of a flow that failed or ran out of budget: {status,
// flow_id}.
type Stopped struct {
	Status state.FlowStatus // StatusFailed or StatusBudgetExhausted
	FlowID string
}

// WireStatus implements Outcome.
func (s *Stopped) WireStatus() string { return string(s.Status) }

// BudgetExhausted is the answer of Service.ExhaustBudget and of a report
// that spends the flow's budget: the original's terminal payload (output,
// trace, total_duration_ms, budget_state) with ours (step_id, reason).
type BudgetExhausted struct {
	FlowID string
	StepID string // the current step ("" = null)
	Reason string
	// Output is the output of the last step with one (as a completion's).
	Output any
	// Trace is the current round's records.
	Trace           []state.Record
	TotalDurationMS int64
	// BudgetState is the flow's budget and what it consumed (nil: the
	// flow has no budget axis, as when a step's own budget ran out).
	BudgetState *AuditBudget
}

// WireStatus implements Outcome.
func (b *BudgetExhausted) WireStatus() string { return string(state.StatusBudgetExhausted) }

// callRecorded is the answer of Service.RecordCall: the ledger after the call.
type callRecorded struct {
	FlowID string
	Budget state.BudgetState
}

// WireStatus implements Outcome.
func (c *callRecorded) WireStatus() string { return "recorded" }

// notTimedOut is check_timeouts with nothing to apply: a Message, or the
// seconds remaining before the deadline.
type notTimedOut struct {
	Message   string
	Remaining *float64
}

// WireStatus implements Outcome.
func (n *notTimedOut) WireStatus() string { return "no_timeout" }

// checkpointCommitted is stratum_commit's answer.
type checkpointCommitted struct {
	FlowID        string
	Label         string
	StepNumber    int
	CurrentStepID string // "" past the end (null)
	Checkpoints   []string
}

// WireStatus implements Outcome.
func (c *checkpointCommitted) WireStatus() string { return "committed" }

// iterationStarted is stratum_iteration_start's answer.
type iterationStarted struct {
	FlowID        string
	StepID        string
	MaxIterations int
	ExitCriterion string // "" = none (null)
}

// WireStatus implements Outcome.
func (i *iterationStarted) WireStatus() string { return "iteration_started" }

// IterationReported is stratum_iteration_report's answer:
// iteration_continue, or iteration_exit once Outcome is not "continue".
type IterationReported struct {
	FlowID             string
	StepID             string
	Iteration          int
	MaxIterations      int
	ExitCriterionMet   bool
	Outcome            string // OutcomeContinue or an exit outcome
	ExitCriterionError string
	// Scored loops (score_expr).
	Scored     bool
	Score      *float64
	ScoreError string
	// Accumulating loops (accumulate).
	Accumulating     bool
	NewCount         int
	DryStreak        int
	AccumulatedCount int
	AccumulateError  string
	// On exit.
	FinalResult   any
	BestScore     *float64
	BestIteration *int
	Accumulated   []any
}

// Exited reports whether the loop ended with this report.
func (i *IterationReported) Exited() bool { return i.Outcome != outcomeContinue }

// WireStatus implements Outcome.
func (i *IterationReported) WireStatus() string {
	if i.Exited() {
		return "iteration_exit"
	}
	return "iteration_continue"
}

// iterationAborted is stratum_iteration_abort's answer; a scored step's
// carries the best result so far (null when nothing was scored).
type iterationAborted struct {
	FlowID     string
	StepID     string
	Iteration  int
	Reason     string
	Scored     bool
	BestResult any
	BestScore  *float64
}

// WireStatus implements Outcome.
func (i *iterationAborted) WireStatus() string { return "iteration_aborted" }

// AuditReport is stratum_audit's snapshot of one flow (Service.Audit),
// running or finished; engine.Wire renders the original's JSON of it.
type AuditReport struct {
	FlowID   string
	FlowName string
	// Status is the audit vocabulary: a final status or "in_progress".
	Status         string
	StepsCompleted int
	TotalSteps     int
	// Trace is the flow's step, gate and skip records, in order.
	Trace []state.Record
	// Round is the current round; Rounds the archived ones.
	Round  int
	Rounds []AuditRound
	// Iterations are the iteration loops' reports by step;
	// ArchivedIterations those of earlier rounds.
	Iterations         map[string][]state.IterationEntry
	ArchivedIterations []map[string][]state.IterationEntry
	// ChildAudits are the audits of child flows, by the step that ran them.
	ChildAudits     map[string][]json.RawMessage
	TotalDurationMS int64
	CreatedAt       time.Time
	UpdatedAt       time.Time
	FlowStatus      state.FlowStatus
	// Gate is the pending gate while the flow awaits one.
	Gate *state.PendingGate
	// Judge is judge_history and judge_outcome, when a judge ran.
	Judge *state.JudgeProgress
	// CacheHits counts the trace's steps answered from the result cache.
	CacheHits int
	// BudgetState is the flow's run budget and what it consumed, in the
	// original's shape; nil when the flow has no budget axis.
	BudgetState *AuditBudget
	// Calls are a Go program's calls (a library flow's trace entries:
	// inputs, retries with their violations, tool calls), in order; nil
	// for other flows.
	Calls []json.RawMessage
}

// AuditBudget is an audit's budget_state, the original's ledger shape:
// the flow budget's caps (null where unset) and what the flow consumed.
type AuditBudget struct {
	Caps     AuditBudgetCaps     `json:"caps"`
	Consumed AuditBudgetConsumed `json:"consumed"`
}

// AuditBudgetCaps are a flow budget's axes (nil: not capped).
type AuditBudgetCaps struct {
	MS                 *int64   `json:"ms"`
	USD                *float64 `json:"usd"`
	MaxAgentDispatches *int     `json:"max_agent_dispatches"`
	MaxTokens          *int64   `json:"max_tokens"`
}

// AuditBudgetConsumed is what a flow consumed of its budget: time in
// seconds, agent dispatches, tokens and dollars.
type AuditBudgetConsumed struct {
	WallS      float64 `json:"wall_s"`
	Dispatches int     `json:"dispatches"`
	Tokens     int64   `json:"tokens"`
	Dollars    float64 `json:"dollars"`
}

// AuditRound is one archived round of an audit: its step records.
type AuditRound struct {
	Round int            `json:"round"`
	Steps []state.Record `json:"steps"`
}

// WireStatus implements Outcome.
func (a *AuditReport) WireStatus() string { return a.Status }

func wireStatus(n *Notes, base string) string {
	if n.Failure != "" {
		return string(n.Failure)
	}
	return base
}

// CheckFailure says why an attempt's result was refused: the status of the
// dispatch that sends the step back (upstream-behavior §2.6).
type CheckFailure string

// Check failures, in the order the checks run.
const (
	CheckSchema    CheckFailure = "schema_failed"
	CheckGuardrail CheckFailure = "guardrail_blocked"
	CheckEnsure    CheckFailure = "ensure_failed"
)
