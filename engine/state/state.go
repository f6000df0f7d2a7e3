package state

import (
	"encoding/json"
	"time"
)

// FlowState is one flow execution, persisted as JSON. The fields down to
// ParallelTasks keep the original's JSON names (upstream-behavior §2.19) so
// consumers of `stratum-mcp query` keep working; the fields after it are ours.
//
// FlowState is plain data. Transitions mutate the private copy they are
// given (read on a snapshot, engine/snapshot.go); nothing else may hold on to it.
type FlowState struct {
	FlowID   string         `json:"flow_id"`
	FlowName string         `json:"flow_name"`
	RawSpec  string         `json:"raw_spec"`
	Inputs   map[string]any `json:"inputs"`
	StepProgress
	Checkpoints map[string]*Checkpoint `json:"checkpoints"`
	RoundProgress
	ParentFlowID *string `json:"parent_flow_id"`
	ParentStepID *string `json:"parent_step_id"`
	ChildProgress
	ParallelTasks map[string]any `json:"parallel_tasks,omitempty"`

	// Ours.
	SchemaVersion int        `json:"stratum_state_version"` // record format version, currently 1
	Status        FlowStatus `json:"status"`
	SpecFile      string     `json:"spec_file,omitempty"` // where the spec came from, when known
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	// FlowStart is when the flow was planned; durations are measured from the
	// persisted timestamps so they survive restarts.
	FlowStart time.Time `json:"flow_start"`
	// DispatchedAt is when each step was last dispatched (wall clock), for
	// duration_ms; persisted, unlike the original.
	DispatchedAt map[string]time.Time `json:"dispatched_at,omitempty"`
	// Gate is the pending gate, set while Status is awaiting_gate.
	Gate *PendingGate `json:"gate,omitempty"`
	// Driver says who drives the flow: "agent" (MCP/CLI step reports) or
	// "runner" (an in-process `stratum run`/TUI run).
	Driver string `json:"driver,omitempty"`
	// Owner is the runner's lease; an agent cannot report into a flow whose
	// lease is live.
	Owner *Lease `json:"owner,omitempty"`
	// Version counts the committed writes of the flow: Stamp moves it one
	// on, and engine.Tx.Put writes only over the version the writer read.
	Version int64 `json:"version"`
	// Trace is the in-process runner's per-call trace records (seed 000 §8.1).
	Trace []json.RawMessage `json:"trace,omitempty"`
	// Budget is the run budget ledger.
	BudgetState *BudgetState `json:"budget_state,omitempty"`
	// ParallelRuns are the server-dispatched fan-outs of parallel_dispatch
	// steps (stratum_parallel_start), by step id: who runs them (a lease
	// renewed while they run) and, once their tasks settled, the merge.
	ParallelRuns map[string]*ParallelRun `json:"parallel_runs,omitempty"`
	// Library is set on a flow a Go program drives through the library
	// (Driver "library", no spec): its reviews and how it ended
	// (engine/library.go).
	Library *LibraryState `json:"library,omitempty"`
	// Ended is set when someone ended the flow by hand (`stratum kill`,
	// the TUI's :kill, `stratum gc --stalled`): who, why, how, when.
	Ended *Ending `json:"ended,omitempty"`
	// Judge is what the judge steps of the flow decided (nil when none ran).
	Judge *JudgeProgress `json:"judge,omitempty"`
}

// Ending is who ended a flow by hand, and why (FlowState.Ended).
type Ending struct {
	By      string    `json:"by"`
	Reason  string    `json:"reason"`
	Channel string    `json:"channel"` // cli | tui | policy (gc)
	At      time.Time `json:"at"`
	// Stalled says the flow was stalled (nothing drove it) when it ended.
	Stalled bool `json:"stalled,omitempty"`
}

// PendingGate is the persisted state of the gate the flow waits on. The
// deadline is absolute, so any stratum process can enforce it and a restart
// does not reset it.
type PendingGate struct {
	StepID       string     `json:"step_id"`
	Round        int        `json:"round"`
	DispatchedAt time.Time  `json:"dispatched_at"`
	Deadline     *time.Time `json:"deadline,omitempty"`
	OnTimeout    string     `json:"on_timeout,omitempty"` // kill | approve | revise
	Approver     string     `json:"approver,omitempty"`   // any | human
}

