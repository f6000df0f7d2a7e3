package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// argSpec is what a tool's argument struct accepts: its JSON field names
// and which of them are required (a field without omitempty). The tools'
// input schemas advertise the same rules (jsonschema.For on the struct:
// properties, required, additionalProperties false); decodeArgs enforces
// them with one pass of the standard decoder instead of the SDK's
// validate-then-decode round trips, which dominated a call's cost.
type argSpec struct {
	fields   map[string]reflect.Type // by JSON name
	required []string                // sorted
}

func specOf[In any]() argSpec {
	rt := reflect.TypeFor[In]()
	s := argSpec{fields: map[string]reflect.Type{}}
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		s.fields[name] = f.Type
		if !strings.Contains(opts, "omitempty") {
			s.required = append(s.required, name)
		}
	}
	sort.Strings(s.required)
	return s
}

// inputSchema is the JSON Schema clients see for a tool's arguments.
func inputSchema[In any]() *jsonschema.Schema {
	s, err := jsonschema.For[In](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("input schema of %T: %v", *new(In), err)) // a programming error in a tool's argument struct
	}
	return s
}

// decodeArgs decodes a tool call's arguments into In: they must be a JSON
// object with every required field, no unknown field, and values of the
// fields' types. A violation is an *argError naming the field.
func decodeArgs[In any](raw json.RawMessage, spec argSpec) (In, error) {
	var in In
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return in, badArgs("arguments must be a JSON object")
	}
	var unknown, missing []string
	for name := range fields {
		if _, ok := spec.fields[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	for _, name := range spec.required {
		if _, ok := fields[name]; !ok {
			missing = append(missing, name)
		}
	}
	switch {
	case len(missing) > 0:
		return in, badArgs("missing properties: %s", quoteList(missing))
	case len(unknown) > 0:
		sort.Strings(unknown)
		return in, badArgs("unexpected additional properties %s", quoteList(unknown))
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return in, badArgs("%s must be %s, got %s", te.Field, typeName(spec.fields[te.Field]), te.Value)
		}
		return in, badArgs("arguments: %v", err)
	}
	return in, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = `"` + n + `"`
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// typeName is a Go type as an agent reads it in a message.
func typeName(t reflect.Type) string {
	if t == nil {
		return "a valid value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	}
	return "a valid value"
}
