package engine

import (
	"encoding/json"
	"time"
)

// MarshalJSON writes a record with exactly the keys of its type in the
// original (StepRecord, GateRecord, SkipRecord, PolicyRecord: every key
// present, null where unset, as Python's dataclass asdict does), plus ours
// (channel, reviewer, at, cache fields, reverted) only when set. Decoding uses the
// struct tags, so records written either way read back the same.
func (r Record) MarshalJSON() ([]byte, error) {
	m := map[string]any{
		"type":                r.Type,
		"step_id":             r.StepID,
		"round":               r.Round,
		"round_start_step_id": r.RoundStartStepID,
	}
	switch r.Type {
	case RecordStep:
		m["function_name"] = r.FunctionName
		m["attempts"] = r.Attempts
		m["duration_ms"] = r.DurationMS
		m["agent"] = r.Agent
		m["step_mode"] = r.StepMode
		m["child_flow_id"] = r.ChildFlowID
		if r.CacheHit || r.CacheKey != "" {
			m["cache_hit"] = r.CacheHit
			m["cache_key"] = r.CacheKey
		}
	case RecordGate:
		m["outcome"] = r.Outcome
		m["rationale"] = r.Rationale
		m["resolved_by"] = r.ResolvedBy
		m["duration_ms"] = r.DurationMS
	case RecordSkip:
		m["skip_reason"] = r.SkipReason
	case RecordPolicy:
		m["effective_policy"] = r.EffectivePolicy
		m["resolved_outcome"] = r.ResolvedOutcome
		m["rationale"] = r.Rationale
	default:
		// An unknown type: keep every field that is set.
		type plain Record
		return json.Marshal(plain(r))
	}
	if r.Channel != "" {
		m["channel"] = r.Channel
	}
	if r.Reviewer != "" {
		m["reviewer"] = r.Reviewer
	}
	if !r.At.IsZero() {
		m["at"] = r.At.Format(time.RFC3339Nano)
	}
	if r.Reverted {
		m["reverted"] = true
	}
	return json.Marshal(m)
}
