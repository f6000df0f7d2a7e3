package py

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// The expected values were produced by CPython 3.11 (repr()); the printable
// set is the Unicode 15.0 of Go's tables, which CPython 3.12 shares (3.11
// still escapes the characters Unicode 15.0 added).
func TestReprString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `''`},
		{"plain", `'plain'`},
		{"it's", `"it's"`},                       // a single quote and no double quote: double quotes
		{`say "hi"`, `'say "hi"'`},               // double quotes alone need no escape
		{`both ' and "`, `'both \' and "'`},      // both: single quotes, the single one escaped
		{`'"'`, `'\'"\''`},                       //
		{`back\slash`, `'back\\slash'`},          //
		{"tab\tnl\nlf\rcr", `'tab\tnl\nlf\rcr'`}, // the three named escapes
		{"\x00\x1f\x7f", `'\x00\x1f\x7f'`},       // other C0 controls and DEL
		{"\x1b[0m", `'\x1b[0m'`},
		{"\u0080\u009f", `'\x80\x9f'`},     // C1 controls
		{"\u00a0", `'\xa0'`},               // no-break space (Zs)
		{"\u00ad", `'\xad'`},               // soft hyphen (Cf)
		{"é ÿ ¡", `'é ÿ ¡'`},               // printable Latin-1 is kept
		{"\u0378", `'\u0378'`},             // unassigned (Cn)
		{"\u2028\u2029", `'\u2028\u2029'`}, // line and paragraph separators (Zl, Zp)
		{"\u200b", `'\u200b'`},             // zero-width space (Cf)
		{"\ufeff", `'\ufeff'`},             // byte order mark (Cf)
		{"\u3000", `'\u3000'`},             // ideographic space (Zs)
		{"\ue000", `'\ue000'`},             // private use (Co)
		{"\ufffd", "'\ufffd'"},             // the replacement character is printable
		{"中文", `'中文'`},
		{"e\u0301", "'e\u0301'"},       // combining marks are printable
		{"😀", `'😀'`},                   // astral printable
		{"\U000e0001", `'\U000e0001'`}, // astral format character (Cf)
		{"\U0010ffff", `'\U0010ffff'`}, // noncharacter (Cn)
		// Not valid UTF-8, which a Python str cannot hold: each byte is
		// shown as in a bytes repr. An encoded surrogate (ED A0 80) is
		// three invalid bytes in Go.
		{"a\xffb", `'a\xffb'`},
		{"\xc3", `'\xc3'`},
		{"\xed\xa0\x80", `'\xed\xa0\x80'`},
	}
	for _, tt := range tests {
		if got := ReprString(tt.in); got != tt.want {
			t.Errorf("ReprString(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestReprStrings(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{nil, `[]`},
		{[]string{"a"}, `['a']`},
		{[]string{"a", "it's", "x\ny"}, `['a', "it's", 'x\ny']`},
	} {
		if got := ReprStrings(tt.in); got != tt.want {
			t.Errorf("ReprStrings(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestReprFloat(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want string
	}{
		{1, "1.0"}, {0.1, "0.1"}, {1.5e16, "1.5e+16"}, {1e15, "1000000000000000.0"}, {1e-5, "1e-05"},
		{123.456, "123.456"}, {math.Inf(-1), "-inf"}, {-0.5, "-0.5"},
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {100, "100.0"}, {1e16, "1e+16"}, {1e22, "1e+22"},
		{1e-4, "0.0001"}, {2.5e-5, "2.5e-05"}, {1.0 / 3, "0.3333333333333333"},
		{123456789012345680.0, "1.2345678901234568e+17"}, {9007199254740993.0, "9007199254740992.0"},
		{5e-324, "5e-324"}, {math.MaxFloat64, "1.7976931348623157e+308"},
		{math.Inf(1), "inf"}, {math.NaN(), "nan"},
	} {
		if got := ReprFloat(tt.in); got != tt.want {
			t.Errorf("ReprFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReprFloat32(t *testing.T) {
	for _, tt := range []struct {
		in   float32
		want string
	}{
		{0.5, "0.5"}, {0.1, "0.1"}, {1.0 / 3, "0.33333334"}, {16777216, "16777216.0"},
		{1e-7, "1e-07"}, {math.MaxFloat32, "3.4028235e+38"}, {float32(math.Inf(-1)), "-inf"},
	} {
		if got := ReprFloat32(tt.in); got != tt.want {
			t.Errorf("ReprFloat32(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRepr(t *testing.T) {
	for _, tt := range []struct {
		in   any
		want string
	}{
		{nil, "None"},
		{true, "True"},
		{4.0, "4.0"},
		{int64(4), "4"},
		{0.5, "0.5"},
		{json.Number("12"), "12"},
		{[]any{"a", 1, nil, []string{"it's"}}, `['a', 1, None, ["it's"]]`},
		{map[string]any{"b": 1, "a": map[string]int{"x": 2}}, `{'a': {'x': 2}, 'b': 1}`},
	} {
		got, err := Repr(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Repr(%#v) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	var deep any = 1
	for range maxDepth + 1 {
		deep = []any{deep}
	}
	if _, err := Repr(deep); err != errTooDeep {
		t.Errorf("deep value: %v", err)
	}
	if _, err := Repr([]any{strings.Repeat("x", maxBuilt), "y"}); err != errTooLarge {
		t.Errorf("huge value: %v", err)
	}
}
