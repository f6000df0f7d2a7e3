package state

import (
	"encoding/json"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"
)

// MarshalJSON writes a record with exactly the keys of its type in the
// original (StepRecord, GateRecord, SkipRecord, PolicyRecord: every key
// present, null where unset, as Python's dataclass asdict does), plus ours
// (channel, reviewer, at, cache fields, reverted) only when set. Decoding uses the
// struct tags, so records written either way read back the same.
func (r Record) MarshalJSON() ([]byte, error) {
	// The fields of its type, then ours when set, written in the key order
	// encoding/json gives a map (sorted), with its string escaping: the
	// same bytes as marshalling a map of them, without building one (a
	// state's records are re-encoded on every write).
	f := make(recordFields, 0, 16)
	f = append(f, recordField{"type", jsonString(r.Type)}, recordField{"step_id", jsonString(r.StepID)},
		recordField{"round", jsonInt(int64(r.Round))}, recordField{"round_start_step_id", jsonStringPtr(r.RoundStartStepID)})
	switch r.Type {
	case RecordStep:
		f = append(f, recordField{"function_name", jsonString(r.FunctionName)}, recordField{"attempts", jsonInt(int64(r.Attempts))},
			recordField{"duration_ms", jsonInt(r.DurationMS)}, recordField{"agent", jsonStringPtr(r.Agent)},
			recordField{"step_mode", jsonString(r.StepMode)}, recordField{"child_flow_id", jsonStringPtr(r.ChildFlowID)})
		if r.CacheHit || r.CacheKey != "" {
			f = append(f, recordField{"cache_hit", jsonBool(r.CacheHit)}, recordField{"cache_key", jsonString(r.CacheKey)})
		}
	case RecordGate:
		f = append(f, recordField{"outcome", jsonString(r.Outcome)}, recordField{"rationale", jsonString(r.Rationale)},
			recordField{"resolved_by", jsonString(r.ResolvedBy)}, recordField{"duration_ms", jsonInt(r.DurationMS)})
	case RecordSkip:
		f = append(f, recordField{"skip_reason", jsonString(r.SkipReason)})
	case RecordPolicy:
		f = append(f, recordField{"effective_policy", jsonString(r.EffectivePolicy)},
			recordField{"resolved_outcome", jsonString(r.ResolvedOutcome)}, recordField{"rationale", jsonString(r.Rationale)})
	default:
		// An unknown type: keep every field that is set.
		type plain Record
		return json.Marshal(plain(r))
	}
	if r.Channel != "" {
		f = append(f, recordField{"channel", jsonString(r.Channel)})
	}
	if r.Reviewer != "" {
		f = append(f, recordField{"reviewer", jsonString(r.Reviewer)})
	}
	if !r.At.IsZero() {
		f = append(f, recordField{"at", jsonString(r.At.Format(time.RFC3339Nano))})
	}
	if r.Reverted {
		f = append(f, recordField{"reverted", jsonBool(true)})
	}
	sort.Sort(f)
	b := make([]byte, 0, 256)
	b = append(b, '{')
	for i, kv := range f {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, kv.key)
		b = append(b, ':')
		b = kv.val(b)
	}
	return append(b, '}'), nil
}

// recordField is one key of a record and how to append its value.
type recordField struct {
	key string
	val func([]byte) []byte
}

type recordFields []recordField

func (f recordFields) Len() int           { return len(f) }
func (f recordFields) Less(i, j int) bool { return f[i].key < f[j].key }
func (f recordFields) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }

func jsonString(s string) func([]byte) []byte {
	return func(b []byte) []byte { return AppendJSONString(b, s) }
}

func jsonStringPtr(s *string) func([]byte) []byte {
	return func(b []byte) []byte {
		if s == nil {
			return append(b, "null"...)
		}
		return AppendJSONString(b, *s)
	}
}

func jsonInt(n int64) func([]byte) []byte {
	return func(b []byte) []byte { return strconv.AppendInt(b, n, 10) }
}

func jsonBool(v bool) func([]byte) []byte {
	return func(b []byte) []byte { return strconv.AppendBool(b, v) }
}

// AppendJSONString appends s as encoding/json writes a string: quoted,
// with its escaping of control characters, quotes and backslashes, HTML's
// <, > and &, U+2028 and U+2029, and invalid UTF-8 as U+FFFD.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
