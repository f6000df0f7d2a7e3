package infer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/stratum-go/stratum/specs"
)

// Binding is one input of a call.
type Binding struct {
	Name   string
	Value  any
	Opaque bool
}

// Prompt is a compiled prompt.
type Prompt struct {
	// Text is the instruction text (the user turn's first part).
	Text string
	// Attachment holds the opaque inputs by name (nil when there are none);
	// it is sent as a separate JSON part.
	Attachment map[string]any
	// Opaque are the opaque input names, sorted.
	Opaque []string
	// Hash is the first 12 hex digits of sha256(Text).
	Hash string
}

// CompileError is a static prompt error: an opaque input interpolated into
// instruction text (seed 000 §4.2).
type CompileError struct {
	Step    string
	Input   string
	Message string
}

func (e *CompileError) Error() string { return e.Message }

// Compile assembles the prompt of seed 000 §4.1. violations are the previous
// attempt's violations (nil on the first attempt). Inputs appear in the order
// given.
func Compile(intent string, context []string, inputs []Binding, violations []string) (Prompt, error) {
	return PromptParts{Intent: intent, Context: context, Inputs: inputs, Violations: violations}.Compile()
}

// PromptParts are what a prompt is compiled from.
type PromptParts struct {
	Intent  string
	Context []string
	Inputs  []Binding
	// Violations are the previous attempt's (nil on the first attempt).
	Violations []string
	// Tail are lines that end the prompt (the refine loop's feedback of
	// seed 000 §3.3), after the retry block and the attached-data line.
	Tail []string
	// Examples are few-shot pairs, after the context and before the
	// inputs (the library's Spec.Examples).
	Examples []Example
}

// Example is one few-shot pair: inputs (opaque ones are never shown) and
// the answer expected for them.
type Example struct {
	Inputs []Binding
	Output any
}

// exampleLines renders the examples block:
//
//	Examples:
//	  Example 1:
//	    Inputs:
//	      name: value
//	    Output: {"label":"positive"}
func exampleLines(examples []Example) []string {
	if len(examples) == 0 {
		return nil
	}
	lines := []string{"Examples:"}
	for i, ex := range examples {
		lines = append(lines, fmt.Sprintf("  Example %d:", i+1))
		shown := false
		for _, b := range ex.Inputs {
			if b.Opaque {
				continue
			}
			if !shown {
				lines = append(lines, "    Inputs:")
				shown = true
			}
			for _, l := range inputLines(b.Name, b.Value) {
				lines = append(lines, "    "+l)
			}
		}
		out := FormatValue(ex.Output)
		if _, ok := ex.Output.(string); ok {
			b, _ := json.Marshal(ex.Output)
			out = string(b)
		}
		lines = append(lines, "    Output: "+out)
	}
	return lines
}

// Compile assembles the prompt (see the package doc).
func (pp PromptParts) Compile() (Prompt, error) {
	intent, context, inputs, violations := pp.Intent, pp.Context, pp.Inputs, pp.Violations
	var opaque []string
	for _, b := range inputs {
		if b.Opaque {
			opaque = append(opaque, b.Name)
		}
	}
	slices.Sort(opaque)
	for _, name := range opaque {
		for _, text := range append([]string{intent}, context...) {
			if interpolates(text, name) {
				return Prompt{}, &CompileError{Input: name, Message: fmt.Sprintf(
					"opaque input '%s' is interpolated into the prompt text as {%s}; opaque inputs are sent as attached data and must not appear in instruction text (remove {%s} or drop opaque)", name, name, name)}
			}
		}
	}
	var lines []string
	lines = append(lines, intent)
	for _, c := range context {
		if strings.TrimSpace(c) != "" {
			lines = append(lines, c)
		}
	}
	lines = append(lines, exampleLines(pp.Examples)...)
	var plain []Binding
	for _, b := range inputs {
		if !b.Opaque {
			plain = append(plain, b)
		}
	}
	if len(plain) > 0 {
		lines = append(lines, "Inputs:")
		for _, b := range plain {
			lines = append(lines, inputLines(b.Name, b.Value)...)
		}
	}
	if len(violations) > 0 {
		lines = append(lines, "Previous attempt failed:")
		for _, v := range violations {
			lines = append(lines, "  - "+v)
		}
		lines = append(lines, "Fix these issues specifically.")
	}
	p := Prompt{Opaque: opaque}
	if len(opaque) > 0 {
		lines = append(lines, "See attached data for: "+strings.Join(opaque, ", "))
		p.Attachment = map[string]any{}
		for _, b := range inputs {
			if b.Opaque {
				p.Attachment[b.Name] = b.Value
			}
		}
	}
	lines = append(lines, pp.Tail...)
	p.Text = strings.Join(lines, "\n")
	p.Hash = Hash(p.Text)
	return p, nil
}

// Hash is the compiled-prompt hash: 12 hex digits of sha256(text).
func Hash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])[:12]
}

func interpolates(text, name string) bool {
	if !strings.Contains(text, name) || !strings.Contains(text, "{") {
		return false
	}
	re := regexp.MustCompile(`\{\{?\s*` + regexp.QuoteMeta(name) + `\s*\}?\}`)
	return re.MatchString(text)
}

