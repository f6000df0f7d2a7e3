package engine

import (
	"strings"

	"github.com/stratum-go/stratum/specs"
)

// resolveRef resolves one `$` reference against the flow inputs and the step
// outputs, with the original's error texts (upstream-behavior §2.5):
//
//   - `$.input.<f>`: only the first segment after `input` is used;
//   - `$.steps.<id>.output[.<k>…]`: a null output (a skipped step)
//     propagates null for any deeper path.
func resolveRef(st *FlowState, ref string) (any, error) {
	switch {
	case strings.HasPrefix(ref, "$.input."):
		key, _, _ := strings.Cut(strings.TrimPrefix(ref, "$.input."), ".")
		v, ok := st.Inputs[key]
		if !ok {
			return nil, execErrorf("$.input.%s not found in flow inputs", key)
		}
		return v, nil
	case strings.HasPrefix(ref, "$.steps."):
		parts := strings.Split(strings.TrimPrefix(ref, "$.steps."), ".")
		stepID := parts[0]
		v, ok := st.StepOutputs[stepID]
		if !ok {
			return nil, execErrorf("$.steps.%s not yet executed — check depends_on ordering", stepID)
		}
		if len(parts) < 2 || parts[1] != "output" {
			return nil, execErrorf("Expected '$.steps.%s.output[.<field>]', got '%s'", stepID, ref)
		}
		for _, key := range parts[2:] {
			if v == nil {
				return nil, nil
			}
			m, isMap := v.(map[string]any)
			if !isMap {
				return nil, execErrorf("Key '%s' not found in $.steps.%s.output — available keys: []", key, stepID)
			}
			next, found := m[key]
			if !found {
				return nil, execErrorf("Key '%s' not found in $.steps.%s.output — available keys: %s", key, stepID, pyStrList(sortedKeys(m)))
			}
			v = next
		}
		return v, nil
	}
	return nil, execErrorf("Unsupported reference '%s': expected '$.input.<field>' or '$.steps.<id>.output[.<field>]'", ref)
}

// resolveValue resolves a step input value: strings starting with `$` are
// references, everything else is a literal.
func resolveValue(st *FlowState, value string) (any, error) {
	if strings.HasPrefix(value, "$") {
		return resolveRef(st, value)
	}
	return value, nil
}

// resolveInputs resolves every input of a step.
func resolveInputs(st *FlowState, step *specs.Step) (map[string]any, error) {
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
func refResolver(st *FlowState) specs.RefResolver {
	return func(ref string) (any, bool) {
		v, err := resolveRef(st, ref)
		if err != nil {
			return nil, false
		}
		return v, true
	}
}