// Lease is a runner's claim on a flow. It is live until ExpiresAt; the runner
// renews it with heartbeats.
type Lease struct {
	ID        string    `json:"id"`
	PID       int       `json:"pid,omitempty"`
	Host      string    `json:"host,omitempty"`
	Heartbeat time.Time `json:"heartbeat"`
	ExpiresAt time.Time `json:"expires_at"`
}

// BudgetState is the run-budget ledger of a flow.
type BudgetState struct {
	SpentUSD      float64 `json:"spent_usd"`
	CostUnknown   bool    `json:"cost_unknown,omitempty"` // some call had no price
	SpentTokens   int64   `json:"spent_tokens"`
	SpentMS       int64   `json:"spent_ms"`
	AgentDispatch int     `json:"agent_dispatches"`
}

// Record types.
const (
	RecordStep   = "step"
	RecordGate   = "gate"
	RecordSkip   = "skip"
	RecordPolicy = "policy"
)

// Record is one entry of the trace: a StepRecord, GateRecord, SkipRecord or
// PolicyRecord of the original, told apart by Type. Every record carries
// step_id, round and round_start_step_id; the other fields belong to one type.
type Record struct {
	Type             string  `json:"type"`
	StepID           string  `json:"step_id"`
	Round            int     `json:"round"`
	RoundStartStepID *string `json:"round_start_step_id"`

	// step
	FunctionName string  `json:"function_name,omitempty"`
	Attempts     int     `json:"attempts,omitempty"`
	DurationMS   int64   `json:"duration_ms,omitempty"`
	Agent        *string `json:"agent,omitempty"`
	StepMode     string  `json:"step_mode,omitempty"`
	ChildFlowID  *string `json:"child_flow_id,omitempty"`
	CacheHit     bool    `json:"cache_hit,omitempty"`
	CacheKey     string  `json:"cache_key,omitempty"`

	// gate
	Outcome    string `json:"outcome,omitempty"`
	Rationale  string `json:"rationale,omitempty"`
	ResolvedBy string `json:"resolved_by,omitempty"`
	Channel    string `json:"channel,omitempty"`  // ours: tui | cli | mcp | policy | timeout
	Reviewer   string `json:"reviewer,omitempty"` // ours: identity of who decided

	// skip
	SkipReason string `json:"skip_reason,omitempty"`

	// policy
	EffectivePolicy string `json:"effective_policy,omitempty"`
	ResolvedOutcome string `json:"resolved_outcome,omitempty"`

	At time.Time `json:"at,omitempty"` // ours: when the record was written
	// Reverted marks a gate record a revert undid (ours): the decision is
	// kept in the trace, never erased, and no longer counts.
	Reverted bool `json:"reverted,omitempty"`
}

// StepProgress, RoundProgress and ChildProgress are the progress of a
// flow: what a checkpoint saves (stratum_commit) and a revert restores
// (upstream-behavior §2.13). FlowState and Checkpoint embed the three, so
// the fields exist once; Clone (clone.go) is their one deep copy. They
// are three, not one, because the original's key order of a state — kept
// by the stored JSON and by `stratum query flow` — has checkpoints between
// the first two and the parent ids between the last two; embedded fields
// keep their JSON keys and their place.
type StepProgress struct {
	StepOutputs map[string]any `json:"step_outputs"`
	Records     []Record       `json:"records"`
	Attempts    map[string]int `json:"attempts"`
	CurrentIdx  int            `json:"current_idx"`
}

// RoundProgress is the round and the iteration loops of a flow's progress
// (see StepProgress).
type RoundProgress struct {
	Round                int                           `json:"round"`
	Rounds               [][]Record                    `json:"rounds"`
	RoundStartStepID     *string                       `json:"round_start_step_id"`
	TerminalStatus       *string                       `json:"terminal_status"`
	Iterations           map[string][]IterationEntry   `json:"iterations"`
	ArchivedIterations   []map[string][]IterationEntry `json:"archived_iterations"`
	ActiveIteration      *ActiveIteration              `json:"active_iteration"`
	IterationOutcome     map[string]string             `json:"iteration_outcome"`
	IterationBest        map[string]*IterationBest     `json:"iteration_best"`
	IterationAccumulator map[string]*Accumulator       `json:"iteration_accumulator"`
}

