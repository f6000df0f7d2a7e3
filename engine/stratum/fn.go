package stratum

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/engine/internal/contract"
	"github.com/stratum-go/stratum/engine/internal/infer"
	"github.com/stratum-go/stratum/specs"
)

// Check is a named predicate on a value: a precondition on a function's
// input (Given) or a postcondition on its output (Ensure). The description
// is what a failure reports, and, for a postcondition, the violation fed
// back to the model on the next attempt.
type Check[T any] struct {
	desc string
	ok   func(T) bool
}

// Ensure returns a postcondition: desc is the violation text fed back to
// the model when ok returns false.
func Ensure[T any](desc string, ok func(T) bool) Check[T] { return Check[T]{desc: desc, ok: ok} }

// Given returns a precondition on the input: when ok returns false the
// call fails with a *PreconditionError before any request.
func Given[T any](desc string, ok func(T) bool) Check[T] { return Check[T]{desc: desc, ok: ok} }

// Description returns the check's description.
func (c Check[T]) Description() string { return c.desc }

// holds runs the predicate; a nil predicate holds, a panicking one fails.
func (c Check[T]) holds(v T) (ok bool) {
	if c.ok == nil {
		return true
	}
	defer func() {
		if r := recover(); r != nil {
			ok = false
		}
	}()
	return c.ok(v)
}

// NoRetries as Spec.Retries makes one attempt and no retry.
const NoRetries = -1

// DefaultRetries is the number of retries when Spec.Retries is 0.
const DefaultRetries = 3

// Spec declares a typed LLM function. In binds to the prompt by its
// JSON field names (a struct or a map: one "name: value" line per field;
// any other type: one line named "input"); Out is the output contract,
// whose JSON Schema (SchemaFor) is sent as the structured-output schema.
type Spec[In, Out any] struct {
	// Intent is the goal, the prompt's first line. Inputs are never
	// substituted into it: each is sent on its own line after it, so a
	// {placeholder} in the intent or a context line is a *CompileError.
	Intent string
	// Context lines follow the intent, in order.
	Context []string
	// Given are preconditions: a failure makes no call.
	Given []Check[In]
	// Ensure are postconditions: failures are fed back on retry.
	Ensure []Check[Out]
	// Model is the "provider/model" (empty: the Runtime's default).
	Model string
	// Temperature, when set, is sent with every request.
	Temperature *float64
	// Budget is the call's own envelope, intersected with the enclosing
	// flows' remainders.
	Budget Budget
	// Retries counts retries after the first attempt: 0 means
	// DefaultRetries, NoRetries none.
	Retries int
	// Cache selects the cache.
	Cache CacheMode
	// Quorum > 1 runs Quorum calls concurrently and takes the agreement
	//; it needs AgreeOn and Threshold.
	Quorum int
	// AgreeOn is the JSON field name of Out compared for agreement by
	// Quorum, Stable and Probable (empty: the whole answer); a name that
	// is not one of Out's JSON fields (its Go name, say) is a
	// *CompileError.
	AgreeOn string
	// Threshold is the number of agreeing answers required.
	Threshold int
	// Stable, in test mode, samples SampleN answers per Call and requires
	// them to agree (AssertStable(StableThreshold)).
	Stable bool
	// Refine wraps the call in the refine loop.
	Refine *Refine[Out]
	// MaxTokens caps each answer's output tokens (0: the provider's
	// default; a token budget lowers it further).
	MaxTokens int
	// Examples are few-shot pairs, shown in the prompt after the context
	// (and so covered by the prompt hash). An example whose Out does not
	// fit the output contract is a *CompileError.
	Examples []Example[In, Out]
	// Tools are the tools the model may call before it answers (NewTool):
	// the calls of one turn run concurrently, their results go back in the
	// next request, and the answer is checked as any other.
	Tools []Tool
	// MaxToolRounds bounds the tool rounds of one attempt (0:
	// DefaultMaxToolRounds); a model still calling tools after it ends the
	// Call with a *ToolLoopError.
	MaxToolRounds int
}

// Example is a few-shot pair: an input and the answer wanted for it.
type Example[In, Out any] struct {
	In  In
	Out Out
}

// StableThreshold is the agreement a Stable function needs in test mode.
const StableThreshold = 0.9

// Refine is the refine loop: after an answer that passes the
// contract, Until decides whether it is good enough; if not, Feedback's
// text is sent with the next iteration. Both run in the program, never
// in the model.
type Refine[Out any] struct {
	Until    func(Out) bool
	Feedback func(Out) string
	// MaxIterations bounds the loop (0: DefaultMaxIterations).
	MaxIterations int
}

