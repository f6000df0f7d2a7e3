package contract

import (
	"reflect"
	"testing"

	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

const spec = `version: "0.2"
contracts:
  Contact:
    name: {type: string}
    quantity: {type: integer}
    phone: {type: string, optional: true}
flows:
  main:
    input: {}
    steps:
      - {id: s, intent: x, output_contract: Contact}
`

func TestCheck(t *testing.T) {
	sp, ds := specs.Parse("c.stratum.yaml", []byte(spec), exprlang.Compile)
	if sp == nil {
		t.Fatal(ds)
	}
	c := Of(sp, "Contact")
	cases := []struct {
		name string
		v    any
		want []string
	}{
		{"fits", map[string]any{"name": "Ann", "quantity": 3}, nil},
		{"open: an extra key is accepted", map[string]any{"name": "Ann", "quantity": 3, "product": "Widget"}, nil},
		{"wrong type", map[string]any{"name": "Ann", "quantity": "3"},
			[]string{`output contract 'Contact' violation: at '/quantity': must be of type integer but found string "3"`}},
		{"missing", map[string]any{"quantity": 3},
			[]string{`output contract 'Contact' violation: missing required property 'name'`}},
		{"not an object", "Ann", []string{`output contract 'Contact' violation: must be of type object but found string "Ann"`}},
	}
	for _, tc := range cases {
		if got := c.Check(tc.v); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, none := range []*Checker{Of(sp, ""), Of(sp, "Missing"), Of(nil, "Contact")} {
		if none != nil || none.Check("anything") != nil || none.Name() != "" {
			t.Errorf("no contract checks something: %+v", none)
		}
	}
	closed, err := New("Out", map[string]any{"type": "object", "additionalProperties": false})
	if err != nil {
		t.Fatal(err)
	}
	if got := closed.Check(map[string]any{"x": 1}); len(got) != 1 || closed.Name() != "Out" {
		t.Errorf("closed schema: %q", got)
	}
}
