package infer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sjson "github.com/segmentio/encoding/json"
)

// ExtractJSON parses a model's answer. A clean JSON document is returned as
// is; otherwise the JSON inside a ``` code fence, or the first balanced
// object or array in surrounding prose, is used (trailing commas before a
// closing bracket are removed too), and repaired is true. Types are never
// coerced: a repaired value that does not fit the schema is a schema
// violation for the engine to report.
func ExtractJSON(answer string) (v any, repaired bool, err error) {
	return extractJSON(answer, false)
}

// extractJSON is ExtractJSON; exact decodes numbers as json.Number (their
// digits as written: an integer above 2^53 keeps its value).
func extractJSON(answer string, exact bool) (v any, repaired bool, err error) {
	s := strings.TrimSpace(answer)
	if s == "" {
		return nil, false, errors.New("the answer is empty (expected a JSON object)")
	}
	unmarshal := json.Unmarshal
	if exact {
		unmarshal = unmarshalExact
	}
	firstErr := unmarshal([]byte(s), &v)
	if firstErr == nil {
		return v, false, nil
	}
	var candidates []string
	if f, ok := fenced(s); ok {
		candidates = append(candidates, f)
	}
	if b, ok := balanced(s); ok {
		candidates = append(candidates, b)
	}
	for _, c := range candidates {
		for _, text := range []string{c, stripTrailingCommas(c)} {
			var out any
			if unmarshal([]byte(text), &out) == nil {
				return out, true, nil
			}
		}
	}
	return nil, false, fmt.Errorf("the answer is not valid JSON (%v); answer begins: %q", firstErr, preview(s, 120))
}

// unmarshalExact is json.Unmarshal with numbers as json.Number (v is a
// *any).
func unmarshalExact(b []byte, v any) error {
	if !json.Valid(b) {
		return json.Unmarshal(b, v) // its error
	}
	out, err := DecodeExact(b)
	if err == nil {
		*v.(*any) = out
	}
	return err
}

// DecodeExact decodes one JSON document into JSON values (maps, slices,
// strings, bools, nil) with its numbers as json.Number, the digits as
// written, exactly as encoding/json's Decoder with UseNumber does. A valid
// document (json.Valid: the answers and encodings of the hot path) is
// parsed by github.com/segmentio/encoding/json, a drop-in replacement that
// gives the same values (TestDecodeExactAsEncodingJSON) with a third of
// the allocations; any other goes to encoding/json for its error, and
// data after the value is an error.
func DecodeExact(b []byte) (any, error) {
	if json.Valid(b) {
		var v any
		if _, err := sjson.Parse(b, &v, sjson.UseNumber); err == nil {
			return v, nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("invalid JSON: data after the value")
	}
	return v, nil
}

func preview(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// fenced returns the content of the first ``` fence.
func fenced(s string) (string, bool) {
	i := strings.Index(s, "```")
	if i < 0 {
		return "", false
	}
	rest := s[i+3:]
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 && !strings.ContainsAny(rest[:nl], "{[") {
		rest = rest[nl+1:] // skip the info string (```json)
	}
	j := strings.Index(rest, "```")
	if j < 0 {
		return strings.TrimSpace(rest), true
	}
	return strings.TrimSpace(rest[:j]), true
}

// balanced returns the first balanced {...} or [...] in s, respecting
// strings.
func balanced(s string) (string, bool) {
	start := strings.IndexAny(s, "{[")
	for start >= 0 {
		depth, inStr, esc := 0, false, false
		for i := start; i < len(s); i++ {
			c := s[i]
			if inStr {
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					inStr = false
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return s[start : i+1], true
				}
			}
		}
		next := strings.IndexAny(s[start+1:], "{[")
		if next < 0 {
			break
		}
		start += 1 + next
	}
	return "", false
}

// stripTrailingCommas removes a comma directly (modulo whitespace) before }
// or ], outside strings.
func stripTrailingCommas(s string) string {
	var b strings.Builder
	inStr, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			b.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
		}
		if c == ',' {
			j := i + 1
			for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}