// contractName names Out's contract in violations ("output contract
// 'Announcement' violation: …", as a spec's contract is named): Out's
// type name, else the function's name.
func contractName[Out any](fn string) string {
	if n := reflect.TypeFor[Out]().Name(); n != "" {
		return n
	}
	return fn
}

// DefaultMaxIterations bounds a Refine loop without MaxIterations.
const DefaultMaxIterations = 5

// Fn is a typed LLM function: define it once with NewInfer, call it
// concurrently from anywhere.
type Fn[In, Out any] struct {
	name      string
	spec      Spec[In, Out]
	schema    map[string]any
	contract  *contract.Checker // the one check of an answer every driver uses
	hash      string
	models    []string        // the infer loop's: the Spec's model (read only)
	opaque    map[string]bool // input JSON names tagged opaque
	order     []string        // input JSON names in declaration order (structs)
	retries   int
	confField string // "confidence" when Out has such a number field
	examples  []infer.Example
	tools     *toolSet
	media     []mediaField // input fields sent as media parts
}

// NewInfer defines a typed LLM function. It computes the output schema and
// the contract hash once; a type cycle or a tag SchemaFor refuses, Quorum
// without AgreeOn or Threshold, an AgreeOn that is not a JSON field of
// Out, or a {placeholder} in the intent or context (an opaque input's
// included) is a *CompileError.
func NewInfer[In, Out any](name string, s Spec[In, Out]) (*Fn[In, Out], error) {
	fail := func(format string, args ...any) error {
		return &CompileError{Function: name, Message: fmt.Sprintf(format, args...)}
	}
	if name == "" {
		return nil, fail("a function needs a name")
	}
	if s.Intent == "" {
		return nil, fail("a function needs an intent")
	}
	schema, err := SchemaFor[Out]()
	if err != nil {
		var ce *CompileError
		if errors.As(err, &ce) {
			ce.Function = name
		}
		return nil, err
	}
	if _, err := SchemaFor[In](); err != nil {
		return nil, fail("input: %v", err.(*CompileError).Message)
	}
	f := &Fn[In, Out]{name: name, spec: s, schema: schema, retries: s.Retries, models: []string{s.Model}}
	switch {
	case s.Retries == 0:
		f.retries = DefaultRetries
	case s.Retries < 0:
		f.retries = 0
	}
	canon, err := specs.CanonicalJSON(schema)
	if err != nil {
		return nil, fail("schema: %v", err)
	}
	f.hash = specs.Hash12(canon)
	if f.contract, err = contract.New(contractName[Out](name), schema); err != nil {
		return nil, fail("schema: %v", err)
	}
	if err := f.checkQuorum(); err != nil {
		return nil, err
	}
	f.order, f.opaque = inputShape(reflect.TypeFor[In]())
	f.media = mediaFields(reflect.TypeFor[In]())
	var opaque []infer.Binding
	for _, n := range slices.Sorted(maps.Keys(f.opaque)) {
		opaque = append(opaque, infer.Binding{Name: n, Opaque: true})
	}
	if _, err := (infer.PromptParts{Intent: s.Intent, Context: s.Context, Inputs: opaque}).Compile(); err != nil {
		return nil, fail("%v", err)
	}
	if err := f.checkPlaceholders(); err != nil {
		return nil, err
	}
	if err := f.compileExamples(); err != nil {
		return nil, err
	}
	if f.tools, err = compileTools(name, s.Tools, s.MaxToolRounds); err != nil {
		return nil, err
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		if p, ok := props["confidence"].(map[string]any); ok && (p["type"] == "number" || p["type"] == "integer") {
			f.confField = "confidence"
		}
	}
	return f, nil
}

// checkQuorum enforces rule 1's quorum conditions, and checks AgreeOn
// whenever it is set (Quorum, Stable, Probable compare on it).
func (f *Fn[In, Out]) checkQuorum() error {
	s := f.spec
	if s.AgreeOn != "" {
		if err := checkAgreeOn(reflect.TypeFor[Out](), f.schema, s.AgreeOn); err != nil {
			return &CompileError{Function: f.name, Message: err.Error()}
		}
	}
	if s.Quorum <= 1 {
		return nil
	}
	if s.AgreeOn == "" || s.Threshold <= 0 {
		return &CompileError{Function: f.name, Message: "quorum needs AgreeOn and Threshold"}
	}
	if s.Threshold > s.Quorum {
		return &CompileError{Function: f.name, Message: fmt.Sprintf("threshold %d is more than the quorum %d", s.Threshold, s.Quorum)}
	}
	return nil
}

