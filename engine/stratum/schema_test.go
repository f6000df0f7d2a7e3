package stratum

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/internal/llm"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

type address struct {
	Street string  `json:"street" stratum:"minlen=1"`
	Zip    *string `json:"zip"`
}

type kitchenSink struct {
	Label    string            `json:"label" stratum:"enum=positive|negative|neutral"`
	Score    float64           `json:"score" stratum:"min=0,max=1"`
	Count    int               `json:"count,omitempty"` // omitempty: still required
	Summary  string            `json:"summary" stratum:"maxlen=500"`
	Tags     []string          `json:"tags" stratum:"minlen=1"`
	Note     *string           `json:"note"`
	Maybe    *[]int            `json:"maybe"`
	Raw      []byte            `json:"raw"`
	At       time.Time         `json:"at"`
	Home     address           `json:"home"`
	Previous []address         `json:"previous"`
	Extra    map[string]string `json:"extra"`
	Secret   string            `json:"secret" stratum:"opaque"`
	Level    *int              `json:"level" stratum:"enum=1|2|3"`
	skipped  int
	Ignored  string `json:"-"`
}

// Rule 2: the schema of Go types, and its strict projection as `stratum
// run` sends it, against golden files.
func TestSchemaGoldens(t *testing.T) {
	cases := map[string]func() (map[string]any, error){
		"kitchen_sink": SchemaFor[kitchenSink],
		"sentiment":    SchemaFor[sentiment],
		"string":       SchemaFor[string],
		"list":         SchemaFor[[]address],
	}
	for name, schemaOf := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := schemaOf()
			if err != nil {
				t.Fatal(err)
			}
			root, _ := llm.ObjectRoot(s)
			strict, ok := llm.StrictSchema(root)
			golden(t, name+".json", s)
			golden(t, name+".strict.json", map[string]any{"strict": ok, "schema": strict})
		})
	}
}

func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "schema", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s", name, got)
	}
}

// Rule 2: the rules the golden files show, stated.
func TestSchemaRules(t *testing.T) {
	s, err := SchemaFor[kitchenSink]()
	if err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	req := map[string]bool{}
	for _, r := range s["required"].([]any) {
		req[r.(string)] = true
	}
	for _, name := range []string{"label", "score", "count", "tags", "raw", "at", "home", "previous", "extra", "secret"} {
		if !req[name] {
			t.Errorf("%s not required", name)
		}
	}
	for _, name := range []string{"note", "maybe", "level"} {
		if req[name] {
			t.Errorf("%s (a pointer) required", name)
		}
	}
	if s["additionalProperties"] != false {
		t.Errorf("object open: %v", s["additionalProperties"])
	}
	if tags := props["tags"].(map[string]any); tags["type"] != "array" || tags["minItems"] != 1.0 {
		t.Errorf("tags %v", tags)
	}
	if raw := props["raw"].(map[string]any); raw["type"] != "string" || raw["contentEncoding"] != "base64" {
		t.Errorf("raw %v", raw)
	}
	if at := props["at"].(map[string]any); at["format"] != "date-time" {
		t.Errorf("at %v", at)
	}
	if _, ok := props["skipped"]; ok {
		t.Error("unexported field in the schema")
	}
	if _, ok := props["Ignored"]; ok {
		t.Error(`json:"-" field in the schema`)
	}
	type badEnum struct {
		On bool `json:"on" stratum:"enum=yes|no"`
	}
	if _, err := SchemaFor[badEnum](); !errors.As(err, new(*CompileError)) {
		t.Errorf("bad enum: %v", err)
	}
	if _, err := SchemaFor[chan int](); !errors.As(err, new(*CompileError)) {
		t.Errorf("chan: %v", err)
	}
}

// Outputs decode the JSON the schema describes, round trip included.
func TestSchemaAnswersDecode(t *testing.T) {
	fake := newFake(t, `{"label":"neutral","score":0.5,"count":0,"summary":"s","tags":["a"],"note":null,"maybe":null,"raw":"aGk=","at":"2026-01-02T03:04:05Z","home":{"street":"x","zip":null},"previous":[],"extra":{},"secret":"s","level":2}`)
	_, ctx := fake.runtime(t, Options{})
	out, err := MustInfer("sink", Spec[string, kitchenSink]{Intent: "Fill"}).Call(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Raw) != "hi" || out.At.Year() != 2026 || out.Level == nil || *out.Level != 2 || out.Note != nil {
		t.Fatalf("%+v", out)
	}
}

// wireTypes are the fields whose JSON is not what their Go kind says.
type wireTypes struct {
	Count   int64           `json:"count,string"`
	Ok      bool            `json:"ok,string"`
	Ratio   *float64        `json:"ratio,string"`
	Payload json.RawMessage `json:"payload"`
	Big     json.Number     `json:"big"`
	Huge    *big.Int        `json:"huge"`
	Wait    time.Duration   `json:"wait"`
	Any     any             `json:"any"`
}

// The schema says what encoding/json writes and reads: a ",string" field
// is a string holding the value (it was an integer, which the decoder
// refused: 4 requests, then a *ParseError), json.RawMessage any JSON value
// (it was an array of bytes), json.Number and *big.Int numbers (a string
// and a string before), time.Duration an integer of nanoseconds with a
// description saying so.
func TestSchemaWireTypes(t *testing.T) {
	s, err := SchemaFor[wireTypes]()
	if err != nil {
		t.Fatal(err)
	}
	root, _ := llm.ObjectRoot(s)
	strict, ok := llm.StrictSchema(root)
	golden(t, "wire_types.json", s)
	golden(t, "wire_types.strict.json", map[string]any{"strict": ok, "schema": strict})
}

