package specs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Schema is a compiled JSON Schema (draft 2020-12 unless the document names
// another draft with $schema) validator. It is immutable and safe for
// concurrent use.
//
// Behaviour, matching the original's jsonschema.Draft202012Validator:
// `format` is an annotation only (not asserted). Differences: `pattern` uses Go
// regular expressions (RE2: no look-around or back-references; such a pattern
// is a schema error), and $ref may only point inside the document itself —
// nothing is ever loaded from files or the network.
type Schema struct {
	doc      map[string]any
	compiled *jsonschema.Schema
}

// schemaURL is the in-memory resource name a document is compiled under.
const schemaURL = "stratum:///schema.json"

// refuseLoader keeps $ref from reading files or URLs.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, errors.New("only references inside the schema itself are supported")
}

// NewSchema compiles doc, a JSON Schema as decoded from YAML or JSON. A nil doc
// is the empty schema (accepts everything). The error text is user-facing,
// e.g. "invalid JSON Schema: at '/properties/x/minimum': must be of type
// number but found string".
func NewSchema(doc map[string]any) (*Schema, error) {
	norm, err := jsonValue(doc, 0)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %v", err)
	}
	if norm == nil {
		norm = map[string]any{}
	}
	key, err := CanonicalJSON(norm)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %v", err)
	}
	if e, ok := compiledSchemas.get(string(key)); ok {
		if e.err != nil {
			return nil, e.err
		}
		return &Schema{doc: doc, compiled: e.compiled}, nil
	}
	compiled, err := compileSchema(norm)
	compiledSchemas.put(string(key), schemaCacheEntry{compiled, err})
	if err != nil {
		return nil, err
	}
	return &Schema{doc: doc, compiled: compiled}, nil
}

func compileSchema(norm any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, norm); err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %v", err)
	}
	compiled, err := c.Compile(schemaURL)
	if err != nil {
		return nil, schemaCompileError(err, norm)
	}
	return compiled, nil
}

// Compiling a schema is expensive (the document is first validated against
// the draft's metaschema, ~0.1 ms), and specs often repeat the same schema
// (every step of a generated flow, a contract re-validated on every save), so
// compiled schemas — and compile errors — are shared by canonical text. A
// compiled *jsonschema.Schema is immutable and safe for concurrent use.
const schemaCacheSize = 512

type schemaCacheEntry struct {
	compiled *jsonschema.Schema
	err      error
}

type schemaCache struct {
	mu sync.Mutex
	m  map[string]schemaCacheEntry
}

var compiledSchemas = &schemaCache{}

func (c *schemaCache) get(key string) (schemaCacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	return e, ok
}

func (c *schemaCache) put(key string, e schemaCacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= schemaCacheSize {
		// Simple and bounded: start over when full.
		c.m = make(map[string]schemaCacheEntry, 64)
	}
	c.m[key] = e
}

// Doc returns the schema document as given to NewSchema. Treat as read-only.
func (s *Schema) Doc() map[string]any {
	if s == nil {
		return nil
	}
	return s.doc
}

// Validate checks v and returns one message per violation, all of them, sorted
// by instance location (array indexes numerically) and then by text. Each
// message stands on its own: "at '/confidence': must be <= 1 but found 1.5",
// "missing required property 'done'" (the location prefix is left out at the
// root). A nil or empty result means v is valid. Callers prefix
// "output_schema violation: ".
//
// v may be any JSON-like Go value: nil, bool, string, numbers of every kind,
// json.Number, map[string]any, map[any]any, []any, or anything encoding/json
// can marshal.
func (s *Schema) Validate(v any) []string {
	if s == nil || s.compiled == nil {
		return nil
	}
	norm, err := jsonValue(v, 0)
	if err != nil {
		return []string{fmt.Sprintf("value is not valid JSON: %v", err)}
	}
	err = s.compiled.Validate(norm)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []string{err.Error()}
	}
	return renderViolations(flattenViolations(verr, norm))
}

