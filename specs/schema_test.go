package specs

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func schemaForTest(t testing.TB, doc map[string]any) *Schema {
	t.Helper()
	s, err := NewSchema(doc)
	if err != nil {
		t.Fatalf("NewSchema(%v): %v", doc, err)
	}
	return s
}

func TestSchemaValidate(t *testing.T) {
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name   string
		schema map[string]any
		value  any
		want   []string
	}{
		{"valid", obj("type", "object", "required", []any{"done"}, "properties", obj("done", obj("type", "boolean"))),
			map[string]any{"done": true}, nil},
		{"all violations, sorted by location then text",
			obj("type", "object", "required", []any{"done", "label", "confidence"}, "properties", obj(
				"confidence", obj("type", "number", "maximum", 1),
				"label", obj("enum", []any{"pos", "neg"}),
				"tags", obj("type", "array", "items", obj("type", "string")),
			)),
			map[string]any{"confidence": 1.5, "label": "meh", "tags": []any{"a", 1, "b", 2.5}},
			[]string{
				"missing required property 'done'",
				"at '/confidence': must be <= 1 but found 1.5",
				`at '/label': must be one of ["pos", "neg"] but found "meh"`,
				"at '/tags/1': must be of type string but found integer 1",
				"at '/tags/3': must be of type string but found number 2.5",
			}},
		{"every missing required property separately", obj("required", []any{"b", "a"}), map[string]any{},
			[]string{"missing required property 'a'", "missing required property 'b'"}},
		{"array indexes sort numerically", obj("type", "array", "items", obj("type", "integer")),
			[]any{0, 1, "x", 3, 4, 5, 6, 7, 8, 9, "y"},
			[]string{`at '/2': must be of type integer but found string "x"`, `at '/10': must be of type integer but found string "y"`}},
		{"root type", obj("type", "object"), []any{}, []string{"must be of type object but found array"}},
		{"null and boolean", obj("type", "object", "properties", obj("a", obj("type", "string"), "b", obj("type", "string"))),
			map[string]any{"a": nil, "b": true},
			[]string{"at '/a': must be of type string but found null", "at '/b': must be of type string but found boolean true"}},
		{"type lists", obj("type", []any{"string", "null"}), 1, []string{"must be of type null or string but found integer 1"}},
		{"integer accepts 2.0", obj("type", "integer"), 2.0, nil},
		{"integer rejects 2.5", obj("type", "integer"), 2.5, []string{"must be of type integer but found number 2.5"}},
		{"const", obj("const", "x"), "y", []string{`must be "x" but found "y"`}},
		{"minimum", obj("minimum", 0), -1, []string{"must be >= 0 but found -1"}},
		{"exclusiveMinimum", obj("exclusiveMinimum", 0), 0, []string{"must be > 0 but found 0"}},
		{"exclusiveMaximum", obj("exclusiveMaximum", 0.5), 0.5, []string{"must be < 0.5 but found 0.5"}},
		{"multipleOf", obj("multipleOf", 3), 4, []string{"must be a multiple of 3 but found 4"}},
		{"minLength counts characters", obj("minLength", 3), "éé", []string{"must be at least 3 characters long but has 2"}},
		{"maxLength", obj("maxLength", 1), "ab", []string{"must be at most 1 characters long but has 2"}},
		{"pattern", obj("pattern", "^a"), "ba", []string{`must match pattern '^a' but found "ba"`}},
		{"minItems", obj("minItems", 2), []any{1}, []string{"must have at least 2 item(s) but has 1"}},
		{"maxItems", obj("maxItems", 0), []any{1}, []string{"must have at most 0 item(s) but has 1"}},
		{"uniqueItems", obj("uniqueItems", true), []any{1, 2, 1.0}, []string{"must have unique items but items 0 and 2 are equal"}},
		{"minProperties", obj("minProperties", 1), map[string]any{}, []string{"must have at least 1 propert(y/ies) but has 0"}},
		{"additionalProperties", obj("properties", obj("a", true), "additionalProperties", false),
			map[string]any{"a": 1, "z": 1, "y": 2},
			[]string{"property 'y' is not allowed", "property 'z' is not allowed"}},
		{"false schema", obj("properties", obj("a", false)), map[string]any{"a": 1}, []string{"at '/a': is not allowed"}},
		{"not", obj("not", obj("type", "string")), "s", []string{"must not match the 'not' schema"}},
		{"anyOf lists the alternatives", obj("anyOf", []any{obj("type", "string"), obj("minimum", 3)}), 1,
			[]string{"must match at least one of the 'anyOf' schemas (#0: must be of type string but found integer 1; #1: must be >= 3 but found 1)"}},
		{"oneOf none", obj("oneOf", []any{obj("type", "string"), obj("type", "boolean")}), 1,
			[]string{"must match exactly one of the 'oneOf' schemas but matches none (#0: must be of type string but found integer 1; #1: must be of type boolean but found integer 1)"}},
		{"oneOf both", obj("oneOf", []any{obj("type", "integer"), obj("minimum", 0)}), 1,
			[]string{"must match exactly one of the 'oneOf' schemas but matches both #0 and #1"}},
		{"allOf is flattened", obj("allOf", []any{obj("minimum", 5), obj("multipleOf", 2)}), 3,
			[]string{"must be >= 5 but found 3", "must be a multiple of 2 but found 3"}},
		{"dependentRequired", obj("dependentRequired", obj("a", []any{"b"})), map[string]any{"a": 1},
			[]string{"missing required property 'b' (required when 'a' is present)"}},
		{"local $ref", obj("$defs", obj("pos", obj("minimum", 0)), "properties", obj("x", obj("$ref", "#/$defs/pos"))),
			map[string]any{"x": -2}, []string{"at '/x': must be >= 0 but found -2"}},
		{"format is an annotation only", obj("format", "email"), "not-an-email", nil},
		{"pointer escaping", obj("properties", obj("a/b~c", obj("type", "string"))), map[string]any{"a/b~c": 1},
			[]string{"at '/a~1b~0c': must be of type string but found integer 1"}},
		{"nested contract-like object", obj("type", "object", "properties", obj("addr", obj("type", "object", "required", []any{"city"}))),
			map[string]any{"addr": map[string]any{}}, []string{"at '/addr': missing required property 'city'"}},
		{"long values are shortened", obj("const", "a"), strings.Repeat("x", 200),
			[]string{`must be "a" but found "` + strings.Repeat("x", 79) + "…"}},
		{"NaN is not JSON", obj(), math.NaN(), []string{"value is not valid JSON: NaN is not a JSON number"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schemaForTest(t, tt.schema).Validate(tt.value)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate(%v)\n got %q\nwant %q", tt.value, got, tt.want)
			}
		})
	}
}

