package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// EventData is an event's payload: the fields the transitions write,
// whichever event type carries them. Transitions fill it directly and
// front ends read its fields; a field an event does not carry is zero.
//
// It is persisted in the event log as a JSON object whose keys are the
// json tags below (the keys the log has always held, so stored events need
// no migration). Which keys an event writes is decided by its type, in one
// place (Event.MarshalJSON, writtenKeys): each type always writes its own
// keys, zero or not, and writes an optional key only when it is set. The
// fields are declared in key order, the order they are written in. An
// EventData marshalled on its own (not as an Event's) drops every zero
// field: encode the Event, or list its keys with Event.DataFields.
type EventData struct {
	// Action is what a checkpoint event did (commit, revert) or what an
	// iteration_report recorded (start, report, abort).
	Action string `json:"action,omitempty"`
	// Approver is who may resolve an opened gate (any, human…).
	Approver string `json:"approver,omitempty"`
	// Attempt is a step_failed event's failed attempt; a trace event's
	// attempt the call was for.
	Attempt int `json:"attempt,omitempty"`
	// Attempts is the attempt a step_done event succeeded at.
	Attempts int `json:"attempts,omitempty"`
	// Branch is a parallel_task's branch, once it has one.
	Branch string `json:"branch,omitempty"`
	// CacheHit is true on a trace event served from the result cache.
	CacheHit bool `json:"cache_hit,omitempty"`
	// Channel is how a gate was resolved or a revert came in (tui, mcp,
	// policy…).
	Channel string `json:"channel,omitempty"`
	// ChildFlowID is, on a trace event booked to an ancestor's ledger, the
	// child flow that made the call.
	ChildFlowID string `json:"child_flow_id,omitempty"`
	// CostUSD is a trace event's cost (nil: unknown).
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// Deadline is an opened gate's deadline (nil: none).
	Deadline *time.Time `json:"deadline,omitempty"`
	// Driver is who drives a created flow (agent, runner).
	Driver string `json:"driver,omitempty"`
	// DryStreak is an iteration_report's run of reports that added nothing
	// new (set with NewCount).
	DryStreak *int `json:"dry_streak,omitempty"`
	// DurationMS is a trace event's call time or a parallel_task's run time.
	DurationMS int64 `json:"duration_ms,omitempty"`
	// Error is why a parallel_task failed.
	Error string `json:"error,omitempty"`
	// ErrorKind is a failed call's kind of failure (one of the Attempt*
	// constants); it comes with Violations.
	ErrorKind string `json:"error_kind,omitempty"`
	// Executor is a trace event's executor (infer, command, agent…).
	Executor string `json:"executor,omitempty"`
	// Exhausted is true on the step_failed event of a step's last attempt.
	Exhausted bool `json:"exhausted,omitempty"`
	// ExitCriterionMet is an iteration report's exit criterion.
	ExitCriterionMet bool `json:"exit_criterion_met,omitempty"`
	// FlowName is a created flow's name.
	FlowName string `json:"flow_name,omitempty"`
	// Iteration is the iteration an iteration_report reported or aborted at.
	Iteration int `json:"iteration,omitempty"`
	// Judge is a judge_verdict event's verdict.
	Judge *state.JudgeVerdict `json:"judge,omitempty"`
	// Label is a checkpoint's label.
	Label string `json:"label,omitempty"`
	// MaxIterations is a started iteration loop's bound.
	MaxIterations int `json:"max_iterations,omitempty"`
	// MaxRoundsExceeded is true on a gate_resolved event of a revise that
	// max_rounds refused (the gate waits on in its round).
	MaxRoundsExceeded bool `json:"max_rounds_exceeded,omitempty"`
	// NewCount is how many new items an iteration report accumulated (nil:
	// the step accumulates nothing).
	NewCount *int `json:"new_count,omitempty"`
	// Outcome is a gate decision (approve, revise, kill) or an iteration
	// report's outcome (continue, exit_success…).
	Outcome string `json:"outcome,omitempty"`
	// ParentFlowID and ParentStepID are a child flow's parent and the step
	// that started it (flow_created).
	ParentFlowID string `json:"parent_flow_id,omitempty"`
	ParentStepID string `json:"parent_step_id,omitempty"`
	// Policy is the policy that resolved a gate (gate_resolved), or the
	// one that could not (gate_opened, with PolicyFailed).
	Policy string `json:"policy,omitempty"`
	// PolicyFailed is why an opened gate's policy could not approve it (it
	// waits for a reviewer instead: policy_fallback).
	PolicyFailed string `json:"policy_failed,omitempty"`
	// Rationale is a gate decision's rationale.
	Rationale string `json:"rationale,omitempty"`
	// Reason is why a step was skipped, a loop aborted or a flow finished
	// early (budget exhaustion, an abandoned child).
	Reason string `json:"reason,omitempty"`
	// ResolvedBy is who resolved a gate (human, agent, system).
	ResolvedBy string `json:"resolved_by,omitempty"`
	// Reviewer names the person who resolved a gate, when known.
	Reviewer string `json:"reviewer,omitempty"`
	// ReviseTarget is the step a revise sends the flow back to
	// (gate_resolved).
	ReviseTarget string `json:"revise_target,omitempty"`
	// Round is the round a gate opened or was resolved in.
	Round int `json:"round,omitempty"`
	// Runs is how many times a parallel_task has run.
	Runs int `json:"runs,omitempty"`
	// Score is an iteration report's score (nil: not scored).
	Score *float64 `json:"score,omitempty"`
	// SpecFile is where a created flow's spec came from ("" unknown).
	SpecFile string `json:"spec_file,omitempty"`
	// State is a parallel_task's state (the Task* constants).
	State string `json:"state,omitempty"`
	// Status is a step_failed event's check failure, or a flow_finished
	// event's final status.
	Status string `json:"status,omitempty"`
	// StepMode is a dispatched step's mode.
	StepMode string `json:"step_mode,omitempty"`
	// StepNumber is a checkpoint's step number (1-based).
	StepNumber int `json:"step_number,omitempty"`
	// TaskID is a parallel_task's task, or the task a trace event's call
	// ran for.
	TaskID string `json:"task_id,omitempty"`
	// Tokens is a trace event's token count.
	Tokens int64 `json:"tokens,omitempty"`
	// Trace is a trace event's trace record, when the runner kept one
	// (infer calls): which function and model ran and what it returned.
	Trace *state.TraceRecord `json:"trace,omitempty"`
	// Violations are a failed attempt's violations (step_failed, a trace
	// event with an ErrorKind, a failed parallel_task).
	Violations []string `json:"violations,omitempty"`
	// Worktree is a parallel_task's worktree, once it has one.
	Worktree string `json:"worktree,omitempty"`
}

