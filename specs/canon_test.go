package specs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
	type pair struct {
		B int    `json:"b"`
		A string `json:"a"`
	}
	// Expected strings were produced by CPython 3:
	// json.dumps(v, sort_keys=True, separators=(',', ':')).
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"null", nil, `null`},
		{"bools", []any{true, false}, `[true,false]`},
		{"ints", []any{0, -1, int8(-8), int16(16), int32(32), int64(1) << 62, uint(7), uint8(8), uint16(16), uint32(32), uint64(math.MaxUint64)},
			`[0,-1,-8,16,32,4611686018427387904,7,8,16,32,18446744073709551615]`},
		{"float integral keeps .0", 1.0, `1.0`},
		{"float 100", 100.0, `100.0`},
		{"float half", 1.5, `1.5`},
		{"float tenth", 0.1, `0.1`},
		{"float third", 1.0 / 3, `0.3333333333333333`},
		{"float 1e15 positional", 1e15, `1000000000000000.0`},
		{"float 1e16 exponent", 1e16, `1e+16`},
		{"float 1e22", 1e22, `1e+22`},
		{"float big mantissa", 123456789012345680.0, `1.2345678901234568e+17`},
		{"float 1e-4 positional", 0.0001, `0.0001`},
		{"float 1e-5 exponent", 0.00001, `1e-05`},
		{"float 2.5e-5", 2.5e-5, `2.5e-05`},
		{"float 1.5e-7", 1.5e-7, `1.5e-07`},
		{"float negative tiny", -1e-10, `-1e-10`},
		{"float negative zero", math.Copysign(0, -1), `-0.0`},
		{"float denormal", 5e-324, `5e-324`},
		{"float max", math.MaxFloat64, `1.7976931348623157e+308`},
		{"float 12345.678", 12345.678, `12345.678`},
		{"float32", float32(0.5), `0.5`},
		{"NaN", math.NaN(), `NaN`},
		{"+Inf", math.Inf(1), `Infinity`},
		{"-Inf", math.Inf(-1), `-Infinity`},
		{"json.Number int", json.Number("42"), `42`},
		{"json.Number negative zero int", json.Number("-0"), `0`},
		{"json.Number big int", json.Number("123456789012345678901234567890"), `123456789012345678901234567890`},
		{"json.Number float", json.Number("1.0"), `1.0`},
		{"json.Number exponent", json.Number("1e2"), `100.0`},
		{"json.Number huge float", json.Number("1e400"), `Infinity`},
		{"sorted keys, nested", map[string]any{"b": 1, "a": []any{1.0, 2.5, nil, true, "é"}},
			`{"a":[1.0,2.5,null,true,"\u00e9"],"b":1}`},
		{"key order is code point order", map[string]any{"é": 1, "z": 2, "A": 3, "a": 4, "😀": 5, "\uffff": 6},
			`{"A":3,"a":4,"z":2,"\u00e9":1,"\uffff":6,"\ud83d\ude00":5}`},
		{"string escapes", []any{"😀", "\x01\x7f</>&\"\\\n\t\r\b\f/", "ü中"},
			`["\ud83d\ude00","\u0001\u007f</>&\"\\\n\t\r\b\f/","\u00fc\u4e2d"]`},
		{"invalid utf-8 becomes U+FFFD", "a\xffb", `"a\ufffdb"`},
		{"map[any]any keys", map[any]any{1: "a", "b": 2, true: nil, 2.5: 0}, `{"1":"a","2.5":0,"b":2,"true":null}`},
		{"typed slice", []string{"x", "y"}, `["x","y"]`},
		{"typed map", map[string]float64{"x": 1}, `{"x":1.0}`},
		{"struct via json", pair{B: 2, A: "q"}, `{"a":"q","b":2}`},
		{"nil typed map", map[string]int(nil), `null`},
		{"pointer", &pair{B: 1}, `{"a":"","b":1}`},
		{"deep nesting", map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": 1, "B": 2}}}}, `{"a":{"b":[{"B":2,"c":1}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalJSON(tt.in)
			if err != nil {
				t.Fatalf("CanonicalJSON: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("CanonicalJSON(%#v)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonicalJSONErrors(t *testing.T) {
	for _, in := range []any{
		json.Number("1x"),
		map[any]any{[2]int{1, 2}: 1},
		make(chan int),
		func() {},
	} {
		if got, err := CanonicalJSON(in); err == nil {
			t.Errorf("CanonicalJSON(%T) = %s, want an error", in, got)
		}
	}
	// A cyclic value must fail, not recurse forever.
	cyc := map[string]any{}
	cyc["self"] = cyc
	if _, err := CanonicalJSON(cyc); err == nil {
		t.Error("cyclic value: want an error")
	}
}

func TestHash12(t *testing.T) {
	b := []byte(`{"a":1}`)
	sum := sha256.Sum256(b)
	want := hex.EncodeToString(sum[:])[:12]
	if got := Hash12(b); got != want || len(got) != 12 {
		t.Errorf("Hash12 = %q, want %q", got, want)
	}
	if Hash12([]byte("x")) == Hash12([]byte("y")) {
		t.Error("different input, same hash")
	}
}

func BenchmarkCanonicalJSON(b *testing.B) {
	v := map[string]any{"type": "object", "properties": map[string]any{
		"a": map[string]any{"type": "number", "minimum": 0, "maximum": 1.0},
		"b": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}, "required": []any{"a", "b"}}
	for b.Loop() {
		if _, err := CanonicalJSON(v); err != nil {
			b.Fatal(err)
		}
	}
}