// Answers of those types decode exactly: ",string" values, any JSON value
// for a json.RawMessage, integers above 2^53 (9007199254740993 came back
// …992) in json.Number, *big.Int and int64.
func TestWireTypesDecode(t *testing.T) {
	fake := newFake(t,
		`{"count":42,"ok":"true","ratio":null,"payload":{},"big":1,"huge":1,"wait":1,"any":null}`, // count is not a string: retried
		`{"count":"9007199254740993","ok":"true","ratio":"0.25","payload":{"any":[1,"two",null]},"big":12345678901234567890123,"huge":9007199254740993,"wait":1500000000,"any":{"x":1}}`)
	_, ctx := fake.runtime(t, Options{})
	out, err := MustInfer("wire", Spec[string, wireTypes]{Intent: "Fill"}).Call(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 9007199254740993 || !out.Ok || out.Ratio == nil || *out.Ratio != 0.25 || string(out.Payload) != `{"any":[1,"two",null]}` ||
		out.Big != "12345678901234567890123" || out.Huge.String() != "9007199254740993" || out.Wait != 1500*time.Millisecond {
		t.Fatalf("%+v", out)
	}
	if p := fake.requests(); len(p) != 2 || !strings.Contains(p[1], `at '/count': must be of type string but found integer 42`) {
		t.Fatalf("requests %q", p)
	}
	for _, payload := range []string{`[1,2]`, `"text"`, `3.5`, `null`} {
		fake := newFake(t, `{"count":"1","ok":"false","ratio":null,"payload":`+payload+`,"big":1,"huge":1,"wait":0,"any":1}`)
		_, ctx := fake.runtime(t, Options{})
		out, err := MustInfer("wire", Spec[string, wireTypes]{Intent: "Fill"}).Call(ctx, "x")
		if err != nil || string(out.Payload) != payload {
			t.Errorf("payload %s: %s, %v", payload, out.Payload, err)
		}
	}
}

// Integers above 2^53 reach the prompt with their digits
// (12345678901234567 was sent as …568).
func TestBigIntegerInputs(t *testing.T) {
	fake := newFake(t, `{"label":"positive","confidence":0.9}`)
	rt, ctx := fake.runtime(t, Options{})
	type order struct {
		ID    int64       `json:"id"`
		Total json.Number `json:"total"`
		Ref   uint64      `json:"ref,string"`
	}
	f := MustInfer("classify", Spec[order, sentiment]{Intent: "Classify the order"})
	if _, err := f.Call(ctx, order{ID: 12345678901234567, Total: "98765432109876543210", Ref: 18446744073709551615}); err != nil {
		t.Fatal(err)
	}
	want := "Inputs:\n  id: 12345678901234567\n  total: 98765432109876543210\n  ref: 18446744073709551615"
	if p := fake.requests()[0]; !strings.Contains(p, want) {
		t.Fatalf("prompt:\n%s\nwant:\n%s", p, want)
	}
	if in := rt.Trace()[0].Inputs.(map[string]any); in["id"] != json.Number("12345678901234567") {
		t.Errorf("trace inputs %#v", in)
	}
}

// Tags that no value can satisfy, or that bound what they cannot, are
// refused at definition (min=5,max=1 was accepted).
func TestContradictoryTagsRefused(t *testing.T) {
	type minMax struct {
		N int `json:"n" stratum:"min=5,max=1"`
	}
	type lens struct {
		S string `json:"s" stratum:"minlen=3,maxlen=1"`
	}
	type minOnString struct {
		S string `json:"s" stratum:"min=1"`
	}
	type lenOnNumber struct {
		N float64 `json:"n" stratum:"maxlen=3"`
	}
	type enumOutside struct {
		N int `json:"n" stratum:"enum=1|2|9,max=5"`
	}
	type enumTooLong struct {
		S string `json:"s" stratum:"enum=ok|toolong,maxlen=3"`
	}
	type twice struct {
		N int `json:"n" stratum:"min=1,min=2"`
	}
	type quoted struct {
		N int `json:"n,string" stratum:"min=1"`
	}
	for name, def := range map[string]func() error{
		"min=5,max=1":        func() error { _, err := NewInfer("f", Spec[string, minMax]{Intent: "x"}); return err },
		"minlen=3,maxlen=1":  func() error { _, err := NewInfer("f", Spec[string, lens]{Intent: "x"}); return err },
		"min on a string":    func() error { _, err := NewInfer("f", Spec[string, minOnString]{Intent: "x"}); return err },
		"maxlen on a number": func() error { _, err := NewInfer("f", Spec[string, lenOnNumber]{Intent: "x"}); return err },
		"enum above max":     func() error { _, err := NewInfer("f", Spec[string, enumOutside]{Intent: "x"}); return err },
		"enum over maxlen":   func() error { _, err := NewInfer("f", Spec[string, enumTooLong]{Intent: "x"}); return err },
		"min given twice":    func() error { _, err := NewInfer("f", Spec[string, twice]{Intent: "x"}); return err },
		"bounds on ,string":  func() error { _, err := NewInfer("f", Spec[string, quoted]{Intent: "x"}); return err },
		"input min=5,max=1":  func() error { _, err := NewInfer("f", Spec[minMax, string]{Intent: "x"}); return err },
	} {
		err := def()
		var ce *CompileError
		if !errors.As(err, &ce) || ce.Function != "f" {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}