// A dataField is one key of EventData's JSON form: whether the field is
// zero and how its value is written.
type dataField struct {
	key    string
	zero   func(d *EventData) bool
	append func(b []byte, d *EventData) ([]byte, error)
}

// dataFields are EventData's fields in key order (TestDataFieldsMatchStruct
// keeps them in step with the struct).
var dataFields = [...]dataField{
	dataStr("action", func(d *EventData) *string { return &d.Action }),
	dataStr("approver", func(d *EventData) *string { return &d.Approver }),
	dataNum("attempt", func(d *EventData) *int { return &d.Attempt }),
	dataNum("attempts", func(d *EventData) *int { return &d.Attempts }),
	dataStr("branch", func(d *EventData) *string { return &d.Branch }),
	dataFlag("cache_hit", func(d *EventData) *bool { return &d.CacheHit }),
	dataStr("channel", func(d *EventData) *string { return &d.Channel }),
	dataStr("child_flow_id", func(d *EventData) *string { return &d.ChildFlowID }),
	dataPtr("cost_usd", func(d *EventData) **float64 { return &d.CostUSD }, appendFloat),
	dataPtr("deadline", func(d *EventData) **time.Time { return &d.Deadline }, appendDeadline),
	dataStr("driver", func(d *EventData) *string { return &d.Driver }),
	dataPtr("dry_streak", func(d *EventData) **int { return &d.DryStreak }, appendInt),
	dataNum("duration_ms", func(d *EventData) *int64 { return &d.DurationMS }),
	dataStr("error", func(d *EventData) *string { return &d.Error }),
	dataStr("error_kind", func(d *EventData) *string { return &d.ErrorKind }),
	dataStr("executor", func(d *EventData) *string { return &d.Executor }),
	dataFlag("exhausted", func(d *EventData) *bool { return &d.Exhausted }),
	dataFlag("exit_criterion_met", func(d *EventData) *bool { return &d.ExitCriterionMet }),
	dataStr("flow_name", func(d *EventData) *string { return &d.FlowName }),
	dataNum("iteration", func(d *EventData) *int { return &d.Iteration }),
	dataPtr("judge", func(d *EventData) **state.JudgeVerdict { return &d.Judge }, appendJSON[state.JudgeVerdict]),
	dataStr("label", func(d *EventData) *string { return &d.Label }),
	dataNum("max_iterations", func(d *EventData) *int { return &d.MaxIterations }),
	dataFlag("max_rounds_exceeded", func(d *EventData) *bool { return &d.MaxRoundsExceeded }),
	dataPtr("new_count", func(d *EventData) **int { return &d.NewCount }, appendInt),
	dataStr("outcome", func(d *EventData) *string { return &d.Outcome }),
	dataStr("parent_flow_id", func(d *EventData) *string { return &d.ParentFlowID }),
	dataStr("parent_step_id", func(d *EventData) *string { return &d.ParentStepID }),
	dataStr("policy", func(d *EventData) *string { return &d.Policy }),
	dataStr("policy_failed", func(d *EventData) *string { return &d.PolicyFailed }),
	dataStr("rationale", func(d *EventData) *string { return &d.Rationale }),
	dataStr("reason", func(d *EventData) *string { return &d.Reason }),
	dataStr("resolved_by", func(d *EventData) *string { return &d.ResolvedBy }),
	dataStr("reviewer", func(d *EventData) *string { return &d.Reviewer }),
	dataStr("revise_target", func(d *EventData) *string { return &d.ReviseTarget }),
	dataNum("round", func(d *EventData) *int { return &d.Round }),
	dataNum("runs", func(d *EventData) *int { return &d.Runs }),
	dataPtr("score", func(d *EventData) **float64 { return &d.Score }, appendFloat),
	dataStr("spec_file", func(d *EventData) *string { return &d.SpecFile }),
	dataStr("state", func(d *EventData) *string { return &d.State }),
	dataStr("status", func(d *EventData) *string { return &d.Status }),
	dataStr("step_mode", func(d *EventData) *string { return &d.StepMode }),
	dataNum("step_number", func(d *EventData) *int { return &d.StepNumber }),
	dataStr("task_id", func(d *EventData) *string { return &d.TaskID }),
	dataNum("tokens", func(d *EventData) *int64 { return &d.Tokens }),
	dataPtr("trace", func(d *EventData) **state.TraceRecord { return &d.Trace }, appendTrace),
	dataList("violations", func(d *EventData) *[]string { return &d.Violations }),
	dataStr("worktree", func(d *EventData) *string { return &d.Worktree }),
}