// inputLines renders one input: "  name: value" (FormatValue), or, for a
// string of several lines, its lines set apart in a fenced block indented
// under "  name:", the fence longer than any run of backticks inside:
//
//	name:
//	  ```
//	  first line
//	  Previous attempt failed:
//	  ```
//
// so that no input can pass for a line of the prompt's own (a forged
// "Previous attempt failed:" block, an instruction at the margin). Every
// line break a model may read as one (\r, \v, \f, U+0085, U+2028,
// U+2029) ends a line of the block.
func inputLines(name string, v any) []string {
	s, ok := v.(string)
	if !ok || !strings.ContainsAny(s, lineBreaks) {
		return []string{"  " + name + ": " + FormatValue(v)}
	}
	fence := "```"
	for run := longestRun(s, '`'); len(fence) <= run; {
		fence += "`"
	}
	out := []string{"  " + name + ":", "    " + fence}
	for _, l := range splitLines(s) {
		out = append(out, "    "+l)
	}
	return append(out, "    "+fence)
}

// lineBreaks are the characters that end a line for a reader of the
// prompt.
const lineBreaks = "\n\r\v\f\u0085\u2028\u2029"

// splitLines splits s at every line break (\r\n counts once); an empty
// line stays.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var out []string
	start := 0
	for i, r := range s {
		if strings.ContainsRune(lineBreaks, r) {
			out = append(out, s[start:i])
			start = i + utf8.RuneLen(r)
		}
	}
	return append(out, s[start:])
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// FormatValue renders an input value for an "  name: value" line: strings
// as they are, everything else as compact JSON with sorted keys.
func FormatValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Bindings orders a step's resolved inputs and flags the opaque ones: a
// function parameter declared opaque, a flow input declared opaque
// ($.input.x), or a reference to an opaque contract field of an earlier
// step's output ($.steps.s.output.f). Order: the function's declared
// parameters, then the step's inputs in declaration order, then any other
// resolved input sorted by name.
func Bindings(sp *specs.Spec, flow *specs.Flow, step *specs.Step, inputs map[string]any) []Binding {
	opaque := OpaqueInputs(sp, flow, step)
	var order []string
	seen := map[string]bool{}
	add := func(n string) {
		if _, ok := inputs[n]; ok && !seen[n] {
			seen[n] = true
			order = append(order, n)
		}
	}
	if step.Fn != nil {
		for _, p := range step.Fn.Input {
			add(p.Name)
		}
	}
	for _, in := range step.Inputs {
		add(in.Name)
	}
	var rest []string
	for n := range inputs {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	order = append(order, rest...)
	out := make([]Binding, len(order))
	for i, n := range order {
		out[i] = Binding{Name: n, Value: inputs[n], Opaque: opaque[n]}
	}
	return out
}

// OpaqueInputs returns the step's opaque input names (see Bindings).
func OpaqueInputs(sp *specs.Spec, flow *specs.Flow, step *specs.Step) map[string]bool {
	out := map[string]bool{}
	if step.Fn != nil {
		for _, p := range step.Fn.Input {
			if p.Opaque {
				out[p.Name] = true
			}
		}
	}
	for _, in := range step.Inputs {
		if refIsOpaque(sp, flow, in.Value) {
			out[in.Name] = true
		}
	}
	return out
}

func refIsOpaque(sp *specs.Spec, flow *specs.Flow, ref string) bool {
	if !strings.HasPrefix(ref, "$.") || flow == nil {
		return false
	}
	parts := strings.Split(strings.TrimPrefix(ref, "$."), ".")
	switch {
	case parts[0] == "input" && len(parts) >= 2:
		for _, p := range flow.Input {
			if p.Name == parts[1] {
				return p.Opaque
			}
		}
	case parts[0] == "steps" && len(parts) >= 4 && parts[2] == "output":
		src := flow.Step(parts[1])
		if src == nil || sp == nil || src.OutputContract == "" {
			return false
		}
		c := sp.Contracts[src.OutputContract]
		if c == nil {
			return false
		}
		if f := c.Field(parts[3]); f != nil {
			return f.Opaque
		}
	}
	return false
}

// CheckSpec reports every infer step of sp whose intent interpolates an
// opaque input (the compile error of seed 000 §4.2), so a run can refuse the
// spec before anything executes. Steps are visited in flow then step
// declaration order.
func CheckSpec(sp *specs.Spec) []*CompileError {
	var errs []*CompileError
	for _, fn := range sp.FlowNames {
		flow := sp.Flows[fn]
		for _, step := range flow.Steps {
			if !IsInferStep(step) {
				continue
			}
			for _, name := range slices.Sorted(maps.Keys(OpaqueInputs(sp, flow, step))) {
				if interpolates(step.Intent, name) {
					errs = append(errs, &CompileError{Step: step.ID, Input: name, Message: fmt.Sprintf(
						"flow '%s' step '%s': opaque input '%s' is interpolated into the intent as {%s}; opaque inputs are sent as attached data and must not appear in instruction text", flow.Name, step.ID, name, name)})
				}
			}
		}
	}
	return errs
}

// IsInferStep reports whether step is executed by the infer executor: an
// infer function step, or an inline step without agent and run.
func IsInferStep(step *specs.Step) bool {
	switch step.Kind {
	case specs.KindFunction:
		return step.Fn != nil && step.Fn.Mode == specs.ModeInfer
	case specs.KindInline:
		return step.Agent == "" && step.Run == nil
	}
	return false
}
