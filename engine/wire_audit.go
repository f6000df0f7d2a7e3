package engine

import (
	"encoding/json"
	"strconv"

	"github.com/stratum-go/stratum/engine/state"
)

// WireJSON is the JSON of Wire(out, err): the very bytes json.Marshal
// writes of it. An answer with a typed encoder (the audit: appendWire)
// writes them directly, without building the map and encoding it by
// reflection; any other is json.Marshal(Wire(out, err)).
func WireJSON(out Outcome, err error) ([]byte, error) {
	if err == nil {
		if a, ok := out.(*AuditReport); ok && a != nil {
			return a.appendWire(make([]byte, 0, 1024))
		}
	}
	return json.Marshal(Wire(out, err))
}

// appendWire appends the JSON of a.wire() as json.Marshal writes it: the
// keys in sorted order, strings with encoding/json's escaping
// (state.AppendJSONString), the records by their MarshalJSON (compact,
// escaped: what encoding/json copies of a Marshaler), times by appendTime,
// and the parts that are usually empty (iterations, archived iterations,
// child audits, the gate) by json.Marshal.
func (a *AuditReport) appendWire(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"archived_iterations":`...)
	if b, err = appendMarshal(b, a.ArchivedIterations, len(a.ArchivedIterations) == 0 && a.ArchivedIterations != nil, "[]"); err != nil {
		return nil, err
	}
	b = append(b, `,"budget_state":`...)
	if b, err = appendMarshal(b, a.BudgetState, a.BudgetState == nil, "null"); err != nil {
		return nil, err
	}
	b = append(b, `,"cache_hits":`...)
	b = strconv.AppendInt(b, int64(a.CacheHits), 10)
	if a.Calls != nil {
		b = append(b, `,"calls":`...)
		if b, err = appendMarshal(b, a.Calls, false, ""); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"child_audits":`...)
	if b, err = appendMarshal(b, a.ChildAudits, len(a.ChildAudits) == 0 && a.ChildAudits != nil, "{}"); err != nil {
		return nil, err
	}
	b = append(b, `,"created_at":`...)
	if b, err = appendTime(b, &a.CreatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"flow_id":`...)
	b = state.AppendJSONString(b, a.FlowID)
	b = append(b, `,"flow_name":`...)
	b = state.AppendJSONString(b, a.FlowName)
	b = append(b, `,"flow_status":`...)
	b = state.AppendJSONString(b, string(a.FlowStatus))
	if a.Gate != nil {
		b = append(b, `,"gate":`...)
		if b, err = appendMarshal(b, a.Gate, false, ""); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"iterations":`...)
	if b, err = appendMarshal(b, a.Iterations, len(a.Iterations) == 0 && a.Iterations != nil, "{}"); err != nil {
		return nil, err
	}
	if a.Judge != nil {
		b = append(b, `,"judge_history":`...)
		if b, err = appendMarshal(b, a.Judge.History, false, ""); err != nil {
			return nil, err
		}
		b = append(b, `,"judge_outcome":`...)
		if b, err = appendMarshal(b, a.Judge.Outcome, false, ""); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"round":`...)
	b = strconv.AppendInt(b, int64(a.Round), 10)
	b = append(b, `,"rounds":[`...)
	for i, rd := range a.Rounds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"round":`...)
		b = strconv.AppendInt(b, int64(rd.Round), 10)
		b = append(b, `,"steps":`...)
		if b, err = appendRecords(b, rd.Steps); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	b = append(b, `],"status":`...)
	b = state.AppendJSONString(b, a.Status)
	b = append(b, `,"steps_completed":`...)
	b = strconv.AppendInt(b, int64(a.StepsCompleted), 10)
	b = append(b, `,"total_duration_ms":`...)
	b = strconv.AppendInt(b, a.TotalDurationMS, 10)
	b = append(b, `,"total_steps":`...)
	b = strconv.AppendInt(b, int64(a.TotalSteps), 10)
	b = append(b, `,"trace":`...)
	if b, err = appendRecords(b, a.Trace); err != nil {
		return nil, err
	}
	b = append(b, `,"updated_at":`...)
	if b, err = appendTime(b, &a.UpdatedAt); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendRecords appends recs as encoding/json writes a []state.Record.
// Record.MarshalJSON writes compact JSON with encoding/json's escaping, so
// the compaction encoding/json applies to a Marshaler's output would leave
// it as is.
func appendRecords(b []byte, recs []state.Record) ([]byte, error) {
	if recs == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		r, err := recs[i].MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, r...)
	}
	return append(b, ']'), nil
}

// appendMarshal appends empty when isEmpty, else json.Marshal(v).
func appendMarshal(b []byte, v any, isEmpty bool, empty string) ([]byte, error) {
	if isEmpty {
		return append(b, empty...), nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}