// checkAgreeOn checks that field is a JSON field name of t, whose schema
// is schema (the answers are compared on it as JSON). A Go field name, or
// a near miss, is refused with the JSON name to use.
func checkAgreeOn(t reflect.Type, schema map[string]any, field string) error {
	props, ok := schema["properties"].(map[string]any)
	if !ok {
		if schema["type"] == "object" {
			return nil // a map: any key may be compared
		}
		return fmt.Errorf("AgreeOn %q: %s has no fields to compare (AgreeOn names a JSON field of a struct)", field, t)
	}
	if _, ok := props[field]; ok {
		return nil
	}
	names := slices.Sorted(maps.Keys(props))
	hint := ""
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		for _, jf := range jsonFields(t) {
			if jf.field.Name == field || strings.EqualFold(jf.name, field) {
				hint = fmt.Sprintf("did you mean %q? (AgreeOn names the JSON field, not the Go field %s)", jf.name, jf.field.Name)
				break
			}
		}
	}
	if hint == "" {
		hint = specs.DidYouMean(field, names)
	}
	msg := fmt.Sprintf("AgreeOn %q is not a JSON field of %s (fields: %v)", field, t, names)
	if hint != "" {
		msg += "; " + hint
	}
	return errors.New(msg)
}

// placeholderRe matches a {name} (or {{ name }}) placeholder.
var placeholderRe = regexp.MustCompile(`\{\{?\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}?\}`)

// checkPlaceholders refuses a {name} in the intent or a context line: the
// library never fills it (each input is sent on its own line after the
// intent), so it would reach the model as written.
func (f *Fn[In, Out]) checkPlaceholders() error {
	names := f.order
	if names == nil && reflect.TypeFor[In]().Kind() != reflect.Map {
		names = []string{"input"}
	}
	for i, text := range append([]string{f.spec.Intent}, f.spec.Context...) {
		m := placeholderRe.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		where := "the intent"
		if i > 0 {
			where = fmt.Sprintf("context line %d", i)
		}
		msg := fmt.Sprintf("%s has the placeholder %s, which the library never fills: each input is sent on its own line after the intent (Inputs:), so it would reach the model as written", where, m[0])
		switch {
		case slices.Contains(names, m[1]):
			msg += fmt.Sprintf("; write \"the %s\" without braces", m[1])
		case specs.DidYouMean(m[1], names) != "":
			msg += "; no input is named " + m[1] + ", " + specs.DidYouMean(m[1], names)
		default:
			msg += fmt.Sprintf("; no input is named %s (inputs: %v)", m[1], names)
		}
		return &CompileError{Function: f.name, Message: msg}
	}
	return nil
}

// MustInfer is NewInfer that panics on a *CompileError: for package-level
// definitions, whose errors are programming errors.
func MustInfer[In, Out any](name string, s Spec[In, Out]) *Fn[In, Out] {
	f, err := NewInfer(name, s)
	if err != nil {
		panic(err)
	}
	return f
}

// Name returns the function's name.
func (f *Fn[In, Out]) Name() string { return f.name }

// Schema returns the output contract as JSON Schema (a copy).
func (f *Fn[In, Out]) Schema() map[string]any {
	var m map[string]any
	b, _ := json.Marshal(f.schema)
	_ = json.Unmarshal(b, &m)
	return m
}

// ContractHash returns the output contract's hash: the first 12 hex
// digits of the SHA-256 of the schema's canonical JSON.
func (f *Fn[In, Out]) ContractHash() string { return f.hash }

// inputShape returns a struct's JSON field names in order and the opaque
// ones (nil for other types).
func inputShape(t reflect.Type) ([]string, map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	opaque := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return nil, opaque
	}
	var order []string
	for _, f := range jsonFields(t) {
		order = append(order, f.name)
		if st, err := parseTag(f.field.Tag.Get("stratum")); err == nil && st.opaque {
			opaque[f.name] = true
		}
	}
	return order, opaque
}

// bindings renders the input for the prompt: one binding per JSON field
// (declaration order for structs, sorted for maps), else one named
// "input"; and the input as JSON values for the trace.
func (f *Fn[In, Out]) bindings(in In) ([]infer.Binding, map[string]any, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: the input does not encode as JSON: %v", ErrStratum, f.name, err)
	}
	v, err := decodeExact(b) // an integer above 2^53 keeps its digits in the prompt
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: the input does not encode as JSON: %v", ErrStratum, f.name, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return []infer.Binding{{Name: "input", Value: v}}, map[string]any{"input": v}, nil
	}
	order := slices.Clone(f.order)
	var rest []string
	for k := range m {
		if !slices.Contains(order, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	var out []infer.Binding
	for _, k := range append(order, rest...) {
		if val, ok := m[k]; ok && !f.isMedia(k) {
			out = append(out, infer.Binding{Name: k, Value: val, Opaque: f.opaque[k]})
		}
	}
	return out, m, nil
}
