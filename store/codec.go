package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	sjson "github.com/segmentio/encoding/json"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// Summaries are stored in a compact binary form, not JSON: List over 10,000
// flows decodes every one of them, and JSON (times above all) made that
// several times slower. The encoding is versioned by its first byte; a new
// FlowSummary field needs a new version here (TestSummaryCodecCoversFields
// fails until it has one) and a schema migration that rewrites the stored
// summaries (migrate.go, migrate_steps.go). The decoder reads every
// version; a store writes the version of its schema (schema.summaryCodec).
//
//	v1: 0x01
//	    str FlowID, str FlowName, str Status, str CurrentStep,
//	    int StepNumber, int TotalSteps, int Round,
//	    str Driver, str ParentFlowID,
//	    time CreatedAt, time UpdatedAt, int Version,
//	    byte hasGate, [str StepID, int Round, time DispatchedAt,
//	                   byte hasDeadline, [time Deadline],
//	                   str OnTimeout, str Approver]
//	v2: 0x02 (schema 2), v1's fields, then
//	    byte hasOwner, [str ID, int PID, str Host, time Heartbeat, time ExpiresAt]
//	v3: 0x03 (schema 4), v2's fields, then
//	    byte hasReview, [str Question, byte Revise]
//
// str is a uvarint length and the bytes; int is a zig-zag varint; time is a
// uvarint length and time.Time's MarshalBinary form (empty for the zero time).
const (
	summaryCodecV1 = 1
	summaryCodecV2 = 2
	summaryCodecV3 = 3
)

var errShortSummary = errors.New("truncated summary record")

// encodeSummary encodes sum in the given codec version (the fields a
// version lacks are dropped).
func encodeSummary(sum *state.FlowSummary, codec byte) ([]byte, error) {
	b := make([]byte, 0, 128+len(sum.FlowID)+len(sum.FlowName))
	b = append(b, codec)
	b = appendStr(b, sum.FlowID)
	b = appendStr(b, sum.FlowName)
	b = appendStr(b, string(sum.Status))
	b = appendStr(b, sum.CurrentStep)
	b = binary.AppendVarint(b, int64(sum.StepNumber))
	b = binary.AppendVarint(b, int64(sum.TotalSteps))
	b = binary.AppendVarint(b, int64(sum.Round))
	b = appendStr(b, sum.Driver)
	b = appendStr(b, sum.ParentFlowID)
	var err error
	if b, err = appendTime(b, sum.CreatedAt); err != nil {
		return nil, err
	}
	if b, err = appendTime(b, sum.UpdatedAt); err != nil {
		return nil, err
	}
	b = binary.AppendVarint(b, sum.Version)
	if b, err = appendGate(b, sum.Gate); err != nil {
		return nil, err
	}
	if codec >= summaryCodecV2 {
		if b, err = appendLease(b, sum.Owner); err != nil {
			return nil, err
		}
	}
	if codec >= summaryCodecV3 {
		b = appendReview(b, sum.Review)
	}
	return b, nil
}

