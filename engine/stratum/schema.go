package stratum

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaFor returns the JSON Schema of T as the library sends it:
// github.com/google/jsonschema-go's translation, then a pass of our own,
// so that the schema accepts exactly what encoding/json decodes into T:
//
//   - struct fields are required (omitempty or not) and objects are closed
//     (additionalProperties false); a pointer field is optional and
//     nullable;
//   - slices are arrays, never null; []byte is a base64 string; time.Time
//     is a date-time string; time.Duration is an integer of nanoseconds
//     (its description says so: 1 second = 1000000000); json.RawMessage
//     is any JSON value; json.Number and *big.Int are numbers, decoded
//     with every digit (an integer above 2^53 keeps its value);
//   - a field tagged json:",string" is a string holding the value ("42",
//     "true"), as encoding/json writes and reads it;
//   - the tag `stratum:"enum=a|b,min=0,max=1,minlen=1,maxlen=500,opaque"`
//     adds an enum (values parsed as the field's type), numeric bounds
//     (min, max: numbers only), string or array length bounds (minlen,
//     maxlen); opaque marks an input field that is sent as attached data,
//     never in the prompt text.
//
// A type cycle is a *CompileError; so are types JSON cannot carry
// (channels, functions, maps with non-string keys), malformed tags and
// tags no value can satisfy or that bound what they cannot: min above
// max, minlen above maxlen, min on a string, an enum value outside the
// bounds, bounds on a json:",string" field, a key given twice.
func SchemaFor[T any]() (map[string]any, error) {
	return schemaOf(reflect.TypeFor[T]())
}

// typeSchemas are the schemas of the types whose JSON is not what their
// Go kind says (their MarshalJSON or encoding/json decides it).
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		timeType:                     {Type: "string", Format: "date-time"},
		bytesType:                    {Type: "string", ContentEncoding: "base64"},
		rawMessageType:               {Description: "any JSON value"},
		numberType:                   {Type: "number"},
		bigIntType:                   {Type: "integer"},
		durationType:                 {Type: "integer", Description: durationHint},
		reflect.TypeFor[big.Float](): {Type: "string", Description: "a decimal number written as a string"},
	}
}

// durationHint is the description of a time.Duration: encoding/json
// writes it as an integer count of nanoseconds.
const durationHint = "a duration in nanoseconds (1 second = 1000000000)"

func schemaOf(t reflect.Type) (map[string]any, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: typeSchemas()})
	if err != nil {
		return nil, &CompileError{Message: fmt.Sprintf("schema of %s: %v", t, err)}
	}
	if err := fixSchema(s, t); err != nil {
		return nil, &CompileError{Message: fmt.Sprintf("schema of %s: %v", t, err)}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, &CompileError{Message: fmt.Sprintf("schema of %s: %v", t, err)}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &CompileError{Message: fmt.Sprintf("schema of %s: %v", t, err)}
	}
	return m, nil
}

var (
	timeType       = reflect.TypeFor[time.Time]()
	bytesType      = reflect.TypeFor[[]byte]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	numberType     = reflect.TypeFor[json.Number]()
	bigIntType     = reflect.TypeFor[big.Int]()
	durationType   = reflect.TypeFor[time.Duration]()
)

// fixSchema applies our rules to s, the schema of t, and its children.
func fixSchema(s *jsonschema.Schema, t reflect.Type) error {
	if s == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if _, ok := typeSchemas()[t]; ok {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if s.Type == "" && len(s.Types) == 2 && s.Types[0] == "null" && s.Types[1] == "array" {
			s.Type, s.Types = "array", nil
		}
		return fixSchema(s.Items, t.Elem())
	case reflect.Map:
		return fixSchema(s.AdditionalProperties, t.Elem())
	case reflect.Struct:
		return fixStruct(s, t)
	}
	return nil
}

