package run

import (
	"reflect"
	"testing"

	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// TestCoerceInputs: a --input value is read as the type the spec declares:
// text for a string input (7, 1.10, true and null stay as typed), JSON
// otherwise.
func TestCoerceInputs(t *testing.T) {
	sp, ds := specs.Parse("t.stratum.yaml", []byte(`version: "0.2"
flows:
  main:
    input:
      version: {type: string}
      n: {type: integer}
      tags: {type: array}
    steps:
      - id: a
        intent: "A"
        inputs: {v: "$.input.version", n: "$.input.n", t: "$.input.tags"}
workflow:
  name: main
  description: "d"
  input:
    version: {type: string}
    n: {type: integer}
    tags: {type: array}
`), exprlang.Compile)

	if sp == nil {
		t.Fatal(ds)
	}
	for _, c := range []struct {
		fields []string
		want   map[string]any
	}{
		{[]string{"version=7", "n=3"}, map[string]any{"version": "7", "n": 3.0}},
		{[]string{"version=1.10"}, map[string]any{"version": "1.10"}},
		{[]string{"version=true", "tags=[\"a\"]"}, map[string]any{"version": "true", "tags": []any{"a"}}},
		{[]string{"version=null"}, map[string]any{"version": "null"}},
		{[]string{`version="quoted text"`}, map[string]any{"version": "quoted text"}},
		{[]string{"version=plain", "n=x"}, map[string]any{"version": "plain", "n": "x"}}, // n is refused by the engine
	} {
		inputs, err := ParseInputs(c.fields, "")
		if err != nil {
			t.Fatal(err)
		}
		got := CoerceInputs(sp, "main", inputs, TextInputs(c.fields))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %#v, want %#v", c.fields, got, c.want)
		}
	}
	// Inputs from a --inputs file (no typed text) are left as they are.
	in := map[string]any{"version": 7.0}
	if got := CoerceInputs(sp, "main", in, nil); got["version"] != 7.0 {
		t.Errorf("file input coerced: %#v", got)
	}
}