func TestSchemaValueKinds(t *testing.T) {
	s := schemaForTest(t, map[string]any{
		"type": "object", "required": []any{"n", "l"},
		"properties": map[string]any{
			"n": map[string]any{"type": "integer", "maximum": 10},
			"l": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
	})
	type result struct {
		N int      `json:"n"`
		L []string `json:"l"`
	}
	valid := []any{
		map[string]any{"n": 1, "l": []any{}},
		map[string]any{"n": int64(2), "l": []string{"a"}},
		map[string]any{"n": json.Number("3"), "l": []any{"x"}},
		map[string]any{"n": 4.0, "l": []any{}},
		map[any]any{"n": uint8(5), "l": []any{}},
		result{N: 6, L: []string{"q"}},
		&result{N: 7, L: []string{}},
		json.RawMessage(`{"n": 8, "l": ["z"]}`),
	}
	for _, v := range valid {
		if got := s.Validate(v); len(got) != 0 {
			t.Errorf("Validate(%#v) = %q, want valid", v, got)
		}
	}
	invalid := map[string]any{"n": json.Number("11"), "l": []string{"a"}}
	if got := s.Validate(invalid); !reflect.DeepEqual(got, []string{"at '/n': must be <= 10 but found 11"}) {
		t.Errorf("Validate(json.Number 11) = %q", got)
	}
}

func TestNewSchemaErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema map[string]any
		want   []string // substrings of the error
	}{
		{"keyword of the wrong type", map[string]any{"minimum": "x"}, []string{"invalid JSON Schema", "at '/minimum'", "must be of type number but found string"}},
		{"unknown type name", map[string]any{"type": "strin"}, []string{"at '/type'", `"strin"`}},
		{"invalid regex", map[string]any{"pattern": "(?=x)"}, []string{"at '/pattern'", "regex"}},
		{"remote $ref", map[string]any{"$ref": "https://example.com/s.json"}, []string{"cannot resolve reference", "only references inside the schema"}},
		{"file $ref", map[string]any{"$ref": "file:///etc/passwd"}, []string{"cannot resolve reference"}},
		{"dangling local $ref", map[string]any{"$ref": "#/$defs/missing"}, []string{"invalid JSON Schema"}},
		{"NaN keyword", map[string]any{"maximum": math.Inf(1)}, []string{"invalid JSON Schema", "not a JSON number"}},
		{"required not a list", map[string]any{"required": "x"}, []string{"at '/required'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSchema(tt.schema)
			if err == nil {
				t.Fatalf("NewSchema(%v) = %v, want an error", tt.schema, s)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "stratum:///") {
				t.Errorf("error leaks the internal resource name: %q", err)
			}
		})
	}
}

