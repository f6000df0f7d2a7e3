package py

import (
	"strings"
	"unicode/utf8"
)

// Get is obj.name and obj[key] with Python-like errors: a dict by string
// key (a missing key is an error "<desc> has no field 'k'", not None), a
// list or str by integer index (negative from the end, code points for
// strings). desc names obj in messages, e.g. "result.items".
func Get(w *Work, obj, key any, desc string) (any, error) {
	switch x := obj.(type) {
	case map[string]any:
		k, ok := key.(string)
		if !ok {
			return nil, Errorf("%s has no key %s", desc, describeKey(key))
		}
		v, ok := x[k]
		if !ok {
			return nil, Errorf("%s has no field '%s'", desc, k)
		}
		return v, nil
	case []any:
		i, ok := indexArg(key)
		if !ok {
			if _, isStr := key.(string); isStr {
				return nil, Errorf("%s is a list, not a mapping (cannot read %s)", desc, describeKey(key))
			}
			return nil, Errorf("%s: list indices must be integers, not %s", desc, typeName(key))
		}
		if i < 0 {
			i += len(x)
		}
		if i < 0 || i >= len(x) {
			return nil, Errorf("%s index %s out of range (length %d)", desc, describeKey(key), len(x))
		}
		return x[i], nil
	case string:
		i, ok := indexArg(key)
		if !ok {
			return nil, Errorf("%s is a str, not a mapping (cannot read %s)", desc, describeKey(key))
		}
		if err := w.spendBytes(len(x)); err != nil {
			return nil, err
		}
		n := utf8.RuneCountInString(x)
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return nil, Errorf("%s index %s out of range (length %d)", desc, describeKey(key), n)
		}
		r, _ := utf8.DecodeRuneInString(x[runeOffset(x, i):])
		return string(r), nil
	case nil:
		return nil, Errorf("%s is None (cannot read %s)", desc, describeKey(key))
	}
	return nil, Errorf("%s is a %s, not a mapping (cannot read %s)", desc, typeName(obj), describeKey(key))
}

// Slice is Python obj[from:to] on lists and strings (code points), with
// negative and out-of-range bounds clamped as in Python; a nil bound is the
// start or the end. desc names obj in messages.
func Slice(w *Work, obj, from, to any, desc string) (any, error) {
	n := 0
	s, isStr := obj.(string)
	switch x := obj.(type) {
	case []any:
		n = len(x)
	case string:
		if err := w.spendBytes(len(x)); err != nil {
			return nil, err
		}
		n = utf8.RuneCountInString(x)
	default:
		return nil, Errorf("%s is a %s, which cannot be sliced", desc, typeName(obj))
	}
	bound := func(v any, def int) (int, error) {
		if v == nil {
			return def, nil
		}
		i, ok := indexArg(v)
		if !ok {
			return 0, Errorf("slice indices must be integers or None, not %s", typeName(v))
		}
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n), nil
	}
	lo, err := bound(from, 0)
	if err != nil {
		return nil, err
	}
	hi, err := bound(to, n)
	if err != nil {
		return nil, err
	}
	hi = max(hi, lo)
	if isStr {
		sub := s[runeOffset(s, lo):runeOffset(s, hi)]
		if !utf8.ValidString(sub) {
			sub = string([]rune(sub)) // each invalid byte reads as U+FFFD
		}
		return sub, nil
	}
	if err := w.spendElems(hi - lo); err != nil {
		return nil, err
	}
	out := make([]any, hi-lo)
	copy(out, obj.([]any)[lo:hi])
	return out, nil
}

// runeOffset is the byte offset of the i-th code point of s (len(s) for i
// at or past the end).
func runeOffset(s string, i int) int {
	if i <= 0 {
		return 0
	}
	for off := range s {
		if i == 0 {
			return off
		}
		i--
	}
	return len(s)
}

// indexArg returns an index operand as an int (bools count as 0 and 1).
func indexArg(k any) (int, bool) {
	switch x := k.(type) {
	case int:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// describeKey formats an attribute or key for messages.
func describeKey(k any) string {
	if s, ok := k.(string); ok {
		return "'" + s + "'"
	}
	var b strings.Builder
	if err := repr(nil, &b, k, 0); err != nil {
		return "?"
	}
	return b.String()
}
