package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	sjson "github.com/segmentio/encoding/json"

	"github.com/stratum-go/stratum/engine/state"
)

// An event's JSON form is the one the log has always held: seq, time,
// flow_id, type, step_id (when set) and data (when the payload is not
// zero), data an object whose keys are the payload's json tags in
// alphabetical order. Which keys a payload writes is its appendData
// method's rule: the keys its transition always sets, zero or not, and
// any other when set. Stored events of every kind and shape, written by
// older builds, are pinned in testdata/events.

// payloadDecoders decodes the data of each event kind into its payload
// type (TestEveryPayloadIsDecoded checks every Payload is here, under its
// Kind).
var payloadDecoders = map[EventType]func(data []byte) (Payload, error){
	EventFlowCreated:     decodeAs[FlowCreated],
	EventStepDispatched:  decodeAs[StepDispatched],
	EventStepDone:        decodeAs[StepDone],
	EventStepFailed:      decodeAs[StepFailed],
	EventStepSkipped:     decodeAs[StepSkipped],
	EventGateOpened:      decodeAs[GateOpened],
	EventGateResolved:    decodeAs[GateResolved],
	EventCheckpoint:      decodeAs[Checkpoint],
	EventIterationReport: decodeAs[IterationReport],
	EventFlowFinished:    decodeAs[FlowFinished],
	EventTrace:           decodeAs[Trace],
	EventParallelTask:    decodeAs[ParallelTask],
	EventJudgeVerdict:    decodeAs[JudgeVerdict],
}

func decodeAs[T Payload](data []byte) (Payload, error) {
	var p T
	if err := sjson.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	return p, nil
}

// unknownPayload is the data of an event kind this build does not know (a
// newer build's), kept as it was read so it is written back unchanged.
type unknownPayload struct {
	kind EventType
	data json.RawMessage // a JSON object
}

func (p unknownPayload) Kind() EventType { return p.kind }

// appendData is never called: AppendJSON and DataFields write the object
// as it was read.
func (p unknownPayload) appendData(w dataWriter) dataWriter {
	w.err = fmt.Errorf("event kind %q: no encoder", p.kind)
	return w
}

// UnmarshalJSON reads an event as the log stores it: its data is decoded
// into the payload type of its kind (unknown kinds keep their data as
// read). Data that does not fit its kind's payload is an error.
func (e *Event) UnmarshalJSON(b []byte) error {
	env := envelopes.Get().(*envelope)
	defer envelopes.Put(env)
	*env = envelope{}
	// The data is decoded from b itself, once its kind is known.
	rest, err := sjson.Parse(b, env, sjson.DontCopyRawMessage)
	if err != nil {
		return err
	}
	if rest = bytes.TrimSpace(rest); len(rest) > 0 {
		return fmt.Errorf("invalid character %q after the event", rest[0])
	}
	p, err := decodePayload(env.Type, env.Data)
	if err != nil {
		return fmt.Errorf("event %d (%s) data: %w", env.Seq, env.Type, err)
	}
	*e = Event{Seq: env.Seq, Time: env.Time, FlowID: env.FlowID, Type: env.Type, StepID: env.StepID, Data: p}
	env.Data = nil // b is the caller's
	return nil
}

// envelope is an event's JSON form with its data undecoded; envelopes
// reuses them (a decode would otherwise allocate one per event).
type envelope struct {
	Seq    uint64          `json:"seq"`
	Time   time.Time       `json:"time"`
	FlowID string          `json:"flow_id"`
	Type   EventType       `json:"type"`
	StepID string          `json:"step_id"`
	Data   json.RawMessage `json:"data"`
}

var envelopes = sync.Pool{New: func() any { return new(envelope) }}

func decodePayload(t EventType, data json.RawMessage) (Payload, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	if data[0] != '{' {
		return nil, fmt.Errorf("not an object: %.20s", data)
	}
	if dec, ok := payloadDecoders[t]; ok {
		return dec(data)
	}
	return unknownPayload{kind: t, data: bytes.Clone(data)}, nil
}

// MarshalJSON writes the event as the log stores it: seq, time, flow_id,
// type, step_id (when set) and data (when the payload is not zero, with
// the keys its kind writes).
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 256))
}

// AppendJSON appends the event's JSON form (MarshalJSON) to b. A payload
// of another kind than the event's Type is an error.
func (e *Event) AppendJSON(b []byte) ([]byte, error) {
	if e.Data != nil && e.Data.Kind() != e.Type {
		return nil, fmt.Errorf("event %s carries a %s payload", e.Type, e.Data.Kind())
	}
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
	switch p := e.Data.(type) {
	case nil:
	case unknownPayload:
		b = append(append(b, `,"data":`...), p.data...)
	default:
		mark := len(b)
		w := p.appendData(dataWriter{b: append(b, `,"data":{`...)})
		if w.err != nil {
			return nil, w.err
		}
		if !w.set { // a zero payload: no data
			b = w.b[:mark]
			break
		}
		b = append(w.b, '}')
	}
	return append(b, '}'), nil
}