// schemaCompileError turns a compiler error into user-facing text.
func schemaCompileError(err error, doc any) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var verr *jsonschema.ValidationError
		if errors.As(sve.Err, &verr) {
			msgs := renderViolations(flattenViolations(verr, doc))
			return fmt.Errorf("invalid JSON Schema: %s", strings.Join(msgs, "; "))
		}
	}
	var rerr *jsonschema.InvalidRegexError
	if errors.As(err, &rerr) {
		return fmt.Errorf("invalid JSON Schema: at %s: invalid regular expression %q: %v",
			quotePtr(strings.TrimPrefix(rerr.URL, schemaURL+"#")), rerr.Regex, rerr.Err)
	}
	var lerr *jsonschema.LoadURLError
	if errors.As(err, &lerr) {
		return fmt.Errorf("invalid JSON Schema: cannot resolve reference %q: only references inside the schema itself are supported",
			strings.TrimPrefix(lerr.URL, "stratum://"))
	}
	msg := err.Error()
	msg = strings.ReplaceAll(msg, schemaURL+"#", "#")
	msg = strings.ReplaceAll(msg, schemaURL, "schema")
	return fmt.Errorf("invalid JSON Schema: %s", msg)
}

// violation is one leaf error: where in the instance, and what.
type violation struct {
	loc []string
	msg string
}

// flattenViolations walks the library's error tree into leaf violations.
// Grouping nodes ($ref, allOf, the root) are transparent; anyOf and oneOf
// become one violation that lists the alternatives' problems.
func flattenViolations(e *jsonschema.ValidationError, instance any) []violation {
	var out []violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		switch k := e.ErrorKind.(type) {
		case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
			for _, c := range e.Causes {
				walk(c)
			}
		case *kind.AnyOf:
			out = append(out, violation{e.InstanceLocation,
				"must match at least one of the 'anyOf' schemas" + alternatives(e, instance)})
		case *kind.OneOf:
			if len(k.Subschemas) == 0 {
				out = append(out, violation{e.InstanceLocation,
					"must match exactly one of the 'oneOf' schemas but matches none" + alternatives(e, instance)})
			} else {
				out = append(out, violation{e.InstanceLocation, fmt.Sprintf(
					"must match exactly one of the 'oneOf' schemas but matches both #%d and #%d",
					k.Subschemas[0], k.Subschemas[1])})
			}
		case *kind.Required:
			for _, p := range k.Missing {
				out = append(out, violation{e.InstanceLocation, fmt.Sprintf("missing required property %s", quoteName(p))})
			}
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				out = append(out, violation{e.InstanceLocation, fmt.Sprintf("property %s is not allowed", quoteName(p))})
			}
		case *kind.Type:
			found := k.Got
			if v, ok := valueAt(instance, e.InstanceLocation); ok {
				found = describeValue(v)
			}
			out = append(out, violation{e.InstanceLocation,
				fmt.Sprintf("must be of type %s but found %s", strings.Join(k.Want, " or "), found)})
		default:
			out = append(out, violation{e.InstanceLocation, kindMessage(e.ErrorKind)})
			for _, c := range e.Causes {
				walk(c)
			}
		}
	}
	walk(e)
	return out
}

// alternatives renders the causes of a failed anyOf/oneOf: ` (#0: …; #1: …)`.
func alternatives(e *jsonschema.ValidationError, instance any) string {
	if len(e.Causes) == 0 {
		return ""
	}
	parts := make([]string, 0, len(e.Causes))
	for i, c := range e.Causes {
		var sub []string
		for _, v := range flattenViolations(c, instance) {
			sub = append(sub, withLoc(v.loc, v.msg))
		}
		parts = append(parts, fmt.Sprintf("#%d: %s", i, strings.Join(sub, ", ")))
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// valueAt finds the value at an instance location.
func valueAt(v any, loc []string) (any, bool) {
	for _, tok := range loc {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[tok]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// describeValue names a value's JSON type, with the value when it is short:
// "integer 1", "string \"x\"", "object", "null".
func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case string:
		return "string " + displayValue(x)
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case json.Number:
		if _, err := x.Int64(); err == nil || !strings.ContainsAny(string(x), ".eE") {
			return "integer " + string(x)
		}
		return "number " + string(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return "integer " + strconv.FormatFloat(x, 'f', -1, 64)
		}
		return "number " + strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return describeValue(float64(x))
	default:
		return fmt.Sprintf("integer %v", x)
	}
}

// renderViolations sorts and renders violations, dropping exact duplicates.
func renderViolations(vs []violation) []string {
	sort.SliceStable(vs, func(i, j int) bool {
		if c := compareLoc(vs[i].loc, vs[j].loc); c != 0 {
			return c < 0
		}
		return vs[i].msg < vs[j].msg
	})
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		m := withLoc(v.loc, v.msg)
		if len(out) > 0 && out[len(out)-1] == m {
			continue
		}
		out = append(out, m)
	}
	return out
}

// compareLoc orders instance locations token by token, numbers numerically.
func compareLoc(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		na, ea := strconv.Atoi(a[i])
		nb, eb := strconv.Atoi(b[i])
		switch {
		case ea == nil && eb == nil:
			if na < nb {
				return -1
			}
			return 1
		case ea == nil:
			return -1
		case eb == nil:
			return 1
		case a[i] < b[i]:
			return -1
		default:
			return 1
		}
	}
	return len(a) - len(b)
}

