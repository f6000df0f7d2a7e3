package specs

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// fld builds a field: ctField("name", "type", opts...) where opts are
// "optional", []any (values) or map[string]any (keywords).
func ctField(name, typ string, opts ...any) *Field {
	f := &Field{Name: name, Type: typ}
	for _, o := range opts {
		switch o := o.(type) {
		case string:
			if o == "optional" {
				f.Optional = true
			}
		case []any:
			f.Values = o
		case map[string]any:
			f.Keywords = o
		}
	}
	return f
}

// contracts builds a contract set in declaration order.
func ctSet(cs ...*Contract) (map[string]*Contract, []string) {
	m := map[string]*Contract{}
	var names []string
	for _, c := range cs {
		m[c.Name] = c
		names = append(names, c.Name)
	}
	return m, names
}

func ctContract(name string, fields ...*Field) *Contract {
	return &Contract{Name: name, Fields: fields}
}

type ctM = map[string]any
type ctL = []any

func TestBuildContractsSchemas(t *testing.T) {
	tests := []struct {
		name  string
		cs    []*Contract
		check string // contract to check
		want  ctM
	}{
		{"every primitive", []*Contract{ctContract("P",
			ctField("s", "string"), ctField("n", "number"), ctField("i", "integer"), ctField("b", "boolean"),
			ctField("a", "array"), ctField("o", "object"), ctField("z", "null"))}, "P",
			ctM{"type": "object", "properties": ctM{
				"s": ctM{"type": "string"}, "n": ctM{"type": "number"}, "i": ctM{"type": "integer"},
				"b": ctM{"type": "boolean"}, "a": ctM{"type": "array"}, "o": ctM{"type": "object"}, "z": ctM{"type": "null"},
			}, "required": ctL{"s", "n", "i", "b", "a", "o", "z"}}},
		{"values alone are an enum", []*Contract{ctContract("E", ctField("label", "", ctL{"pos", "neg"}))}, "E",
			ctM{"type": "object", "properties": ctM{"label": ctM{"enum": ctL{"pos", "neg"}}}, "required": ctL{"label"}}},
		{"type and values", []*Contract{ctContract("E", ctField("level", "integer", ctL{1, 2, 3}))}, "E",
			ctM{"type": "object", "properties": ctM{"level": ctM{"type": "integer", "enum": ctL{1, 2, 3}}}, "required": ctL{"level"}}},
		{"keyword enum wins over values", []*Contract{ctContract("E", ctField("x", "string", ctL{"a"}, ctM{"enum": ctL{"b"}}))}, "E",
			ctM{"type": "object", "properties": ctM{"x": ctM{"type": "string", "enum": ctL{"b"}}}, "required": ctL{"x"}}},
		{"every keyword", []*Contract{ctContract("K",
			ctField("score", "number", ctM{"minimum": 0, "maximum": 1.0, "description": "how sure"}),
			ctField("ex", "number", ctM{"exclusiveMinimum": 0, "exclusiveMaximum": 10}),
			ctField("code", "string", ctM{"minLength": 2, "maxLength": 2, "pattern": "^[A-Z]+$", "format": "iso-3166"}),
			ctField("tags", "array", ctM{"items": ctM{"type": "string"}, "minItems": 1, "maxItems": 5}),
			ctField("kind", "", ctM{"enum": ctL{"a", "b"}}))}, "K",
			ctM{"type": "object", "properties": ctM{
				"score": ctM{"type": "number", "minimum": 0, "maximum": 1.0, "description": "how sure"},
				"ex":    ctM{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
				"code":  ctM{"type": "string", "minLength": 2, "maxLength": 2, "pattern": "^[A-Z]+$", "format": "iso-3166"},
				"tags":  ctM{"type": "array", "items": ctM{"type": "string"}, "minItems": 1, "maxItems": 5},
				"kind":  ctM{"enum": ctL{"a", "b"}},
			}, "required": ctL{"score", "ex", "code", "tags", "kind"}}},
		{"optional fields leave required, order kept", []*Contract{ctContract("O",
			ctField("z", "string"), ctField("y", "string", "optional"), ctField("a", "string"))}, "O",
			ctM{"type": "object", "properties": ctM{"z": ctM{"type": "string"}, "y": ctM{"type": "string"}, "a": ctM{"type": "string"}},
				"required": ctL{"z", "a"}}},
		{"all optional", []*Contract{ctContract("O", ctField("a", "string", "optional"))}, "O",
			ctM{"type": "object", "properties": ctM{"a": ctM{"type": "string"}}, "required": ctL{}}},
		{"no fields", []*Contract{ctContract("Empty")}, "Empty",
			ctM{"type": "object", "properties": ctM{}, "required": ctL{}}},
		{"nested contract inlined (declared later)", []*Contract{
			ctContract("User", ctField("name", "string"), ctField("address", "Address", ctM{"description": "home"})),
			ctContract("Address", ctField("city", "string"), ctField("zip", "string", "optional"))}, "User",
			ctM{"type": "object", "properties": ctM{
				"name": ctM{"type": "string"},
				"address": ctM{"type": "object", "description": "home",
					"properties": ctM{"city": ctM{"type": "string"}, "zip": ctM{"type": "string"}}, "required": ctL{"city"}},
			}, "required": ctL{"name", "address"}}},
		{"array of contracts", []*Contract{
			ctContract("Item", ctField("id", "integer")),
			ctContract("List", ctField("items", "array", ctM{"items": ctM{"type": "Item"}, "minItems": 1}))}, "List",
			ctM{"type": "object", "properties": ctM{"items": ctM{"type": "array", "minItems": 1, "items": ctM{
				"type": "object", "properties": ctM{"id": ctM{"type": "integer"}}, "required": ctL{"id"}}}},
				"required": ctL{"items"}}},
		{"items as a bare type name", []*Contract{
			ctContract("Item", ctField("id", "integer")),
			ctContract("List", ctField("xs", "array", ctM{"items": "Item"}))}, "List",
			ctM{"type": "object", "properties": ctM{"xs": ctM{"type": "array", "items": ctM{
				"type": "object", "properties": ctM{"id": ctM{"type": "integer"}}, "required": ctL{"id"}}}},
				"required": ctL{"xs"}}},
		{"items with values and nested items", []*Contract{ctContract("G",
			ctField("grid", "array", ctM{"items": ctM{"type": "array", "items": ctM{"type": "string", "values": ctL{"x", "o"}}}}))}, "G",
			ctM{"type": "object", "properties": ctM{"grid": ctM{"type": "array", "items": ctM{"type": "array",
				"items": ctM{"type": "string", "enum": ctL{"x", "o"}}}}}, "required": ctL{"grid"}}},
		{"items with JSON-Schema type list kept", []*Contract{ctContract("T",
			ctField("xs", "array", ctM{"items": ctM{"type": ctL{"string", "null"}}}))}, "T",
			ctM{"type": "object", "properties": ctM{"xs": ctM{"type": "array", "items": ctM{"type": ctL{"string", "null"}}}},
				"required": ctL{"xs"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, names := ctSet(tt.cs...)
			if ps := BuildContracts(m, names); len(ps) != 0 {
				t.Fatalf("problems: %+v", ps)
			}
			c := m[tt.check]
			if !reflect.DeepEqual(c.Schema, tt.want) {
				t.Errorf("schema\n got %#v\nwant %#v", c.Schema, tt.want)
			}
			for _, f := range c.Fields {
				if !reflect.DeepEqual(f.Schema, c.Schema["properties"].(ctM)[f.Name]) {
					t.Errorf("field %s schema %v differs from the contract's property", f.Name, f.Schema)
				}
			}
			if len(c.Hash) != 12 {
				t.Errorf("hash %q", c.Hash)
			}
			if _, err := NewSchema(c.Schema); err != nil {
				t.Errorf("schema does not compile: %v", err)
			}
		})
	}
}

func TestContractHashKnownValue(t *testing.T) {
	m, names := ctSet(ctContract("Sentiment",
		ctField("label", "", ctL{"pos", "neg"}),
		ctField("confidence", "number", ctM{"minimum": 0, "maximum": 1.0}),
		ctField("tags", "array", "optional", ctM{"items": ctM{"type": "string"}})))
	if ps := BuildContracts(m, names); len(ps) != 0 {
		t.Fatalf("problems: %+v", ps)
	}
	// The canonical form written out by hand: keys sorted, no whitespace, the
	// YAML float 1.0 kept as 1.0 and the int 0 as 0.
	const canonical = `{"properties":{"confidence":{"maximum":1.0,"minimum":0,"type":"number"},` +
		`"label":{"enum":["pos","neg"]},"tags":{"items":{"type":"string"},"type":"array"}},` +
		`"required":["label","confidence"],"type":"object"}`
	got, err := CanonicalJSON(m["Sentiment"].Schema)
	if err != nil || string(got) != canonical {
		t.Fatalf("canonical\n got %s (%v)\nwant %s", got, err, canonical)
	}
	sum := sha256.Sum256([]byte(canonical))
	want := hex.EncodeToString(sum[:])[:12]
	// Also what CPython's hashlib gives for the same json.dumps text.
	const python = "6e79d475d73d"
	if want != python {
		t.Fatalf("sha256 self-check: %s != %s", want, python)
	}
	if h := m["Sentiment"].Hash; h != python {
		t.Errorf("Hash = %s, want %s", h, python)
	}
}

func TestContractHashDeterminism(t *testing.T) {
	build := func(mut func(*Contract)) string {
		c := ctContract("C", ctField("b", "string", ctM{"minLength": 1}), ctField("a", "number", ctM{"maximum": 1}), ctField("n", "N"))
		n := ctContract("N", ctField("x", "boolean"), ctField("y", "integer", "optional"))
		if mut != nil {
			mut(c)
		}
		m, names := ctSet(c, n)
		if ps := BuildContracts(m, names); len(ps) != 0 {
			t.Fatalf("problems: %+v", ps)
		}
		return m["C"].Hash
	}
	base := build(nil)
	for i := 0; i < 20; i++ {
		if h := build(nil); h != base {
			t.Fatalf("run %d: hash %s != %s", i, h, base)
		}
	}
	changes := map[string]func(*Contract){
		"rename":     func(c *Contract) { c.Fields[0].Name = "bb" },
		"type":       func(c *Contract) { c.Fields[1].Type = "integer" },
		"constraint": func(c *Contract) { c.Fields[1].Keywords["maximum"] = 2 },
		"int→float":  func(c *Contract) { c.Fields[1].Keywords["maximum"] = 1.0 },
		"optional":   func(c *Contract) { c.Fields[0].Optional = true },
		"order":      func(c *Contract) { c.Fields[0], c.Fields[1] = c.Fields[1], c.Fields[0] },
	}
	for name, mut := range changes {
		if h := build(mut); h == base {
			t.Errorf("%s: hash unchanged", name)
		}
	}
}

func TestBuildContractsProblems(t *testing.T) {
	type want struct{ contract, field, code, msg, sugg string }
	tests := []struct {
		name string
		cs   []*Contract
		want []want
		nil_ []string // contracts that must keep a nil schema
		ok   []string // contracts that must compile
	}{
		{"typo of a primitive", []*Contract{ctContract("A", ctField("x", "strng"))},
			[]want{{"A", "x", "unknown-type", "unknown type 'strng' for field 'x' of contract 'A'", `did you mean "string"?`}},
			[]string{"A"}, nil},
		{"other-language alias", []*Contract{ctContract("A", ctField("x", "float"))},
			[]want{{"A", "x", "unknown-type", "unknown type 'float'", `did you mean "number"?`}}, []string{"A"}, nil},
		{"typo of a contract", []*Contract{ctContract("A", ctField("x", "Adress")), ctContract("Address", ctField("c", "string"))},
			[]want{{"A", "x", "unknown-type", "unknown type 'Adress'", `did you mean "Address"?`}}, []string{"A"}, []string{"Address"}},
		{"array shorthand", []*Contract{ctContract("A", ctField("x", "string[]"))},
			[]want{{"A", "x", "unknown-type", "unknown type 'string[]'", "use {type: array, items: {type: string}}"}}, []string{"A"}, nil},
		{"python list", []*Contract{ctContract("A", ctField("x", "list[str]"))},
			[]want{{"A", "x", "unknown-type", "unknown type 'list[str]'", "use {type: array, items: {type: string}}"}}, []string{"A"}, nil},
		{"optional shorthand", []*Contract{ctContract("A", ctField("x", "B?")), ctContract("B")},
			[]want{{"A", "x", "unknown-type", "unknown type 'B?'", "use {type: B, optional: true}"}}, []string{"A"}, []string{"B"}},
		{"nothing close", []*Contract{ctContract("A", ctField("x", "zzzzzz"))},
			[]want{{"A", "x", "unknown-type", "unknown type 'zzzzzz'", "use one of string, number, integer, boolean, array, object, null, or a contract name"}},
			[]string{"A"}, nil},
		{"unknown items type", []*Contract{ctContract("A", ctField("xs", "array", ctM{"items": ctM{"type": "Itm"}})), ctContract("Item")},
			[]want{{"A", "xs", "unknown-type", "unknown type 'Itm' for field 'xs' items of contract 'A'", `did you mean "Item"?`}},
			[]string{"A"}, []string{"Item"}},
		{"self cycle", []*Contract{ctContract("Node", ctField("v", "string"), ctField("next", "Node"))},
			[]want{{"Node", "next", "contract-cycle", "contract 'Node' contains itself: Node.next → Node", "use type: object"}},
			[]string{"Node"}, nil},
		{"two-contract cycle reported once", []*Contract{ctContract("A", ctField("b", "B")), ctContract("B", ctField("a", "A"))},
			[]want{{"A", "b", "contract-cycle", "contract 'A' contains itself: A.b → B.a → A", ""}},
			[]string{"A", "B"}, nil},
		{"cycle through items", []*Contract{ctContract("Tree", ctField("children", "array", ctM{"items": ctM{"type": "Tree"}}))},
			[]want{{"Tree", "children", "contract-cycle", "Tree.children → Tree", ""}}, []string{"Tree"}, nil},
		{"three-contract cycle, dependents blocked", []*Contract{
			ctContract("User", ctField("g", "G")),
			ctContract("G", ctField("h", "H")), ctContract("H", ctField("i", "I")), ctContract("I", ctField("g", "G"))},
			[]want{{"G", "h", "contract-cycle", "contract 'G' contains itself: G.h → H.i → I.g → G", ""}},
			[]string{"User", "G", "H", "I"}, nil},
		{"invalid keyword", []*Contract{ctContract("A", ctField("ok", "string"), ctField("x", "number", ctM{"minimum": "low"}))},
			[]want{{"A", "x", "invalid-schema", "field 'x' of contract 'A' is not a valid JSON Schema: at '/minimum': must be of type number but found string", ""}},
			[]string{"A"}, nil},
		{"invalid regex", []*Contract{ctContract("A", ctField("x", "string", ctM{"pattern": "(?=a)"}))},
			[]want{{"A", "x", "invalid-schema", "at '/pattern'", ""}}, []string{"A"}, nil},
		{"invalid items", []*Contract{ctContract("A", ctField("x", "array", ctM{"items": 5}))},
			[]want{{"A", "x", "invalid-schema", "at '/items'", ""}}, []string{"A"}, nil},
		{"invalid keyword beside a contract type", []*Contract{ctContract("A", ctField("b", "B", ctM{"minProperties": -1})), ctContract("B")},
			[]want{{"A", "b", "invalid-schema", "at '/minProperties'", ""}}, []string{"A"}, []string{"B"}},
		{"every problem of a contract is returned", []*Contract{ctContract("A",
			ctField("x", "strng", ctM{"maxLength": "long"}), ctField("y", "number", ctM{"maximum": ctL{}}), ctField("z", "Nope"))},
			[]want{
				{"A", "x", "unknown-type", "'strng'", ""},
				{"A", "z", "unknown-type", "'Nope'", ""},
				{"A", "x", "invalid-schema", "at '/maxLength'", ""},
				{"A", "y", "invalid-schema", "at '/maximum'", ""},
			}, []string{"A"}, nil},
		{"problems in declaration order", []*Contract{ctContract("B", ctField("b", "bad")), ctContract("A", ctField("a", "A"))},
			[]want{{"B", "b", "unknown-type", "", ""}, {"A", "a", "contract-cycle", "", ""}}, []string{"A", "B"}, nil},
		{"a good contract beside bad ones", []*Contract{ctContract("Bad", ctField("x", "nope")), ctContract("Good", ctField("x", "string")), ctContract("UsesBad", ctField("b", "Bad"))},
			[]want{{"Bad", "x", "unknown-type", "", ""}}, []string{"Bad", "UsesBad"}, []string{"Good"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, names := ctSet(tt.cs...)
			ps := BuildContracts(m, names)
			if len(ps) != len(tt.want) {
				t.Fatalf("got %d problems, want %d: %+v", len(ps), len(tt.want), ps)
			}
			for i, w := range tt.want {
				p := ps[i]
				if p.Contract != w.contract || p.Field != w.field || p.Code != w.code ||
					!strings.Contains(p.Message, w.msg) || !strings.Contains(p.Suggestion, w.sugg) {
					t.Errorf("problem %d = %+v, want %+v", i, p, w)
				}
			}
			for _, n := range tt.nil_ {
				if m[n].Schema != nil || m[n].Hash != "" {
					t.Errorf("contract %s: schema %v hash %q, want none", n, m[n].Schema, m[n].Hash)
				}
				for _, f := range m[n].Fields {
					if f.Schema != nil {
						t.Errorf("contract %s field %s has a schema", n, f.Name)
					}
				}
			}
			for _, n := range tt.ok {
				if m[n].Schema == nil || m[n].Hash == "" {
					t.Errorf("contract %s did not compile", n)
				}
			}
		})
	}
}

func TestBuildContractsIndependentCopies(t *testing.T) {
	kw := ctM{"items": ctM{"type": "string"}, "enum": ctL{ctL{"a"}}}
	m, names := ctSet(ctContract("Inner", ctField("x", "array", kw)), ctContract("Outer", ctField("i", "Inner"), ctField("j", "Inner")))
	if ps := BuildContracts(m, names); len(ps) != 0 {
		t.Fatalf("problems: %+v", ps)
	}
	inner := m["Inner"].Hash
	// Mutating one inlined copy must not touch the others or the keywords.
	m["Outer"].Schema["properties"].(ctM)["i"].(ctM)["properties"].(ctM)["x"].(ctM)["items"].(ctM)["type"] = "integer"
	if got := m["Outer"].Schema["properties"].(ctM)["j"].(ctM)["properties"].(ctM)["x"].(ctM)["items"].(ctM)["type"]; got != "string" {
		t.Errorf("copies share structure: %v", got)
	}
	if kw["items"].(ctM)["type"] != "string" || m["Inner"].Schema["properties"].(ctM)["x"].(ctM)["items"].(ctM)["type"] != "string" {
		t.Error("the source keywords or the inner schema changed")
	}
	// Rebuilding resets and recomputes.
	m2, _ := ctSet(ctContract("Inner", ctField("x", "array", kw)), ctContract("Outer", ctField("i", "Inner"), ctField("j", "Inner")))
	BuildContracts(m2, names)
	if m2["Inner"].Hash != inner {
		t.Error("hash changed between identical builds")
	}
}

func TestBuildContractsUnlistedAndNil(t *testing.T) {
	m := map[string]*Contract{"B": ctContract("B", ctField("x", "string")), "A": ctContract("A", ctField("b", "B")), "N": nil}
	if ps := BuildContracts(m, []string{"A", "ghost"}); len(ps) != 0 {
		t.Fatalf("problems: %+v", ps)
	}
	if m["A"].Schema == nil || m["B"].Schema == nil {
		t.Error("contracts missing from names must still compile")
	}
	if ps := BuildContracts(nil, nil); len(ps) != 0 {
		t.Errorf("nil map: %+v", ps)
	}
}

func TestContractSchemaValidates(t *testing.T) {
	m, names := ctSet(
		ctContract("Result", ctField("label", "", ctL{"pos", "neg"}), ctField("confidence", "number", ctM{"minimum": 0, "maximum": 1}),
			ctField("items", "array", ctM{"items": ctM{"type": "Item"}}), ctField("note", "string", "optional")),
		ctContract("Item", ctField("id", "integer")))
	if ps := BuildContracts(m, names); len(ps) != 0 {
		t.Fatalf("problems: %+v", ps)
	}
	s := schemaForTest(t, m["Result"].Schema)
	got := s.Validate(ctM{"label": "pos", "confidence": 1.5, "items": ctL{ctM{"id": 1}, ctM{}}})
	want := []string{"at '/confidence': must be <= 1 but found 1.5", "at '/items/1': missing required property 'id'"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func BenchmarkBuildContracts(b *testing.B) {
	for b.Loop() {
		m, names := ctSet(
			ctContract("Result", ctField("label", "", ctL{"pos", "neg"}), ctField("confidence", "number", ctM{"minimum": 0, "maximum": 1}),
				ctField("items", "array", ctM{"items": ctM{"type": "Item"}})),
			ctContract("Item", ctField("id", "integer"), ctField("name", "string", ctM{"minLength": 1})))
		if ps := BuildContracts(m, names); len(ps) != 0 {
			b.Fatal(ps)
		}
	}
}
