package py

import (
	"errors"
	"sort"
	"strings"
)

// method is a Python method allowed on values.
type method struct {
	min, max int
	fn       func(w *Work, recv any, args []any) (any, error)
}

var methods = map[string]method{
	"lower": {0, 0, strMethod(func(s string, _ []any) (any, error) { return strings.ToLower(s), nil })},
	"upper": {0, 0, strMethod(func(s string, _ []any) (any, error) { return strings.ToUpper(s), nil })},
	"strip": {0, 1, strMethod(func(s string, a []any) (any, error) {
		return stripWith(s, a, strings.TrimSpace, strings.Trim)
	})},
	"lstrip": {0, 1, strMethod(func(s string, a []any) (any, error) {
		return stripWith(s, a, func(s string) string { return strings.TrimLeft(s, " \t\n\r\v\f") }, strings.TrimLeft)
	})},
	"rstrip": {0, 1, strMethod(func(s string, a []any) (any, error) {
		return stripWith(s, a, func(s string) string { return strings.TrimRight(s, " \t\n\r\v\f") }, strings.TrimRight)
	})},
	"startswith": {1, 1, strMethod(func(s string, a []any) (any, error) { return affix(s, a[0], strings.HasPrefix, "startswith") })},
	"endswith":   {1, 1, strMethod(func(s string, a []any) (any, error) { return affix(s, a[0], strings.HasSuffix, "endswith") })},
	"split": {0, 1, strMethod(func(s string, a []any) (any, error) {
		var parts []string
		if len(a) == 0 || a[0] == nil {
			parts = strings.Fields(s)
		} else {
			sep, ok := a[0].(string)
			if !ok {
				return nil, Errorf("must be str or None, not %s", typeName(a[0]))
			}
			if sep == "" {
				return nil, Errorf("empty separator")
			}
			parts = strings.Split(s, sep)
		}
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	})},
	"join": {1, 1, strMethod(func(s string, a []any) (any, error) {
		items, err := iterate(a[0])
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
		}
		if n > maxBuilt {
			return nil, errTooLarge
		}
		return strings.Join(parts, s), nil
	})},
	"replace": {2, 2, strMethod(func(s string, a []any) (any, error) {
		o, ok1 := a[0].(string)
		n, ok2 := a[1].(string)
		if !ok1 || !ok2 {
			return nil, Errorf("replace() arguments must be str")
		}
		if o != "" && len(n) > len(o) && int64(strings.Count(s, o))*int64(len(n)-len(o))+int64(len(s)) > maxBuilt {
			return nil, errTooLarge
		}
		if o == "" && int64(len(s)+1)*int64(len(n))+int64(len(s)) > maxBuilt {
			return nil, errTooLarge
		}
		return strings.ReplaceAll(s, o, n), nil
	})},
	"find": {1, 1, strMethod(func(s string, a []any) (any, error) {
		sub, ok := a[0].(string)
		if !ok {
			return nil, Errorf("must be str, not %s", typeName(a[0]))
		}
		i := strings.Index(s, sub)
		if i < 0 {
			return -1, nil
		}
		return len([]rune(s[:i])), nil
	})},
	"count": {1, 1, func(w *Work, recv any, a []any) (any, error) {
		switch x := recv.(type) {
		case string:
			sub, ok := a[0].(string)
			if !ok {
				return nil, Errorf("must be str, not %s", typeName(a[0]))
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
	"get": {1, 2, dictMethod(func(m map[string]any, a []any) (any, error) {
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
	"keys": {0, 0, dictMethod(func(m map[string]any, _ []any) (any, error) { return iterate(m) })},
	"values": {0, 0, dictMethod(func(m map[string]any, _ []any) (any, error) {
		keys, _ := iterate(m)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = m[k.(string)]
		}
		return out, nil
	})},
	"items": {0, 0, dictMethod(func(m map[string]any, _ []any) (any, error) {
		keys, _ := iterate(m)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = []any{k, m[k.(string)]}
		}
		return out, nil
	})},
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

func strMethod(f func(s string, args []any) (any, error)) func(*Work, any, []any) (any, error) {
	return func(w *Work, recv any, args []any) (any, error) {
		s, ok := recv.(string)
		if !ok {
			return nil, errNoMethod
		}
		return f(s, args)
	}
}

func dictMethod(f func(m map[string]any, args []any) (any, error)) func(*Work, any, []any) (any, error) {
	return func(w *Work, recv any, args []any) (any, error) {
		m, ok := recv.(map[string]any)
		if !ok {
			return nil, errNoMethod
		}
		return f(m, args)
	}
}

func stripWith(s string, a []any, space func(string) string, cut func(string, string) string) (any, error) {
	if len(a) == 0 || a[0] == nil {
		return space(s), nil
	}
	chars, ok := a[0].(string)
	if !ok {
		return nil, Errorf("strip arg must be None or str")
	}
	return cut(s, chars), nil
}

func affix(s string, arg any, test func(string, string) bool, name string) (any, error) {
	switch x := arg.(type) {
	case string:
		return test(s, x), nil
	case []any:
		for _, e := range x {
			p, ok := e.(string)
			if !ok {
				return nil, Errorf("tuple for %s must only contain str, not %s", name, typeName(e))
			}
			if test(s, p) {
				return true, nil
			}
		}
		return false, nil
	}
	return nil, Errorf("%s first arg must be str or a tuple of str, not %s", name, typeName(arg))
}
