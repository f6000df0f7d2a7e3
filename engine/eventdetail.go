package engine

import (
	"encoding/json"
	"reflect"
	"time"
)

// EventDetail is the typed reading of an Event's Data: the fields the
// transitions put there, whichever event type carries them. Front ends read
// events through it, never by string key. Data itself stays a map because
// it is persisted in the event log as JSON and an event read back from the
// store holds JSON numbers (float64) where one from the in-process broker
// holds the Go values the transition wrote (int, []string); Detail reads
// both the same way. Fields an event does not carry are zero.
type EventDetail struct {
	// step_dispatched
	StepMode string
	// step_done: the attempt that succeeded
	Attempts int
	// step_failed: the failed attempt, its check failure, violations and
	// whether retries are exhausted; trace: the attempt the call was for
	Attempt    int
	Status     string // step_failed: the check failure; flow_finished: the final status
	Violations []string
	Exhausted  bool
	// step_skipped; flow_finished (budget exhaustion)
	Reason string
	// gate_opened, gate_resolved
	Round      int
	Approver   string
	Deadline   *time.Time
	Outcome    string // gate_resolved: approve/revise/kill; iteration_report: continue/exit…
	ResolvedBy string
	Channel    string
	Reviewer   string
	Rationale  string
	Policy     string // gate_resolved by a policy; gate_opened: the policy that failed
	// gate_resolved: a revise's target step; a revise refused by
	// max_rounds (recorded, the gate waits on in its round)
	ReviseTarget      string
	MaxRoundsExceeded bool
	// gate_opened: why the gate's policy could not approve it (it waits
	// for a reviewer instead: policy_fallback)
	PolicyFailed string
	// checkpoint; iteration_report (action "report"…)
	Action     string
	Label      string
	StepNumber int
	// iteration_report (action start/report/abort)
	MaxIterations    int
	Iteration        int
	ExitCriterionMet bool
	Score            *float64
	NewCount         *int
	DryStreak        *int
	// flow_created
	FlowName     string
	Driver       string
	SpecFile     string
	ParentFlowID string
	ParentStepID string
	// trace: one runner call
	DurationMS  int64
	Tokens      int64
	CostUSD     *float64
	Executor    string
	ChildFlowID string
	CacheHit    bool
	ErrorKind   string
	Call        *CallDetail
}

// CallDetail is the part of a runner's trace record a reader shows: which
// function and model ran and what it returned.
type CallDetail struct {
	Function string `json:"function"`
	Model    string `json:"model"`
	Output   any    `json:"output"`
}

// Detail reads the event's data into an EventDetail.
func (e Event) Detail() EventDetail {
	d := e.Data
	var x EventDetail
	if len(d) == 0 {
		return x
	}
	x.StepMode = dataString(d, "step_mode")
	x.Attempts = dataInt(d, "attempts")
	x.Attempt = dataInt(d, "attempt")
	x.Status = dataString(d, "status")
	x.Violations = dataStrings(d["violations"])
	x.Exhausted = dataBool(d, "exhausted")
	x.Reason = dataString(d, "reason")
	x.Round = dataInt(d, "round")
	x.Approver = dataString(d, "approver")
	if s := dataString(d, "deadline"); s != "" {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			x.Deadline = &t
		}
	}
	x.Outcome = dataString(d, "outcome")
	x.ResolvedBy = dataString(d, "resolved_by")
	x.Channel = dataString(d, "channel")
	x.Reviewer = dataString(d, "reviewer")
	x.Rationale = dataString(d, "rationale")
	x.Policy = dataString(d, "policy")
	x.PolicyFailed = dataString(d, "policy_failed")
	x.ReviseTarget = dataString(d, "revise_target")
	x.MaxRoundsExceeded = dataBool(d, "max_rounds_exceeded")
	x.Action = dataString(d, "action")
	x.Label = dataString(d, "label")
	x.StepNumber = dataInt(d, "step_number")
	x.MaxIterations = dataInt(d, "max_iterations")
	x.Iteration = dataInt(d, "iteration")
	x.ExitCriterionMet = dataBool(d, "exit_criterion_met")
	if f, ok := dataFloat(d["score"]); ok {
		x.Score = &f
	}
	if f, ok := dataFloat(d["new_count"]); ok {
		n := int(f)
		x.NewCount = &n
	}
	if f, ok := dataFloat(d["dry_streak"]); ok {
		n := int(f)
		x.DryStreak = &n
	}
	x.FlowName = dataString(d, "flow_name")
	x.Driver = dataString(d, "driver")
	x.SpecFile = dataString(d, "spec_file")
	x.ParentFlowID = dataString(d, "parent_flow_id")
	x.ParentStepID = dataString(d, "parent_step_id")
	if f, ok := dataFloat(d["duration_ms"]); ok {
		x.DurationMS = int64(f)
	}
	if f, ok := dataFloat(d["tokens"]); ok {
		x.Tokens = int64(f)
	}
	if f, ok := dataFloat(d["cost_usd"]); ok {
		x.CostUSD = &f
	}
	x.Executor = dataString(d, "executor")
	x.ChildFlowID = dataString(d, "child_flow_id")
	x.CacheHit = dataBool(d, "cache_hit")
	x.ErrorKind = dataString(d, "error_kind")
	x.Call = callDetail(d["trace"])
	return x
}

// callDetail decodes a trace record however it is held: raw JSON (in
// process) or a decoded object (read back from the log).
func callDetail(v any) *CallDetail {
	var raw []byte
	switch t := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		raw = t
	case []byte:
		raw = t
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return nil
		}
		raw = b
	}
	var c CallDetail
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	return &c
}

func dataString(d map[string]any, k string) string {
	switch s := d[k].(type) {
	case string:
		return s
	case nil:
		return ""
	}
	// A typed string (an outcome constant written in process).
	if rv := reflect.ValueOf(d[k]); rv.Kind() == reflect.String {
		return rv.String()
	}
	return ""
}

func dataBool(d map[string]any, k string) bool {
	b, _ := d[k].(bool)
	return b
}

func dataInt(d map[string]any, k string) int {
	f, _ := dataFloat(d[k])
	return int(f)
}

// dataFloat reads a number held as any Go numeric type (in process) or as a
// JSON number (float64, json.Number).
func dataFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// dataStrings reads a list of strings held as []string or []any.
func dataStrings(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