func dataStr(key string, f func(*EventData) *string) dataField {
	return dataField{key, func(d *EventData) bool { return *f(d) == "" },
		func(b []byte, d *EventData) ([]byte, error) { return appendString(b, *f(d)), nil }}
}

func dataNum[T int | int64](key string, f func(*EventData) *T) dataField {
	return dataField{key, func(d *EventData) bool { return *f(d) == 0 },
		func(b []byte, d *EventData) ([]byte, error) { return strconv.AppendInt(b, int64(*f(d)), 10), nil }}
}

func dataFlag(key string, f func(*EventData) *bool) dataField {
	return dataField{key, func(d *EventData) bool { return !*f(d) },
		func(b []byte, d *EventData) ([]byte, error) { return strconv.AppendBool(b, *f(d)), nil }}
}

// dataList is a list of strings: zero when nil (an empty list is written
// as []), written as null when nil.
func dataList(key string, f func(*EventData) *[]string) dataField {
	return dataField{key, func(d *EventData) bool { return *f(d) == nil },
		func(b []byte, d *EventData) ([]byte, error) { return appendStrings(b, *f(d)), nil }}
}

// dataPtr is a field that is zero when nil and written as null when nil.
func dataPtr[T any](key string, f func(*EventData) **T, write func([]byte, *T) ([]byte, error)) dataField {
	return dataField{key, func(d *EventData) bool { return *f(d) == nil },
		func(b []byte, d *EventData) ([]byte, error) {
			if p := *f(d); p != nil {
				return write(b, p)
			}
			return append(b, "null"...), nil
		}}
}