// DataField is one key of an event's data as it is written to the log.
type DataField struct {
	Key  string
	JSON json.RawMessage // the value, compact
}

// DataFields returns the keys the event writes to the log, in key order,
// each with its value (none when the payload is zero). Front ends that
// show an event's data generically (plain output, a detail view) read it
// here, so they show what the log holds.
func (e Event) DataFields() ([]DataField, error) {
	switch p := e.Data.(type) {
	case nil:
		return nil, nil
	case unknownPayload:
		return objectFields(p.data)
	default:
		w := p.appendData(dataWriter{listing: true})
		if w.err != nil {
			return nil, w.err
		}
		if !w.set {
			return nil, nil
		}
		return w.fields, nil
	}
}

// objectFields lists a JSON object's keys in their order, values compacted.
func objectFields(obj json.RawMessage) ([]DataField, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var out []DataField
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			return nil, err
		}
		out = append(out, DataField{Key: k.(string), JSON: c.Bytes()})
	}
	return out, nil
}

// dataWriter writes a payload's keys: into b as one JSON object's members,
// or, listing, into fields too. set records whether any key was not zero.
type dataWriter struct {
	b       []byte
	n       int
	set     bool
	listing bool
	fields  []DataField
	err     error
}

// skip reports whether a key whose value is zero (or not) is left out,
// and records a value that is set.
func (w *dataWriter) skip(zero, always bool) bool {
	if !zero {
		w.set = true
	}
	return w.err != nil || zero && !always
}

// key writes a key and returns where its value starts.
func (w *dataWriter) key(k string) int {
	if w.n > 0 {
		w.b = append(w.b, ',')
	}
	w.n++
	w.b = appendString(w.b, k)
	w.b = append(w.b, ':')
	return len(w.b)
}

// done ends the value of k that started at start.
func (w *dataWriter) done(k string, start int) {
	if w.listing {
		w.fields = append(w.fields, DataField{Key: k, JSON: bytes.Clone(w.b[start:])})
	}
}

func (w *dataWriter) str(k, v string, always bool) {
	if w.skip(v == "", always) {
		return
	}
	s := w.key(k)
	w.b = appendString(w.b, v)
	w.done(k, s)
}

func (w *dataWriter) int(k string, v int64, always bool) {
	if w.skip(v == 0, always) {
		return
	}
	s := w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
	w.done(k, s)
}

func (w *dataWriter) bool(k string, v, always bool) {
	if w.skip(!v, always) {
		return
	}
	s := w.key(k)
	w.b = strconv.AppendBool(w.b, v)
	w.done(k, s)
}

// list is a list of strings: zero when nil (an empty list is written as
// []), written as null when nil.
func (w *dataWriter) list(k string, v []string, always bool) {
	if w.skip(v == nil, always) {
		return
	}
	s := w.key(k)
	w.b = appendStrings(w.b, v)
	w.done(k, s)
}

// intPtr, float, deadline, trace and value are written when set.

func (w *dataWriter) intPtr(k string, v *int) {
	if w.skip(v == nil, false) {
		return
	}
	s := w.key(k)
	w.b = strconv.AppendInt(w.b, int64(*v), 10)
	w.done(k, s)
}

func (w *dataWriter) float(k string, v *float64) {
	if w.skip(v == nil, false) {
		return
	}
	s := w.key(k)
	b, err := appendFloat(w.b, v)
	if err != nil {
		w.err = fmt.Errorf("event data %s: %w", k, err)
		return
	}
	w.b = b
	w.done(k, s)
}

// deadline writes a time in UTC.
func (w *dataWriter) deadline(k string, v *time.Time) {
	if w.skip(v == nil, false) {
		return
	}
	s := w.key(k)
	u := v.UTC()
	b, err := appendTime(w.b, &u)
	if err != nil {
		w.err = fmt.Errorf("event data %s: %w", k, err)
		return
	}
	w.b = b
	w.done(k, s)
}

func (w *dataWriter) trace(k string, v *state.TraceRecord) { w.value(k, v, v == nil) }

// value writes v as encoding/json does, when it is set (not zero).
func (w *dataWriter) value(k string, v any, zero bool) {
	if w.skip(zero, false) {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		w.err = fmt.Errorf("event data %s: %w", k, err)
		return
	}
	s := w.key(k)
	w.b = append(w.b, raw...)
	w.done(k, s)
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
