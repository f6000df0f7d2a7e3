package jsonlimit

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
		{"at-depth", nest(MaxDepth), false, false},
		{"too-deep", nest(MaxDepth + 1), true, false},
		{"objects", strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1), true, false},
		{"brackets-in-strings", `["` + strings.Repeat("[", 1000) + `"]`, false, false},
		{"escaped-quote", `["\"` + strings.Repeat("{", 1000) + `"]`, false, false},
		{"escaped-backslash", `["\\", ` + nest(MaxDepth) + `]`, true, false},
		{"at-size", `"` + strings.Repeat("a", MaxBytes-2) + `"`, false, false},
		{"too-big", `"` + strings.Repeat("a", MaxBytes-1) + `"`, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.data))
			var le *Error
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
	if _, err := Read(strings.NewReader(strings.Repeat(" ", MaxBytes+1))); err == nil {
		t.Fatal("Read accepted more than MaxBytes")
	}
	b, err := Read(strings.NewReader(`{"a": [1]}`))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := Decode(b, &v); err != nil || len(v) != 1 {
		t.Fatalf("Decode: %v, %v", v, err)
	}
	if err := Decode([]byte(strings.Repeat("[", 300)+strings.Repeat("]", 300)), &v); err == nil ||
		err.Error() != "JSON is nested deeper than 256 levels" {
		t.Fatalf("Decode of a deep document: %v", err)
	}
}

// FuzzCheckJSONLimits: for valid JSON, Check refuses exactly the
// documents nested deeper than MaxDepth (measured independently with the
// standard decoder's tokens), and it never panics on any input.
func FuzzCheckJSONLimits(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"]]]["}]}`, strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
		strings.Repeat(`{"k":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1), `"\\\"{{{"`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data)
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
		var le *Error
		tooDeep := errors.As(err, &le) && le.TooDeep
		if tooDeep != (deepest > MaxDepth) {
			t.Fatalf("depth %d, Check %v", deepest, err)
		}
	})
}
