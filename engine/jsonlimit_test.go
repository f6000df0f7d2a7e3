package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckJSONLimits(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name    string
		data    string
		tooDeep bool
		tooBig  bool
	}{
		{"scalar", `1`, false, false},
		{"at-depth", nest(MaxJSONDepth), false, false},
		{"too-deep", nest(MaxJSONDepth + 1), true, false},
		{"objects", strings.Repeat(`{"a":`, MaxJSONDepth+1) + "1" + strings.Repeat("}", MaxJSONDepth+1), true, false},
		{"brackets-in-strings", `["` + strings.Repeat("[", 1000) + `"]`, false, false},
		{"escaped-quote", `["\"` + strings.Repeat("{", 1000) + `"]`, false, false},
		{"escaped-backslash", `["\\", ` + nest(MaxJSONDepth) + `]`, true, false},
		{"at-size", `"` + strings.Repeat("a", MaxJSONBytes-2) + `"`, false, false},
		{"too-big", `"` + strings.Repeat("a", MaxJSONBytes-1) + `"`, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckJSONLimits([]byte(tt.data))
			var le *JSONLimitError
			switch {
			case !tt.tooDeep && !tt.tooBig:
				if err != nil {
					t.Fatalf("got %v", err)
				}
			case !errors.As(err, &le) || le.TooDeep != tt.tooDeep:
				t.Fatalf("got %v, want a limit error (too deep %v)", err, tt.tooDeep)
			}
		})
	}
}

func TestReadAndDecodeJSON(t *testing.T) {
	if _, err := ReadJSON(strings.NewReader(strings.Repeat(" ", MaxJSONBytes+1))); err == nil {
		t.Fatal("ReadJSON accepted more than MaxJSONBytes")
	}
	b, err := ReadJSON(strings.NewReader(`{"a": [1]}`))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := DecodeJSON(b, &v); err != nil || len(v) != 1 {
		t.Fatalf("DecodeJSON: %v, %v", v, err)
	}
	if err := DecodeJSON([]byte(strings.Repeat("[", 300)+strings.Repeat("]", 300)), &v); err == nil ||
		err.Error() != "JSON is nested deeper than 256 levels" {
		t.Fatalf("DecodeJSON of a deep document: %v", err)
	}
}

// FuzzCheckJSONLimits: for valid JSON, CheckJSONLimits refuses exactly the
// documents nested deeper than MaxJSONDepth (measured independently with the
// standard decoder's tokens), and it never panics on any input.
func FuzzCheckJSONLimits(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"]]]["}]}`, strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth),
		strings.Repeat(`{"k":`, MaxJSONDepth+1) + "1" + strings.Repeat("}", MaxJSONDepth+1), `"\\\"{{{"`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckJSONLimits(data)
		if !json.Valid(data) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		depth, deepest := 0, 0
		for {
			tok, terr := dec.Token()
			if terr != nil {
				break
			}
			switch tok {
			case json.Delim('['), json.Delim('{'):
				depth++
				deepest = max(deepest, depth)
			case json.Delim(']'), json.Delim('}'):
				depth--
			}
		}
		var le *JSONLimitError
		tooDeep := errors.As(err, &le) && le.TooDeep
		if tooDeep != (deepest > MaxJSONDepth) {
			t.Fatalf("depth %d, CheckJSONLimits %v", deepest, err)
		}
	})
}