// fixStruct makes every non-pointer field required, applies the stratum
// tags and recurses into the fields.
func fixStruct(s *jsonschema.Schema, t reflect.Type) error {
	var required []string
	for _, f := range jsonFields(t) {
		prop := s.Properties[f.name]
		if prop == nil {
			continue
		}
		if err := fixSchema(prop, f.field.Type); err != nil {
			return err
		}
		if f.field.Type.Kind() == reflect.Pointer {
			if ft := f.field.Type.Elem(); ft.Kind() == reflect.Slice && ft != bytesType && ft != rawMessageType {
				prop.Type, prop.Types = "", []string{"null", "array"}
			}
		} else {
			required = append(required, f.name)
		}
		if f.quoted {
			if err := quotedSchema(prop, f.field); err != nil {
				return fmt.Errorf("field %s.%s: %w", t.Name(), f.field.Name, err)
			}
		} else if err := applyTag(prop, f.field); err != nil {
			return fmt.Errorf("field %s.%s: %w", t.Name(), f.field.Name, err)
		}
	}
	s.Required = required
	return nil
}

// jsonField is an exported struct field by its JSON name, embedded
// structs flattened as encoding/json does.
type jsonField struct {
	name  string
	field reflect.StructField
	// quoted: the field's JSON is its value written inside a string
	// (the json tag's ",string" option on a number, a bool or a string).
	quoted bool
}

// quotedSchema is the schema of a field tagged json:",string": a string
// holding the value as JSON (`"42"`, `"true"`), so that what the schema
// accepts is what encoding/json decodes. Its stratum bounds cannot be
// checked on a string and are refused.
func quotedSchema(s *jsonschema.Schema, f reflect.StructField) error {
	if tag, ok := f.Tag.Lookup("stratum"); ok {
		st, err := parseTag(tag)
		if err != nil {
			return err
		}
		if st.enum != nil || st.min != nil || st.max != nil || st.minLen != nil || st.maxLen != nil {
			return fmt.Errorf(`stratum tag %q on a field written as a string (json:",string"): only opaque applies; drop ",string" to bound the value`, tag)
		}
	}
	t := f.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	desc := "the value as JSON inside a string"
	*s = jsonschema.Schema{Type: "string", Description: desc}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s.Pattern, s.Description = `^-?(0|[1-9][0-9]*)$`, "an integer written as a string"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s.Pattern, s.Description = `^(0|[1-9][0-9]*)$`, "a non-negative integer written as a string"
	case reflect.Float32, reflect.Float64:
		s.Pattern, s.Description = `^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`, "a number written as a string"
	case reflect.Bool:
		s.Enum, s.Description = []any{"true", "false"}, "true or false written as a string"
	case reflect.String:
		s.Pattern, s.Description = `^".*"$`, "a JSON string written inside a string"
	}
	if f.Type.Kind() == reflect.Pointer {
		s.Type, s.Types = "", []string{"null", "string"}
		if s.Enum != nil {
			s.Enum = append(s.Enum, nil)
		}
	}
	return nil
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, jsonFields(ft)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, field: f, quoted: quotedOption(tag, f.Type)})
	}
	return out
}

// quotedOption reports whether a field with this json tag is written as a
// string (",string" on a number, bool or string field, as encoding/json
// applies it).
func quotedOption(tag string, t reflect.Type) bool {
	_, opts, _ := strings.Cut(tag, ",")
	found := false
	for _, o := range strings.Split(opts, ",") {
		found = found || o == "string"
	}
	if !found {
		return false
	}
	if t.Kind() == reflect.Pointer && t.Name() == "" {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// stratumTag is a parsed `stratum:"…"` tag.
type stratumTag struct {
	enum           []string
	min, max       *float64
	minLen, maxLen *int
	opaque         bool
}

func parseTag(tag string) (stratumTag, error) {
	var st stratumTag
	seen := map[string]bool{}
	for _, part := range strings.Split(tag, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, hasVal := strings.Cut(part, "=")
		if seen[key] {
			return st, fmt.Errorf("stratum tag %q: %s is given twice", tag, key)
		}
		seen[key] = true
		switch {
		case key == "opaque" && !hasVal:
			st.opaque = true
		case key == "enum" && hasVal && val != "":
			st.enum = strings.Split(val, "|")
		case (key == "min" || key == "max") && hasVal:
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return st, fmt.Errorf("stratum tag %q: %s wants a number", part, key)
			}
			if key == "min" {
				st.min = &f
			} else {
				st.max = &f
			}
		case (key == "minlen" || key == "maxlen") && hasVal:
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return st, fmt.Errorf("stratum tag %q: %s wants a non-negative integer", part, key)
			}
			if key == "minlen" {
				st.minLen = &n
			} else {
				st.maxLen = &n
			}
		default:
			return st, fmt.Errorf("stratum tag %q: want enum=a|b, min=N, max=N, minlen=N, maxlen=N or opaque", part)
		}
	}
	switch {
	case st.min != nil && st.max != nil && *st.min > *st.max:
		return st, fmt.Errorf("stratum tag %q: min=%v is more than max=%v: no value fits", tag, *st.min, *st.max)
	case st.minLen != nil && st.maxLen != nil && *st.minLen > *st.maxLen:
		return st, fmt.Errorf("stratum tag %q: minlen=%d is more than maxlen=%d: no value fits", tag, *st.minLen, *st.maxLen)
	}
	return st, nil
}

