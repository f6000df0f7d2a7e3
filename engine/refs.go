package engine

import (
	"strings"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/py"
)

// resolveRef resolves one `$` reference against the flow inputs and the step
// outputs, with the original's error texts (upstream-behavior §2.5):
//
//   - `$.input.<f>`: only the first segment after `input` is used;
//   - `$.steps.<id>.output[.<k>…]`: a null output (a skipped step)
//     propagates null for any deeper path.
func resolveRef(st *state.FlowState, ref string) (any, error) {
	if !strings.HasPrefix(ref, "$") {
		return ref, nil
	}
	// The original strips exactly two characters (the "$." prefix).
	rest := ""
	if len(ref) > 2 {
		rest = ref[2:]
	}
	if rest == "" {
		return nil, execErrorf("Empty $ reference: %s", py.ReprString(ref))
	}
	parts := strings.Split(rest, ".")
	switch parts[0] {
	case "input":
		if len(parts) < 2 {
			return nil, execErrorf("$.input requires a field name: %s", py.ReprString(ref))
		}
		v, ok := st.Inputs[parts[1]]
		if !ok {
			return nil, execErrorf("$.input.%s not found in flow inputs", parts[1])
		}
		return v, nil
	case "steps":
		if len(parts) < 3 {
			return nil, execErrorf("$.steps requires $.steps.<id>.output: %s", py.ReprString(ref))
		}
		stepID := parts[1]
		v, ok := st.StepOutputs[stepID]
		if !ok {
			return nil, execErrorf("$.steps.%s not yet executed — check depends_on ordering", stepID)
		}
		if parts[2] != "output" {
			return nil, execErrorf("Expected '$.steps.<id>.output[.<field>]', got %s", py.ReprString(ref))
		}
		for _, key := range parts[3:] {
			if v == nil {
				return nil, nil // a skipped step's null output propagates
			}
			m, isMap := v.(map[string]any)
			if !isMap {
				return nil, execErrorf("Attribute '%s' not found on $.steps.%s.output", key, stepID)
			}
			next, found := m[key]
			if !found {
				return nil, execErrorf("Key '%s' not found in $.steps.%s.output — available keys: %s", key, stepID, py.ReprStrings(sortedKeys(m)))
			}
			v = next
		}
		return v, nil
	}
	return nil, execErrorf("Unknown $ prefix '%s' in %s", parts[0], py.ReprString(ref))
}

// resolveValue resolves a step input value: strings starting with `$` are
// references, everything else is a literal.
func resolveValue(st *state.FlowState, value string) (any, error) { return resolveRef(st, value) }

// resolveInputs resolves every input of a step.
func resolveInputs(st *state.FlowState, step *specs.Step) (map[string]any, error) {
	out := make(map[string]any, len(step.Inputs))
	for _, in := range step.Inputs {
		v, err := resolveValue(st, in.Value)
		if err != nil {
			return nil, err
		}
		out[in.Name] = v
	}
	return out, nil
}

// refResolver is the skip_if resolver: unresolvable references are null.
func refResolver(st *state.FlowState) specs.RefResolver {
	return func(ref string) (any, bool) {
		v, err := resolveRef(st, ref)
		if err != nil {
			return nil, false
		}
		return v, true
	}
}
