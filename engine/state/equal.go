package state

// EqualJSON reports whether v (a value the engine holds) equals old, a
// value decoded from JSON: only JSON's own types (nil, bool, float64,
// string, map[string]any, []any) compare; any other kind is reported
// different. A store uses it to write again only the parts of a state that
// changed: a value seen as changed is written again, slower but never
// wrong.
func EqualJSON(v, old any) bool {
	switch v := v.(type) {
	case nil:
		return old == nil
	case bool:
		o, ok := old.(bool)
		return ok && o == v
	case float64:
		o, ok := old.(float64)
		return ok && o == v
	case string:
		o, ok := old.(string)
		return ok && o == v
	case map[string]any:
		o, ok := old.(map[string]any)
		if !ok || len(o) != len(v) || v == nil {
			return false
		}
		for k, x := range v {
			y, ok := o[k]
			if !ok || !EqualJSON(x, y) {
				return false
			}
		}
		return true
	case []any:
		o, ok := old.([]any)
		if !ok || len(o) != len(v) || v == nil {
			return false
		}
		for i := range v {
			if !EqualJSON(v[i], o[i]) {
				return false
			}
		}
		return true
	}
	return false
}
