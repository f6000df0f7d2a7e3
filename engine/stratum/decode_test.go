package stratum

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type decodeInner struct {
	N int `json:"n"`
}

// decodeTarget has a field of each kind an Out may have.
type decodeTarget struct {
	Int     int             `json:"int"`
	Int8    int8            `json:"int8"`
	Uint    uint            `json:"uint"`
	F32     float32         `json:"f32"`
	F64     float64         `json:"f64"`
	S       string          `json:"s"`
	B       bool            `json:"b"`
	Ptr     *decodeInner    `json:"ptr"`
	List    []decodeInner   `json:"list"`
	Arr     [2]int          `json:"arr"`
	Map     map[string]int  `json:"map"`
	IntKeys map[int]string  `json:"int_keys"`
	Any     any             `json:"any"`
	Raw     json.RawMessage `json:"raw"`
	Bytes   []byte          `json:"bytes"`
	When    time.Time       `json:"when"`
	Quoted  int             `json:"quoted,string"`
	Num     json.Number     `json:"num"`
	Omit    string          `json:"omit,omitempty"`
	Skip    string          `json:"-"`
	decodeInner
	Nested map[string][]bool `json:"nested"`
}

// decodeAs gives what encoding/json gives (value and error) for a
// decoded answer, whichever library decodes it.
func TestDecodeAsEncodingJSON(t *testing.T) {
	docs := []string{
		`{"int":1,"int8":-8,"uint":7,"f32":0.1,"f64":1e-7,"s":"é\u2028<>","b":true,"ptr":{"n":2},"list":[{"n":1}],"arr":[1,2],"map":{"a":1},"int_keys":{"1":"x"},"any":{"x":[1,"y",null]},"raw":{"a":[1]},"bytes":"aGk=","when":"2026-12-05T03:00:00Z","quoted":"12","num":1.50,"n":9,"nested":{"k":[true]}}`,
		`{"INT":3,"Int8":4,"S":"case"}`,
		`{"int":1.0}`, `{"int":1e2}`, `{"int8":300}`, `{"uint":-1}`, `{"int":12345678901234567890}`,
		`{"f32":1e39}`, `{"f64":1e400}`, `{"arr":[1,2,3]}`, `{"arr":[1]}`,
		`{"quoted":12}`, `{"quoted":"x"}`, `{"bytes":"not base64!"}`, `{"when":"yesterday"}`,
		`{"int_keys":{"x":"y"}}`, `{"ptr":null,"list":null,"map":null,"s":null,"int":null}`,
		`{"s":1}`, `{"b":"true"}`, `{"list":{}}`, `{"map":[]}`, `{"any":1.5}`, `{"num":"12"}`, `{"num":"x"}`,
		`{"unknown":1,"-":"dash","Skip":"s"}`, `[]`, `"str"`, `null`, `12`,
	}
	for _, d := range docs {
		var v any
		dec := json.NewDecoder(bytes.NewReader([]byte(d)))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		compareDecode(t, d, v)
	}
}

func compareDecode(t *testing.T, doc string, v any) {
	t.Helper()
	var got, want decodeTarget
	gotErr := decodeAs(v, &got)
	b, wantErr := json.Marshal(v)
	if wantErr == nil {
		wantErr = json.Unmarshal(b, &want)
	}
	switch {
	case (gotErr == nil) != (wantErr == nil):
		t.Errorf("%.80s: error %v, encoding/json %v", doc, gotErr, wantErr)
	case gotErr != nil && gotErr.Error() != wantErr.Error():
		t.Errorf("%.80s: error %q, encoding/json %q", doc, gotErr, wantErr)
	case !reflect.DeepEqual(got, want):
		t.Errorf("%.80s:\n got  %+v\n want %+v", doc, got, want)
	}
}

// FuzzDecodeAs: any answer decodes into Out as encoding/json decodes it.
func FuzzDecodeAs(f *testing.F) {
	for _, s := range []string{`{"int":1,"list":[{"n":2}],"any":{"a":null}}`, `{"int8":1e1,"quoted":"7"}`, `{"when":"2026-01-02T00:00:00Z","bytes":"AA=="}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			return
		}
		compareDecode(t, string(b), v)
	})
}
