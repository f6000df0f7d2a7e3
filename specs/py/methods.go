package py

import (
	"errors"
	"iter"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// method is a Python method allowed on values.
type method struct {
	min, max int
	fn       func(w *Work, recv any, args []any) (any, error)
}

var methods = map[string]method{
	"lower": {0, 0, strMethod(func(w *Work, s string, _ []any) (any, error) {
		if err := w.spendBytes(len(s)); err != nil {
			return nil, err
		}
		return strings.ToLower(s), nil
	})},
	"upper": {0, 0, strMethod(func(w *Work, s string, _ []any) (any, error) {
		if err := w.spendBytes(len(s)); err != nil {
			return nil, err
		}
		return strings.ToUpper(s), nil
	})},
	"strip": {0, 1, strMethod(func(w *Work, s string, a []any) (any, error) {
		return stripWith(w, s, a, strings.TrimFunc, unicode.IsSpace)
	})},
	"lstrip": {0, 1, strMethod(func(w *Work, s string, a []any) (any, error) {
		return stripWith(w, s, a, strings.TrimLeftFunc, isASCIISpace)
	})},
	"rstrip": {0, 1, strMethod(func(w *Work, s string, a []any) (any, error) {
		return stripWith(w, s, a, strings.TrimRightFunc, isASCIISpace)
	})},
	"startswith": {1, 1, strMethod(func(w *Work, s string, a []any) (any, error) {
		return affix(w, s, a[0], strings.HasPrefix, "startswith")
	})},
	"endswith": {1, 1, strMethod(func(w *Work, s string, a []any) (any, error) {
		return affix(w, s, a[0], strings.HasSuffix, "endswith")
	})},
	"split": {0, 1, strMethod(split)},
	"join": {1, 1, strMethod(func(w *Work, s string, a []any) (any, error) {
		items, err := iterate(w, a[0])
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(items))
		n := 0
		for i, it := range items {
			p, ok := it.(string)
			if !ok {
				return nil, Errorf("sequence item %d: expected str instance, %s found", i, typeName(it))
			}
			parts[i] = p
			n += len(p) + len(s)
			if n > maxBuilt {
				return nil, errTooLarge
			}
		}
		if err := w.spendBytes(n); err != nil {
			return nil, err
		}
		return strings.Join(parts, s), nil
	})},
	"replace": {2, 2, strMethod(func(w *Work, s string, a []any) (any, error) {
		o, ok1 := a[0].(string)
		n, ok2 := a[1].(string)
		if !ok1 || !ok2 {
			return nil, Errorf("replace() arguments must be str")
		}
		// Counting the matches and building the result each read s.
		if err := w.spendBytes(2*len(s) + len(o)); err != nil {
			return nil, err
		}
		if o != "" && len(n) > len(o) && int64(strings.Count(s, o))*int64(len(n)-len(o))+int64(len(s)) > maxBuilt {
			return nil, errTooLarge
		}
		if o == "" && int64(len(s)+1)*int64(len(n))+int64(len(s)) > maxBuilt {
			return nil, errTooLarge
		}
		return strings.ReplaceAll(s, o, n), nil
	})},
	"find": {1, 1, strMethod(func(w *Work, s string, a []any) (any, error) {
		sub, ok := a[0].(string)
		if !ok {
			return nil, Errorf("must be str, not %s", typeName(a[0]))
		}
		if err := w.spendBytes(len(s) + len(sub)); err != nil {
			return nil, err
		}
		i := strings.Index(s, sub)
		if i < 0 {
			return -1, nil
		}
		return utf8.RuneCountInString(s[:i]), nil
	})},
	"count": {1, 1, func(w *Work, recv any, a []any) (any, error) {
		switch x := recv.(type) {
		case string:
			sub, ok := a[0].(string)
			if !ok {
				return nil, Errorf("must be str, not %s", typeName(a[0]))
			}
			if err := w.spendBytes(len(x) + len(sub)); err != nil {
				return nil, err
			}
			return strings.Count(x, sub), nil
		case []any:
			n := 0
			for _, e := range x {
				eq, err := equal(w, e, a[0], 0)
				if err != nil {
					return nil, err
				}
				if eq {
					n++
				}
			}
			return n, nil
		}
		return nil, Errorf("'%s' object has no attribute 'count'", typeName(recv))
	}},
	"get": {1, 2, dictMethod(func(w *Work, m map[string]any, a []any) (any, error) {
		k, ok := a[0].(string)
		if ok {
			if v, found := m[k]; found {
				return v, nil
			}
		}
		if len(a) == 2 {
			return a[1], nil
		}
		return nil, nil
	})},
	"keys": {0, 0, dictMethod(func(w *Work, m map[string]any, _ []any) (any, error) { return iterate(w, m) })},
	"values": {0, 0, dictMethod(func(w *Work, m map[string]any, _ []any) (any, error) {
		keys, err := iterate(w, m)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = m[k.(string)]
		}
		return out, nil
	})},
	"items": {0, 0, dictMethod(func(w *Work, m map[string]any, _ []any) (any, error) {
		keys, err := iterate(w, m)
		if err != nil {
			return nil, err
		}
		if err := w.spendElems(2 * len(keys)); err != nil {
			return nil, err
		}
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = []any{k, m[k.(string)]}
		}
		return out, nil
	})},
}