// keyMask is a set of dataFields, by index.
type keyMask uint64

func keysOf(names ...string) keyMask {
	var m keyMask
	for _, n := range names {
		i := fieldIndex(n)
		if i < 0 {
			panic("engine: no event data key " + n)
		}
		m |= 1 << i
	}
	return m
}

func fieldIndex(key string) int {
	for i := range dataFields {
		if dataFields[i].key == key {
			return i
		}
	}
	return -1
}

// The keys each event type writes even when zero: the keys its
// transition always sets (the log has always held them so).
var (
	keysFlowCreated    = keysOf("flow_name", "driver", "spec_file")
	keysChildCreated   = keysOf("flow_name", "parent_flow_id", "parent_step_id")
	keysStepDispatched = keysOf("step_mode")
	keysStepDone       = keysOf("attempts")
	keysStepFailed     = keysOf("attempt", "exhausted", "status", "violations")
	keysStepSkipped    = keysOf("reason")
	keysGateOpened     = keysOf("approver", "round")
	keysGateResolved   = keysOf("channel", "outcome", "rationale", "resolved_by", "reviewer", "round")
	keysGateRevised    = keysGateResolved | keysOf("revise_target")
	keysGatePolicy     = keysOf("channel", "outcome", "policy", "rationale", "round")
	keysCheckpoint     = keysOf("action", "label", "step_number")
	keysIterStart      = keysOf("action", "max_iterations")
	keysIterReport     = keysOf("action", "exit_criterion_met", "iteration", "outcome")
	keysIterAbort      = keysOf("action", "iteration", "reason")
	keysFlowFinished   = keysOf("status")
	keysTrace          = keysOf("attempt", "duration_ms")
	keysTraceFailed    = keysOf("attempt", "duration_ms", "violations")
	keysParallelTask   = keysOf("duration_ms", "runs", "state", "task_id")
	keysJudgeVerdict   = keysOf("judge")
)

// writtenKeys is the one rule of which keys an event of type t with data d
// writes even when they are zero; every other key is written when set.
func writtenKeys(t EventType, d *EventData) keyMask {
	switch t {
	case EventFlowCreated:
		if d.ParentFlowID != "" {
			return keysChildCreated
		}
		return keysFlowCreated
	case EventStepDispatched:
		return keysStepDispatched
	case EventStepDone:
		return keysStepDone
	case EventStepFailed:
		return keysStepFailed
	case EventStepSkipped:
		return keysStepSkipped
	case EventGateOpened:
		return keysGateOpened
	case EventGateResolved:
		switch {
		case d.Policy != "": // resolved by the gate's own policy
			return keysGatePolicy
		case d.Outcome == "revise" && !d.MaxRoundsExceeded: // sent back to revise_target
			return keysGateRevised
		}
		return keysGateResolved
	case EventCheckpoint:
		return keysCheckpoint
	case EventIterationReport:
		switch d.Action {
		case "start":
			return keysIterStart
		case "report":
			return keysIterReport
		case "abort":
			return keysIterAbort
		}
	case EventFlowFinished:
		return keysFlowFinished
	case EventTrace:
		if d.ErrorKind != "" {
			return keysTraceFailed
		}
		return keysTrace
	case EventParallelTask:
		return keysParallelTask
	case EventJudgeVerdict:
		return keysJudgeVerdict
	}
	return 0
}