func withLoc(loc []string, msg string) string {
	if len(loc) == 0 {
		return msg
	}
	return "at " + quotePtr(jsonPointer(loc)) + ": " + msg
}

func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

func quotePtr(p string) string {
	if p == "" {
		return "'/'"
	}
	return "'" + p + "'"
}

func quoteName(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// kindMessage renders one error kind in the "must … but found …" style.
func kindMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Enum:
		return fmt.Sprintf("must be one of %s but found %s", displayList(k.Want), displayValue(k.Got))
	case *kind.Const:
		return fmt.Sprintf("must be %s but found %s", displayValue(k.Want), displayValue(k.Got))
	case *kind.Format:
		return fmt.Sprintf("must be a valid %s but found %s", k.Want, displayValue(k.Got))
	case *kind.Minimum:
		return fmt.Sprintf("must be >= %s but found %s", ratString(k.Want), ratString(k.Got))
	case *kind.Maximum:
		return fmt.Sprintf("must be <= %s but found %s", ratString(k.Want), ratString(k.Got))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("must be > %s but found %s", ratString(k.Want), ratString(k.Got))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("must be < %s but found %s", ratString(k.Want), ratString(k.Got))
	case *kind.MultipleOf:
		return fmt.Sprintf("must be a multiple of %s but found %s", ratString(k.Want), ratString(k.Got))
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long but has %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long but has %d", k.Want, k.Got)
	case *kind.Pattern:
		return fmt.Sprintf("must match pattern %s but found %s", quoteName(k.Want), displayValue(k.Got))
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d item(s) but has %d", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d item(s) but has %d", k.Want, k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d propert(y/ies) but has %d", k.Want, k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d propert(y/ies) but has %d", k.Want, k.Got)
	case *kind.UniqueItems:
		return fmt.Sprintf("must have unique items but items %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.FalseSchema:
		return "is not allowed"
	case *kind.Not:
		return "must not match the 'not' schema"
	case *kind.DependentRequired:
		return fmt.Sprintf("missing required property %s (required when %s is present)", joinNames(k.Missing), quoteName(k.Prop))
	case *kind.Dependency:
		return fmt.Sprintf("missing required property %s (required when %s is present)", joinNames(k.Missing), quoteName(k.Prop))
	case *kind.PropertyNames:
		return fmt.Sprintf("property name %s is not allowed", quoteName(k.Property))
	default:
		// The library's own English text (its Error() prints
		// "at '<location>': <text>" for a located error; the location is
		// empty here).
		msg := (&jsonschema.ValidationError{ErrorKind: k}).Error()
		return strings.TrimPrefix(msg, "at '': ")
	}
}

func joinNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteName(n)
	}
	return strings.Join(q, ", ")
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// displayValue renders a value for a message: JSON, without HTML escaping,
// shortened when long.
func displayValue(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := strings.TrimSpace(b.String())
	const limit = 80
	if utf8.RuneCountInString(s) > limit {
		r := []rune(s)
		s = string(r[:limit]) + "…"
	}
	return s
}

func displayList(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = displayValue(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// maxJSONDepth bounds recursion when normalising values.
const maxJSONDepth = 1000

// jsonValue converts v into the generic JSON form the validator understands
// (map[string]any, []any, string, bool, nil, numbers). Non-string map keys
// are converted as Python's json module converts them. NaN and infinities are
// refused.
func jsonValue(v any, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	switch x := v.(type) {
	case nil, bool, string, json.Number,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return v, nil
	case float32:
		return jsonValue(float64(x), depth)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", x)
		}
		return x, nil
	case map[string]any:
		if x == nil {
			return nil, nil
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := jsonValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, err := pyKey(k)
			if err != nil {
				return nil, err
			}
			n, err := jsonValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[ks] = n
		}
		return out, nil
	case []any:
		if x == nil {
			return nil, nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			n, err := jsonValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	default:
		g, err := viaJSON(v)
		if err != nil {
			return nil, err
		}
		return jsonValue(g, depth+1)
	}
}
