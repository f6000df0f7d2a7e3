package stratum

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaFor returns the JSON Schema of T as the library sends it (rule 2):
// github.com/google/jsonschema-go's translation, then a pass of our own:
//
//   - struct fields are required (omitempty or not) and objects are closed
//     (additionalProperties false); a pointer field is optional and
//     nullable;
//   - slices are arrays, never null; []byte is a base64 string; time.Time
//     is a date-time string;
//   - the tag `stratum:"enum=a|b,min=0,max=1,minlen=1,maxlen=500,opaque"`
//     adds an enum (values parsed as the field's type), numeric bounds,
//     string or array length bounds; opaque marks an input field that is
//     sent as attached data, never in the prompt text (seed 000 §1.5).
//
// A type cycle is a *CompileError; so are types JSON cannot carry
// (channels, functions, maps with non-string keys) and malformed tags.
func SchemaFor[T any]() (map[string]any, error) {
	return schemaOf(reflect.TypeFor[T]())
}

func schemaOf(t reflect.Type) (map[string]any, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[time.Time](): {Type: "string", Format: "date-time"},
		reflect.TypeFor[[]byte]():    {Type: "string", ContentEncoding: "base64"},
	}})
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
	timeType  = reflect.TypeFor[time.Time]()
	bytesType = reflect.TypeFor[[]byte]()
)

// fixSchema applies our rules to s, the schema of t, and its children.
func fixSchema(s *jsonschema.Schema, t reflect.Type) error {
	if s == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timeType || t == bytesType {
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
			if ft := f.field.Type.Elem(); ft.Kind() == reflect.Slice && ft != bytesType {
				prop.Type, prop.Types = "", []string{"null", "array"}
			}
		} else {
			required = append(required, f.name)
		}
		if err := applyTag(prop, f.field); err != nil {
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
		out = append(out, jsonField{name: name, field: f})
	}
	return out
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
	for _, part := range strings.Split(tag, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, hasVal := strings.Cut(part, "=")
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
	if st.enum != nil {
		for _, v := range st.enum {
			ev, err := enumValue(t, v)
			if err != nil {
				return err
			}
			s.Enum = append(s.Enum, ev)
		}
		if f.Type.Kind() == reflect.Pointer {
			s.Enum = append(s.Enum, nil)
		}
	}
	s.Minimum, s.Maximum = orF(st.min, s.Minimum), orF(st.max, s.Maximum)
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		s.MinItems, s.MaxItems = orI(st.minLen, s.MinItems), orI(st.maxLen, s.MaxItems)
	default:
		s.MinLength, s.MaxLength = orI(st.minLen, s.MinLength), orI(st.maxLen, s.MaxLength)
	}
	return nil
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