func TestSchemaDocAndNil(t *testing.T) {
	doc := map[string]any{"type": "string", "minLength": 1}
	s := schemaForTest(t, doc)
	if !reflect.DeepEqual(s.Doc(), doc) {
		t.Errorf("Doc() = %v, want %v", s.Doc(), doc)
	}
	empty := schemaForTest(t, nil)
	for _, v := range []any{nil, 1, "x", []any{1}, map[string]any{}} {
		if got := empty.Validate(v); len(got) != 0 {
			t.Errorf("empty schema rejected %v: %q", v, got)
		}
	}
	var none *Schema
	if none.Validate(1) != nil || none.Doc() != nil {
		t.Error("nil *Schema must accept everything and have no doc")
	}
}

func TestSchemaConcurrent(t *testing.T) {
	s := schemaForTest(t, map[string]any{"type": "object", "required": []any{"a"},
		"properties": map[string]any{"a": map[string]any{"type": "integer", "minimum": 0}}})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				got := s.Validate(map[string]any{"a": -(i + j + 1)})
				if len(got) != 1 || !strings.HasPrefix(got[0], "at '/a': must be >= 0") {
					t.Errorf("unexpected %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkSchemaValidate(b *testing.B) {
	s := schemaForTest(b, map[string]any{"type": "object", "required": []any{"label", "confidence"},
		"properties": map[string]any{
			"label":      map[string]any{"enum": []any{"pos", "neg"}},
			"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
		}})
	v := map[string]any{"label": "pos", "confidence": 0.9}
	for b.Loop() {
		s.Validate(v)
	}
}

func BenchmarkNewSchema(b *testing.B) {
	doc := map[string]any{"type": "object", "required": []any{"done"},
		"properties": map[string]any{"done": map[string]any{"type": "boolean"}}}
	for b.Loop() {
		if _, err := NewSchema(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNewSchemaCache(t *testing.T) {
	doc1 := map[string]any{"type": "object", "required": []any{"cache_probe"}}
	doc2 := map[string]any{"required": []any{"cache_probe"}, "type": "object"}
	s1, s2 := schemaForTest(t, doc1), schemaForTest(t, doc2)
	if s1.compiled != s2.compiled {
		t.Error("identical schemas were compiled twice")
	}
	if reflect.ValueOf(s2.Doc()).Pointer() != reflect.ValueOf(doc2).Pointer() {
		t.Error("Doc must return the caller's own document")
	}
	bad := map[string]any{"minimum": "cache_probe"}
	_, err1 := NewSchema(bad)
	_, err2 := NewSchema(map[string]any{"minimum": "cache_probe"})
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
		t.Errorf("cached error: %v / %v", err1, err2)
	}
	// int 1 and float 1.0 render differently in canonical JSON and must not
	// share an entry (their documents differ, though they validate alike).
	a := schemaForTest(t, map[string]any{"maximum": 1})
	b := schemaForTest(t, map[string]any{"maximum": 1.0})
	if a.compiled == b.compiled {
		t.Error("1 and 1.0 share a cache entry")
	}
}

// FuzzSchema: compiling any JSON document as a schema and validating any
// JSON value against it never panics, and every message is non-empty.
func FuzzSchema(f *testing.F) {
	f.Add(`{"type":"object","required":["a"],"properties":{"a":{"type":"integer","maximum":1}}}`, `{"a":2.5}`)
	f.Add(`{"anyOf":[{"type":"string"},{"minimum":3}],"not":{"const":4}}`, `4`)
	f.Add(`{"$defs":{"x":{"$ref":"#/$defs/x"}},"$ref":"#/$defs/x"}`, `null`)
	f.Add(`{"items":{"uniqueItems":true},"prefixItems":[{"enum":[1,"a"]}]}`, `[[1,1],"b"]`)
	f.Add(`{"pattern":"(a+)+$","format":"email","dependentRequired":{"a":["b"]}}`, `{"a":1}`)
	f.Add(`{"$schema":"http://json-schema.org/draft-04/schema#","id":"x","maximum":3,"exclusiveMaximum":true}`, `3`)
	f.Fuzz(func(t *testing.T, schemaText, valueText string) {
		var doc map[string]any
		if json.Unmarshal([]byte(schemaText), &doc) != nil {
			return
		}
		if _, err := CanonicalJSON(doc); err != nil {
			t.Fatalf("CanonicalJSON of decoded JSON failed: %v", err)
		}
		s, err := NewSchema(doc)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		dec := json.NewDecoder(strings.NewReader(valueText))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		for _, m := range s.Validate(v) {
			if m == "" {
				t.Fatal("empty violation message")
			}
		}
	})
}
