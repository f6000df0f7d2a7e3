package infer

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// DecodeExact gives what encoding/json's Decoder with UseNumber gives, value
// for value and error for error, on valid documents (the fast path) and
// invalid ones (encoding/json's own path).
func TestDecodeExactAsEncodingJSON(t *testing.T) {
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	docs := []string{
		`{"label":"positive","confidence":0.9}`,
		`{"n":12345678901234567890123,"f":-0.000e+10,"e":1E400,"z":0,"neg":-0}`,
		`{"a":1,"a":2}`,
		`{"s":"tab\tnew\nline \"q\" \\ \/ \u00e9 \ud83d\ude00 \u2028"}`,
		`{"lone":"\ud800 x \udc00","bad":"\ud83d\u0041"}`,
		`{"html":"<b>&amp;</b>","utf8":"ünï ☃ 😀"}`,
		`[1,"x",true,false,null,{},[],{"k":[{"k":{}}]}]`,
		`  {"ws" :  [ 1 , 2 ] }  `,
		`"just a string"`, `42`, `true`, `null`,
		`{"":"empty key","ключ":"значение"}`,
		deep,
		// invalid: encoding/json's errors
		`{"a":1,}`, `{"a":1} x`, `{"a":1}{}`, `{'a':1}`, ``, `{"a":01}`, "{\"a\":\"\x00\"}", `[1,2`,
	}
	for _, d := range docs {
		got, gotErr := DecodeExact([]byte(d))
		dec := json.NewDecoder(bytes.NewReader([]byte(d)))
		dec.UseNumber()
		var want any
		wantErr := dec.Decode(&want)
		if wantErr == nil && dec.More() {
			wantErr = errDataAfter
		}
		switch {
		case (gotErr == nil) != (wantErr == nil):
			t.Errorf("%.60q: error %v, encoding/json %v", d, gotErr, wantErr)
		case gotErr != nil && gotErr.Error() != wantErr.Error():
			t.Errorf("%.60q: error %q, encoding/json %q", d, gotErr, wantErr)
		case gotErr == nil && !reflect.DeepEqual(got, want):
			t.Errorf("%.60q: %#v, encoding/json %#v", d, got, want)
		}
	}
}

var errDataAfter = &dataAfter{}

type dataAfter struct{}

func (*dataAfter) Error() string { return "invalid JSON: data after the value" }

// FuzzDecodeExact: any input decodes as encoding/json decodes it.
func FuzzDecodeExact(f *testing.F) {
	for _, s := range []string{`{"a":1.50,"b":[true,null,"x\u00e9"]}`, `"\ud800"`, `[1e999]`, `{"a":1}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gotErr := DecodeExact(b)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var want any
		wantErr := dec.Decode(&want)
		if wantErr == nil && dec.More() {
			wantErr = errDataAfter
		}
		if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
			t.Fatalf("%q: %#v %v, encoding/json %#v %v", b, got, gotErr, want, wantErr)
		}
	})
}