// IsZero reports whether the data holds nothing (the event is written
// without "data").
func (d *EventData) IsZero() bool {
	for i := range dataFields {
		if !dataFields[i].zero(d) {
			return false
		}
	}
	return true
}

// DataField is one key of an event's data as it is written to the log.
type DataField struct {
	Key  string
	JSON json.RawMessage // the value, compact
}

// DataFields returns the keys the event writes to the log, in key order,
// each with its value (none when the data is zero). Front ends that show
// an event's data generically (plain output, a detail view) read it here,
// so they show what the log holds.
func (e Event) DataFields() ([]DataField, error) {
	d := &e.Data
	if d.IsZero() {
		return nil, nil
	}
	always := writtenKeys(e.Type, d)
	var out []DataField
	for i := range dataFields {
		f := &dataFields[i]
		if always&(1<<i) == 0 && f.zero(d) {
			continue
		}
		v, err := f.append(nil, d)
		if err != nil {
			return nil, fmt.Errorf("event data %s: %w", f.key, err)
		}
		out = append(out, DataField{Key: f.key, JSON: v})
	}
	return out, nil
}

// appendData writes the data object of an event of type t (nothing when
// the data is zero).
func appendData(b []byte, t EventType, d *EventData) ([]byte, error) {
	always := writtenKeys(t, d)
	b = append(b, '{')
	n := 0
	for i := range dataFields {
		f := &dataFields[i]
		if always&(1<<i) == 0 && f.zero(d) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendString(b, f.key)
		b = append(b, ':')
		var err error
		if b, err = f.append(b, d); err != nil {
			return nil, fmt.Errorf("event data %s: %w", f.key, err)
		}
	}
	return append(b, '}'), nil
}

// MarshalJSON writes the event as the log stores it: seq, time, flow_id,
// type, step_id (when set) and data (when not zero, with the keys its
// type writes).
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 256))
}

// AppendJSON appends the event's JSON form (MarshalJSON) to b.
func (e *Event) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"time":`...)
	var err error
	if b, err = appendTime(b, &e.Time); err != nil {
		return nil, err
	}
	b = append(b, `,"flow_id":`...)
	b = appendString(b, e.FlowID)
	b = append(b, `,"type":`...)
	b = appendString(b, string(e.Type))
	if e.StepID != "" {
		b = append(b, `,"step_id":`...)
		b = appendString(b, e.StepID)
	}
	if !e.Data.IsZero() {
		b = append(b, `,"data":`...)
		if b, err = appendData(b, e.Type, &e.Data); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendTime writes a time as encoding/json does (RFC 3339 with
// nanoseconds, in its location).
func appendTime(b []byte, t *time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}

// appendDeadline writes a deadline in UTC.
func appendDeadline(b []byte, t *time.Time) ([]byte, error) {
	u := t.UTC()
	return appendTime(b, &u)
}

func appendInt(b []byte, n *int) ([]byte, error) { return strconv.AppendInt(b, int64(*n), 10), nil }

// appendFloat writes a float64 as encoding/json does.
func appendFloat(b []byte, p *float64) ([]byte, error) {
	f := *p
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("unsupported number %v", f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendJSON appends v as json.Marshal writes it.
func appendJSON[T any](b []byte, v *T) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, raw...), nil
}

func appendTrace(b []byte, t *state.TraceRecord) ([]byte, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	return append(b, raw...), nil
}

func appendStrings(b []byte, l []string) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendString writes s as a JSON string exactly as encoding/json does
// (state.AppendJSONString, the one copy of that rule, shared with the records).
func appendString(b []byte, s string) []byte { return state.AppendJSONString(b, s) }
