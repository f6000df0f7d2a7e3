package clijson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// WriteFlows writes `stratum query flows` to w: the JSON of Flows(list,
// now) exactly as the CLI's encoder prints a value (encoding/json, indented
// by two spaces, HTML left unescaped, a final newline), byte for byte, but
// entry by entry through a buffer: nothing holds the whole document, and
// nothing re-scans it to indent it. Flat fields are appended directly;
// strings that need escaping, times and the nested gate and owner objects
// go through encoding/json, so every value is written as the encoder
// writes it. At 100,000 flows this is several times faster than encoding
// Flows' slice, and its memory does not grow with the list.
func WriteFlows(w io.Writer, list []state.FlowSummary, now time.Time) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if len(list) == 0 {
		_, _ = bw.WriteString("[]\n")
		return bw.Flush()
	}
	e := newEntryWriter()
	_, _ = bw.WriteString("[\n")
	for i, sum := range list {
		e.buf = e.buf[:0]
		if i > 0 {
			e.buf = append(e.buf, ",\n"...)
		}
		if err := e.flowEntry(flowEntry(sum, now)); err != nil {
			return err
		}
		if _, err := bw.Write(e.buf); err != nil {
			return err
		}
	}
	_, _ = bw.WriteString("\n]\n")
	return bw.Flush()
}

// entryWriter appends one element of the indented list (at depth 1) to buf.
type entryWriter struct {
	buf     []byte
	scratch bytes.Buffer // encoding/json's output for a value it writes
	indent  bytes.Buffer
	enc     *json.Encoder
}

func newEntryWriter() *entryWriter {
	e := &entryWriter{}
	e.enc = json.NewEncoder(&e.scratch)
	e.enc.SetEscapeHTML(false)
	return e
}

// field starts a field of the entry: the separator, the indentation and
// the key (keys are ours: plain ASCII).
func (e *entryWriter) field(first bool, key string) {
	if !first {
		e.buf = append(e.buf, ',')
	}
	e.buf = append(e.buf, "\n    \""...)
	e.buf = append(e.buf, key...)
	e.buf = append(e.buf, "\": "...)
}

// encoded appends v as encoding/json writes it at depth 2 of the document.
func (e *entryWriter) encoded(v any) error {
	e.scratch.Reset()
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	compact := bytes.TrimSuffix(e.scratch.Bytes(), []byte("\n"))
	e.indent.Reset()
	if err := json.Indent(&e.indent, compact, "    ", "  "); err != nil {
		return err
	}
	e.buf = append(e.buf, e.indent.Bytes()...)
	return nil
}

// str appends s as a JSON string: directly when it is printable ASCII
// without a quote or backslash (nothing to escape), else as encoding/json
// escapes it.
func (e *entryWriter) str(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return e.encoded(s)
		}
	}
	e.buf = append(e.buf, '"')
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, '"')
	return nil
}

func (e *entryWriter) optStr(s *string) error {
	if s == nil {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	return e.str(*s)
}

func (e *entryWriter) time(t time.Time) error {
	b, err := t.MarshalJSON()
	if err != nil {
		return e.encoded(t) // encoding/json's own error for this time
	}
	e.buf = append(e.buf, b...)
	return nil
}

func (e *entryWriter) int(n int64) { e.buf = strconv.AppendInt(e.buf, n, 10) }

// flowEntry appends f in FlowEntry's field order: its own first field, the
// embedded summary's fields (but current_step_id, which FlowEntry shadows),
// then its own.
func (e *entryWriter) flowEntry(f FlowEntry) error {
	s := &f.FlowSummary
	e.buf = append(e.buf, "  {"...)
	e.field(true, "_schema_version")
	if err := e.str(f.SchemaVersion); err != nil {
		return err
	}
	for _, kv := range [...]struct{ key, val string }{{"flow_id", s.FlowID}, {"flow_name", s.FlowName}, {"status", string(s.Status)}} {
		e.field(false, kv.key)
		if err := e.str(kv.val); err != nil {
			return err
		}
	}
	e.field(false, "step_number")
	e.int(int64(s.StepNumber))
	e.field(false, "total_steps")
	e.int(int64(s.TotalSteps))
	e.field(false, "round")
	e.int(int64(s.Round))
	for _, kv := range [...]struct{ key, val string }{{"driver", s.Driver}, {"parent_flow_id", s.ParentFlowID}} {
		if kv.val == "" {
			continue
		}
		e.field(false, kv.key)
		if err := e.str(kv.val); err != nil {
			return err
		}
	}
	if s.Gate != nil {
		e.field(false, "gate")
		if err := e.encoded(s.Gate); err != nil {
			return err
		}
	}
	if s.Owner != nil {
		e.field(false, "owner")
		if err := e.encoded(s.Owner); err != nil {
			return err
		}
	}
	e.field(false, "created_at")
	if err := e.time(s.CreatedAt); err != nil {
		return err
	}
	e.field(false, "updated_at")
	if err := e.time(s.UpdatedAt); err != nil {
		return err
	}
	e.field(false, "version")
	e.int(s.Version)
	e.field(false, "current_step_id")
	if err := e.optStr(f.CurrentStepID); err != nil {
		return err
	}
	e.field(false, "step_count")
	e.int(int64(f.StepCount))
	e.field(false, "completed_steps")
	e.int(int64(f.CompletedSteps))
	e.field(false, "terminal_status")
	if err := e.optStr(f.TerminalStatus); err != nil {
		return err
	}
	if f.Stalled {
		e.field(false, "stalled")
		e.buf = append(e.buf, "true"...)
	}
	e.buf = append(e.buf, "\n  }"...)
	return nil
}