func appendReview(b []byte, rv *state.GateReview) []byte {
	if rv == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = appendStr(b, rv.Question)
	if rv.Revise {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendGate(b []byte, g *state.PendingGate) ([]byte, error) {
	if g == nil {
		return append(b, 0), nil
	}
	b = append(b, 1)
	b = appendStr(b, g.StepID)
	b = binary.AppendVarint(b, int64(g.Round))
	var err error
	if b, err = appendTime(b, g.DispatchedAt); err != nil {
		return nil, err
	}
	if g.Deadline == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		if b, err = appendTime(b, *g.Deadline); err != nil {
			return nil, err
		}
	}
	b = appendStr(b, g.OnTimeout)
	return appendStr(b, g.Approver), nil
}

func appendLease(b []byte, l *state.Lease) ([]byte, error) {
	if l == nil {
		return append(b, 0), nil
	}
	b = append(b, 1)
	b = appendStr(b, l.ID)
	b = binary.AppendVarint(b, int64(l.PID))
	b = appendStr(b, l.Host)
	var err error
	if b, err = appendTime(b, l.Heartbeat); err != nil {
		return nil, err
	}
	return appendTime(b, l.ExpiresAt)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) ([]byte, error) {
	if t.IsZero() {
		return append(b, 0), nil
	}
	tb, err := t.MarshalBinary()
	if err != nil {
		return nil, err
	}
	b = binary.AppendUvarint(b, uint64(len(tb)))
	return append(b, tb...), nil
}

// summaryReader decodes one record; the first error sticks.
type summaryReader struct {
	b   []byte
	err error
	// intern, when set, shares the strings that repeat across summaries
	// (flow names, statuses, drivers, step ids) within one List call.
	intern map[string]string
}

func (r *summaryReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShortSummary
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *summaryReader) int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShortSummary
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *summaryReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errShortSummary
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// str copies: the input may be memory-mapped.
func (r *summaryReader) str() string { return string(r.bytes()) }

// common is str for values that repeat across flows.
func (r *summaryReader) common() string {
	b := r.bytes()
	if r.intern == nil || len(b) == 0 || len(b) > 64 {
		return string(b)
	}
	if s, ok := r.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	r.intern[s] = s
	return s
}

func (r *summaryReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = errShortSummary
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *summaryReader) time() time.Time {
	tb := r.bytes()
	if r.err != nil || len(tb) == 0 {
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalBinary(tb); err != nil {
		r.err = err
	}
	return t
}

func decodeSummary(b []byte) (*state.FlowSummary, error) {
	sum := &state.FlowSummary{}
	if err := decodeSummaryInto(b, sum, nil); err != nil {
		return nil, err
	}
	return sum, nil
}

// decodeSummaryInto decodes b (any codec version) into *sum (which must be
// zero), sharing repeated strings through intern when it is non-nil.
func decodeSummaryInto(b []byte, sum *state.FlowSummary, intern map[string]string) error {
	if len(b) == 0 || b[0] < summaryCodecV1 || b[0] > summaryCodecV3 {
		return fmt.Errorf("unknown summary encoding %x", b[:min(len(b), 1)])
	}
	r := &summaryReader{b: b[1:], intern: intern}
	sum.FlowID = r.str()
	sum.FlowName = r.common()
	sum.Status = state.FlowStatus(r.common())
	sum.CurrentStep = r.common()
	sum.StepNumber = int(r.int())
	sum.TotalSteps = int(r.int())
	sum.Round = int(r.int())
	sum.Driver = r.common()
	sum.ParentFlowID = r.str()
	sum.CreatedAt = r.time()
	sum.UpdatedAt = r.time()
	sum.Version = r.int()
	if r.byte() == 1 {
		g := &state.PendingGate{}
		g.StepID = r.common()
		g.Round = int(r.int())
		g.DispatchedAt = r.time()
		if r.byte() == 1 {
			d := r.time()
			g.Deadline = &d
		}
		g.OnTimeout = r.common()
		g.Approver = r.common()
		sum.Gate = g
	}
	if b[0] >= summaryCodecV2 && r.byte() == 1 {
		l := &state.Lease{}
		l.ID = r.str()
		l.PID = int(r.int())
		l.Host = r.common()
		l.Heartbeat = r.time()
		l.ExpiresAt = r.time()
		sum.Owner = l
	}
	if b[0] >= summaryCodecV3 && r.byte() == 1 {
		rv := &state.GateReview{}
		rv.Question = r.common()
		switch r.byte() {
		case 0:
		case 1:
			rv.Revise = true
		default:
			if r.err == nil {
				r.err = errors.New("bad revise flag in summary record")
			}
		}
		sum.Review = rv
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d trailing bytes in summary record", len(r.b))
	}
	return r.err
}

// Flow states and events are stored as the JSON encoding/json would write,
// encoded and decoded with github.com/segmentio/encoding/json, a drop-in
// replacement (same output, same decoding rules; the MCP SDK already
// depends on it) that decodes a flow state in about half the time. Both run
// inside the write transaction, on every transition.
func marshalJSON(v any) ([]byte, error) { return sjson.Marshal(v) }

func unmarshalJSON(data []byte, v any) error { return sjson.Unmarshal(data, v) }

// encodeEvent is an event as the log stores it: Event.AppendJSON (what
// Event.MarshalJSON writes) directly, without a JSON library's pass
// over the result.
func encodeEvent(ev *engine.Event) ([]byte, error) { return ev.AppendJSON(make([]byte, 0, 512)) }