// split is str.split(sep=None): the parts are counted and paid for before
// any is kept, so a string of many tiny parts stops at the budget instead
// of allocating them all.
func split(w *Work, s string, a []any) (any, error) {
	// The sequences are single-use: parts returns a new one.
	parts := func() iter.Seq[string] { return strings.FieldsSeq(s) }
	sep := ""
	if len(a) > 0 && a[0] != nil {
		var ok bool
		if sep, ok = a[0].(string); !ok {
			return nil, Errorf("must be str or None, not %s", typeName(a[0]))
		}
		if sep == "" {
			return nil, Errorf("empty separator")
		}
		parts = func() iter.Seq[string] { return strings.SplitSeq(s, sep) }
	}
	// Two passes over s: counting the parts, then keeping them.
	if err := w.spendBytes(2 * (len(s) + len(sep))); err != nil {
		return nil, err
	}
	n := 0
	for range parts() {
		n++
	}
	if err := w.spendElems(2 * n); err != nil { // a slot and a boxed string each
		return nil, err
	}
	out := make([]any, 0, n)
	for p := range parts() {
		out = append(out, p)
	}
	return out, nil
}

// IsMethod reports whether name is a method expressions may call.
func IsMethod(name string) bool {
	_, ok := methods[name]
	return ok
}

// MethodNames lists the methods expressions may call, sorted.
func MethodNames() []string {
	out := make([]string, 0, len(methods))
	for n := range methods {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// CallMethod is recv.name(args…) for the allowed string, list and dict
// methods, with Python's argument-count errors; desc names recv in
// messages.
func CallMethod(w *Work, recv any, name, desc string, args []any) (any, error) {
	m, ok := methods[name]
	if !ok {
		return nil, Errorf("method '%s' is not allowed", name)
	}
	if len(args) < m.min || len(args) > m.max {
		return nil, Errorf("%s() %s", name, ArityText(m.min, m.max, len(args)))
	}
	out, err := m.fn(w, recv, args)
	if err == errNoMethod {
		if recv == nil {
			return nil, Errorf("%s is None (cannot call %s())", desc, name)
		}
		return nil, Errorf("%s is a %s, which has no method %s()", desc, typeName(recv), name)
	}
	return out, err
}

// errNoMethod: the receiver's type does not have the method.
var errNoMethod = errors.New("no such method")

func strMethod(f func(w *Work, s string, args []any) (any, error)) func(*Work, any, []any) (any, error) {
	return func(w *Work, recv any, args []any) (any, error) {
		s, ok := recv.(string)
		if !ok {
			return nil, errNoMethod
		}
		return f(w, s, args)
	}
}

func dictMethod(f func(w *Work, m map[string]any, args []any) (any, error)) func(*Work, any, []any) (any, error) {
	return func(w *Work, recv any, args []any) (any, error) {
		m, ok := recv.(map[string]any)
		if !ok {
			return nil, errNoMethod
		}
		return f(w, m, args)
	}
}

// stripWith is strip, lstrip or rstrip (trim is strings.TrimFunc,
// TrimLeftFunc or TrimRightFunc): space without an argument, else the
// characters of the argument, looked up in a set so that a long argument
// costs its length once rather than once per character stripped.
func stripWith(w *Work, s string, a []any, trim func(string, func(rune) bool) string, space func(rune) bool) (any, error) {
	if len(a) == 0 || a[0] == nil {
		if err := w.spendBytes(len(s)); err != nil {
			return nil, err
		}
		return trim(s, space), nil
	}
	chars, ok := a[0].(string)
	if !ok {
		return nil, Errorf("strip arg must be None or str")
	}
	if err := w.spendBytes(len(s) + len(chars)); err != nil {
		return nil, err
	}
	set := map[rune]bool{}
	for _, r := range chars {
		set[r] = true
	}
	return trim(s, func(r rune) bool { return set[r] }), nil
}

// isASCIISpace is the whitespace lstrip() and rstrip() remove without an
// argument.
func isASCIISpace(r rune) bool { return strings.ContainsRune(" \t\n\r\v\f", r) }

func affix(w *Work, s string, arg any, test func(string, string) bool, name string) (any, error) {
	switch x := arg.(type) {
	case string:
		if err := w.spendCompare(len(x)); err != nil {
			return nil, err
		}
		return test(s, x), nil
	case []any:
		for _, e := range x {
			p, ok := e.(string)
			if !ok {
				return nil, Errorf("tuple for %s must only contain str, not %s", name, typeName(e))
			}
			if err := w.spendCompare(len(p)); err != nil {
				return nil, err
			}
			if test(s, p) {
				return true, nil
			}
		}
		return false, nil
	}
	return nil, Errorf("%s first arg must be str or a tuple of str, not %s", name, typeName(arg))
}