// applyTag adds the field's stratum tag to its schema.
func applyTag(s *jsonschema.Schema, f reflect.StructField) error {
	tag, ok := f.Tag.Lookup("stratum")
	if !ok {
		return nil
	}
	st, err := parseTag(tag)
	if err != nil {
		return err
	}
	t := f.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	kind := tagKind(t)
	if (st.min != nil || st.max != nil) && kind != "number" {
		return fmt.Errorf("stratum tag %q: min and max bound numbers, and this field is %s (minlen and maxlen bound strings and lists)", tag, kindName(t, kind))
	}
	if (st.minLen != nil || st.maxLen != nil) && kind != "string" && kind != "list" {
		return fmt.Errorf("stratum tag %q: minlen and maxlen bound strings and lists, and this field is %s", tag, kindName(t, kind))
	}
	if st.enum != nil {
		for _, v := range st.enum {
			ev, err := enumValue(t, v)
			if err != nil {
				return err
			}
			if err := st.admits(ev); err != nil {
				return fmt.Errorf("stratum tag %q: enum value %q %v: no answer could pick it", tag, v, err)
			}
			s.Enum = append(s.Enum, ev)
		}
		if f.Type.Kind() == reflect.Pointer {
			s.Enum = append(s.Enum, nil)
		}
	}
	s.Minimum, s.Maximum = orF(st.min, s.Minimum), orF(st.max, s.Maximum)
	switch kind {
	case "list":
		s.MinItems, s.MaxItems = orI(st.minLen, s.MinItems), orI(st.maxLen, s.MaxItems)
	case "string":
		s.MinLength, s.MaxLength = orI(st.minLen, s.MinLength), orI(st.maxLen, s.MaxLength)
	}
	return nil
}

// tagKind is what the stratum bounds see in a field of type t: "number",
// "string" (its JSON is a string: a string, []byte, time.Time, big.Float),
// "list", or "other".
func tagKind(t reflect.Type) string {
	if s, ok := typeSchemas()[t]; ok {
		switch s.Type {
		case "integer", "number":
			return "number"
		case "string":
			return "string"
		}
		return "other"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return "other"
}

func kindName(t reflect.Type, kind string) string {
	switch kind {
	case "number":
		return "a number"
	case "string":
		return "a string"
	case "list":
		return "a list"
	}
	return "a " + t.String()
}

// admits reports why an enum value does not fit the tag's bounds (nil
// when it does).
func (st stratumTag) admits(v any) error {
	if n, ok := toFloat(v); ok {
		if st.min != nil && n < *st.min {
			return fmt.Errorf("is below min=%v", *st.min)
		}
		if st.max != nil && n > *st.max {
			return fmt.Errorf("is above max=%v", *st.max)
		}
	}
	if s, ok := v.(string); ok {
		n := utf8.RuneCountInString(s)
		if st.minLen != nil && n < *st.minLen {
			return fmt.Errorf("is shorter than minlen=%d", *st.minLen)
		}
		if st.maxLen != nil && n > *st.maxLen {
			return fmt.Errorf("is longer than maxlen=%d", *st.maxLen)
		}
	}
	return nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// enumValue parses one enum value as the field's kind.
func enumValue(t reflect.Type, v string) (any, error) {
	switch t.Kind() {
	case reflect.String:
		return v, nil
	case reflect.Bool:
		return strconv.ParseBool(v)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("enum value %q is not an integer", v)
		}
		return n, nil
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("enum value %q is not a number", v)
		}
		return n, nil
	}
	return nil, fmt.Errorf("enum on a %s field: only strings, numbers and booleans", t)
}

func orF(a, b *float64) *float64 {
	if a != nil {
		return a
	}
	return b
}

func orI(a, b *int) *int {
	if a != nil {
		return a
	}
	return b
}