// ChildProgress is the child flows of a flow's progress (see
// StepProgress).
type ChildProgress struct {
	ActiveChildFlowID *string                      `json:"active_child_flow_id"`
	ChildAudits       map[string][]json.RawMessage `json:"child_audits"`
}

// Checkpoint is a named snapshot (stratum_commit): the flow's progress when
// it was taken (upstream-behavior §2.13), with the same JSON keys as the
// state's fields it restores.
type Checkpoint struct {
	Label string `json:"label"`
	StepProgress
	RoundProgress
	ChildProgress
	// Judge is the flow's judge_history and judge_outcome when it was
	// taken (the original's checkpoint saves both; nil when no judge ran).
	Judge     *JudgeProgress `json:"judge,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
}

// ActiveIteration is the iteration loop in progress (at most one per flow).
type ActiveIteration struct {
	StepID        string    `json:"step_id"`
	Count         int       `json:"count"`
	MaxIterations int       `json:"max_iterations"`
	ExitCriterion string    `json:"exit_criterion,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	// HistoryStart is the length of the step's iteration history (current
	// round) when this loop started: the loop's own reports follow it (ours).
	HistoryStart int `json:"history_start"`
}

// IterationEntry is one report (or abort) of an iteration loop.
type IterationEntry struct {
	Iteration          int       `json:"iteration"`
	Round              int       `json:"round"`
	Result             any       `json:"result,omitempty"` // stripped by audit
	ResultFingerprint  string    `json:"result_fingerprint,omitempty"`
	ExitCriterionMet   bool      `json:"exit_criterion_met"`
	Outcome            string    `json:"outcome"`
	Timestamp          time.Time `json:"timestamp"`
	Score              *float64  `json:"score,omitempty"`
	ExitCriterionError string    `json:"exit_criterion_error,omitempty"`
	NewCount           *int      `json:"new_count,omitempty"`
	DryStreak          *int      `json:"dry_streak,omitempty"`
	AccumulateError    string    `json:"accumulate_error,omitempty"`
	// ScoreError says why score_expr gave no score for this report (ours).
	ScoreError string `json:"score_error,omitempty"`
}

// IterationBest is the best-scored result of a scored iteration loop.
type IterationBest struct {
	Result    any      `json:"result"`
	Score     *float64 `json:"score"`
	Iteration int      `json:"iteration"`
}

// Accumulator is the deduplicated item set of an accumulating iteration.
type Accumulator struct {
	Items     []any    `json:"items"`
	Keys      []string `json:"keys"` // canonical JSON of each item's key, parallel to Items
	DryStreak int      `json:"dry_streak"`
}

// Drivers of a flow.
const (
	DriverAgent  = "agent"
	DriverRunner = "runner"
	// DriverLibrary drives a flow a Go program runs through the library
	// (engine/stratum, engine/library.go).
	DriverLibrary = "library"
)

// JudgeProgress is what judge steps decided, by step id, under the
// original's names: judge_history has one entry per predicate and tier of
// every turn, judge_outcome the latest turn's {met, predicate_results}.
type JudgeProgress struct {
	History map[string][]JudgeEntry    `json:"judge_history"`
	Outcome map[string]json.RawMessage `json:"judge_outcome"`
}

// JudgeEntry is one tier's verdict on one predicate in one turn.
type JudgeEntry struct {
	Turn        int    `json:"turn"`
	PredicateID string `json:"predicate_id"`
	Tier        string `json:"tier"`
	Verdict     string `json:"verdict"`
	Confidence  *int   `json:"confidence"`
	Reason      string `json:"reason"`
}

// Clone returns a deep copy (nil for nil).
func (j *JudgeProgress) Clone() *JudgeProgress {
	if j == nil {
		return nil
	}
	c := &JudgeProgress{History: make(map[string][]JudgeEntry, len(j.History)), Outcome: make(map[string]json.RawMessage, len(j.Outcome))}
	for k, v := range j.History {
		es := append([]JudgeEntry(nil), v...)
		for i := range es {
			es[i].Confidence = ClonePtr(es[i].Confidence)
		}
		c.History[k] = es
	}
	for k, v := range j.Outcome {
		c.Outcome[k] = append(json.RawMessage(nil), v...)
	}
	return c
}
