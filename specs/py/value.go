package py

import (
	"encoding/json"
	"math"
	"math/bits"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Normalize converts a value coming from JSON or Go into the expression
// value types: json.Number and every Go integer become int (or float64 when
// they do not fit); integral float64 values (as produced by encoding/json)
// become int so that str(result.count) is "4" as in Python; other slices and
// string-keyed maps become []any and map[string]any; nil pointers and
// interfaces become nil. Containers are copied only when something inside
// changes. The error is non-nil only for a value nested deeper than 200
// levels.
func Normalize(v any) (any, error) {
	n, _, err := normalize(v, 0)
	return n, err
}

// AsValue is Normalize for values that are almost certainly normalised
// already (what an expression computed, or arguments taken from a
// normalised environment): a value of one of the value types is returned as
// it is, without looking inside containers; anything else is normalised, or
// returned unchanged when it cannot be.
func AsValue(v any) any {
	switch v.(type) {
	case nil, bool, int, float64, string, []any, map[string]any:
		return v
	}
	n, _, err := normalize(v, 0)
	if err != nil {
		return v
	}
	return n
}

// normalize is Normalize at a nesting depth; changed reports whether the
// result differs from v.
func normalize(v any, depth int) (n any, changed bool, err error) {
	if depth > maxDepth {
		return nil, false, errTooDeep
	}
	switch x := v.(type) {
	case nil, bool, int, string:
		return v, false, nil
	case float64:
		if i, ok := floatAsInt(x); ok {
			return i, true, nil
		}
		return v, false, nil
	case json.Number:
		return normalizeNumber(x), true, nil
	case []any:
		var out []any
		for i, e := range x {
			n, changed, err := normalize(e, depth+1)
			if err != nil {
				return nil, false, err
			}
			if changed && out == nil {
				out = make([]any, len(x))
				copy(out, x)
			}
			if out != nil {
				out[i] = n
			}
		}
		if out != nil {
			return out, true, nil
		}
		return v, false, nil
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			n, changed, err := normalize(e, depth+1)
			if err != nil {
				return nil, false, err
			}
			if changed && out == nil {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			if out != nil {
				out[k] = n
			}
		}
		if out != nil {
			return out, true, nil
		}
		return v, false, nil
	}
	return normalizeReflect(v, depth)
}

// normalizeNumber is a JSON number as an int when it is written as one (or
// as a float that is integral and written without '.', 'e' or 'E'), else a
// float64 (a string when it does not parse).
func normalizeNumber(x json.Number) any {
	if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
		return int(i)
	}
	f, err := strconv.ParseFloat(string(x), 64)
	if err != nil {
		return string(x)
	}
	if i, ok := floatAsInt(f); ok && !strings.ContainsAny(string(x), ".eE") {
		return i
	}
	return f
}

// normalizeReflect is normalize for the values of other Go types: sized
// ints and floats, named strings and bools, slices, arrays, maps with string
// keys and pointers become the plain types; anything else is kept.
func normalizeReflect(v any, depth int) (n any, changed bool, err error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int()), true, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return float64(u), true, nil
		}
		return int(u), true, nil
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if i, ok := floatAsInt(f); ok {
			return i, true, nil
		}
		return f, true, nil
	case reflect.Bool:
		return rv.Bool(), true, nil
	case reflect.String:
		return rv.String(), true, nil
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return []any{}, true, nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			n, _, err := normalize(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, false, err
			}
			out[i] = n
		}
		return out, true, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return v, false, nil
		}
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			n, _, err := normalize(it.Value().Interface(), depth+1)
			if err != nil {
				return nil, false, err
			}
			out[it.Key().String()] = n
		}
		return out, true, nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, true, nil
		}
		n, _, err := normalize(rv.Elem().Interface(), depth+1)
		return n, true, err
	}
	return v, false, nil
}

// floatAsInt reports whether f is an integral value exactly representable as
// an int (|f| ≤ 2^53).
func floatAsInt(f float64) (int, bool) {
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	if f == 0 && math.Signbit(f) {
		return 0, true
	}
	return int(f), true
}

// typeName is the Python type name of a normalised value.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	case []byte:
		return "bytes"
	}
	return "object"
}

// Truth is Python's truth value of v: None, False, 0, 0.0, "" and empty
// lists and dicts are false; everything else is true.
func Truth(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case []byte:
		return len(x) > 0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map, reflect.Array, reflect.String:
		return rv.Len() > 0
	case reflect.Pointer, reflect.Interface:
		return !rv.IsNil()
	}
	return true
}

// number returns v as a number: bools count as 0/1 as in Python.
func number(v any) (i int, f float64, isInt, ok bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, 1, true, true
		}
		return 0, 0, true, true
	case int:
		return x, float64(x), true, true
	case float64:
		return 0, x, false, true
	}
	return 0, 0, false, false
}

// length is Python len(v).
func length(w *Work, v any) (any, error) {
	switch x := v.(type) {
	case string:
		if err := w.spendBytes(len(x)); err != nil {
			return nil, err
		}
		return utf8.RuneCountInString(x), nil
	case []any:
		return len(x), nil
	case map[string]any:
		return len(x), nil
	case []byte:
		return len(x), nil
	}
	return nil, Errorf("object of type '%s' has no len()", typeName(v))
}

// iterate returns the elements Python would iterate over: list items, dict
// keys (sorted), string characters. Building a new list (of keys or
// characters) is paid for; a list is returned as it is.
func iterate(w *Work, v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case map[string]any:
		// Sorting makes about n·log2(n) key comparisons.
		if err := w.spendElems(len(x) * (1 + bits.Len(uint(len(x))))); err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = k
		}
		return out, nil
	case string:
		// Two elements (a slot and a boxed string) per character.
		if err := w.spendBytes(len(x)); err != nil {
			return nil, err
		}
		n := utf8.RuneCountInString(x)
		if err := w.spendElems(2 * n); err != nil {
			return nil, err
		}
		out := make([]any, 0, n)
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	}
	return nil, Errorf("'%s' object is not iterable", typeName(v))
}

// Iterate returns the elements a comprehension iterates over (as iterate)
// and pays for visiting each of them and for the list the comprehension
// builds from them.
func Iterate(w *Work, v any) ([]any, error) {
	xs, err := iterate(w, v)
	if err != nil {
		return nil, err
	}
	if err := w.spendElems(2 * len(xs)); err != nil {
		return nil, err
	}
	return xs, nil
}
