package py

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// A Builtin is a function that expressions call by name.
type Builtin struct {
	// Min and Max bound the number of arguments as written; Max < 0 means
	// unbounded.
	Min, Max int
	// Root reports that Call takes the confinement root of the file
	// functions (a string; "" means the current directory) as one more,
	// last argument after those written.
	Root bool
	// Call runs the function on normalised arguments.
	Call func(w *Work, args []any) (any, error)
}

var builtins = map[string]Builtin{
	"len":   {Min: 1, Max: 1, Call: func(w *Work, a []any) (any, error) { return length(w, a[0]) }},
	"bool":  {Min: 0, Max: 1, Call: func(w *Work, a []any) (any, error) { return len(a) == 1 && Truth(a[0]), nil }},
	"str":   {Min: 0, Max: 1, Call: callStr},
	"int":   {Min: 0, Max: 1, Call: callInt},
	"float": {Min: 0, Max: 1, Call: callFloat},
	"any":   {Min: 1, Max: 1, Call: anyAll(true)},
	"all":   {Min: 1, Max: 1, Call: anyAll(false)},
	"min":   {Min: 1, Max: -1, Call: minMax("min")},
	"max":   {Min: 1, Max: -1, Call: minMax("max")},

	"file_exists":       {Min: 1, Max: 1, Root: true, Call: fileExists},
	"file_contains":     {Min: 2, Max: 2, Root: true, Call: fileContains},
	"no_file_conflicts": {Min: 1, Max: 1, Call: noFileConflicts},

	"vocabulary_compliance": {Min: 2, Max: 4, Root: true, Call: vocabularyCompliance},
	"plan_completion":       {Min: 2, Max: 3, Call: planCompletion},
}

// LookupBuiltin returns the builtin called name.
func LookupBuiltin(name string) (Builtin, bool) {
	b, ok := builtins[name]
	return b, ok
}

// BuiltinNames lists the builtins' names, sorted.
func BuiltinNames() []string {
	out := make([]string, 0, len(builtins))
	for name := range builtins {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// ArityText is Python's wording of a wrong argument count for a function
// taking lo to hi arguments (hi < 0: unbounded) called with got, e.g.
// "takes exactly 1 argument (2 given)"; the caller prefixes "name() ".
func ArityText(lo, hi, got int) string {
	plural := func(n int) string {
		if n == 1 {
			return "argument"
		}
		return "arguments"
	}
	switch {
	case lo == hi:
		return fmt.Sprintf("takes exactly %d %s (%d given)", lo, plural(lo), got)
	case hi < 0:
		return fmt.Sprintf("takes at least %d %s (%d given)", lo, plural(lo), got)
	case got < lo:
		return fmt.Sprintf("takes at least %d %s (%d given)", lo, plural(lo), got)
	default:
		return fmt.Sprintf("takes at most %d %s (%d given)", hi, plural(hi), got)
	}
}

func callStr(w *Work, a []any) (any, error) {
	if len(a) == 0 {
		return "", nil
	}
	return str(w, a[0])
}

func callInt(w *Work, a []any) (any, error) {
	if len(a) == 0 {
		return 0, nil
	}
	if s, ok := a[0].(string); ok {
		if err := w.spendBytes(len(s)); err != nil {
			return nil, err
		}
	}
	return toInt(a[0])
}

func callFloat(w *Work, a []any) (any, error) {
	if len(a) == 0 {
		return 0.0, nil
	}
	if s, ok := a[0].(string); ok {
		if err := w.spendBytes(len(s)); err != nil {
			return nil, err
		}
	}
	return toFloat(a[0])
}

func anyAll(isAny bool) func(*Work, []any) (any, error) {
	return func(w *Work, a []any) (any, error) {
		items, err := iterate(w, a[0])
		if err != nil {
			return nil, err
		}
		if err := w.spendElems(len(items)); err != nil {
			return nil, err
		}
		for _, it := range items {
			if Truth(it) == isAny {
				return isAny, nil
			}
		}
		return !isAny, nil
	}
}

func minMax(name string) func(*Work, []any) (any, error) {
	return func(w *Work, a []any) (any, error) {
		items := a
		if len(a) == 1 {
			var err error
			if items, err = iterate(w, a[0]); err != nil {
				return nil, err
			}
			if len(items) == 0 {
				return nil, Errorf("%s() arg is an empty sequence", name)
			}
		}
		best := items[0]
		for _, it := range items[1:] {
			x, y := best, it // max: replace when best < it
			if name == "min" {
				x, y = it, best // min: replace when it < best
			}
			lt, err := less(w, "<", x, y, 0)
			if err != nil {
				return nil, err
			}
			if lt {
				best = it
			}
		}
		return best, nil
	}
}

// toInt is Python int(v).
func toInt(v any) (any, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case int:
		return x, nil
	case float64:
		if math.IsNaN(x) {
			return nil, Errorf("cannot convert float NaN to integer")
		}
		if math.IsInf(x, 0) {
			return nil, Errorf("cannot convert float infinity to integer")
		}
		t := math.Trunc(x)
		if t >= 9.223372036854775807e18 || t < -9.223372036854775808e18 {
			return nil, errIntOverflow
		}
		return int(t), nil
	case string:
		s := strings.TrimSpace(x)
		clean := s
		if strings.Contains(s, "_") {
			if strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Contains(s, "__") {
				return nil, Errorf("invalid literal for int() with base 10: %s", ReprString(x))
			}
			clean = strings.ReplaceAll(s, "_", "")
		}
		if clean != "" && (clean[0] == '+' || clean[0] == '-') && strings.HasPrefix(clean[1:], "_") {
			clean = ""
		}
		for i := 0; i < len(clean); i++ {
			c := clean[i]
			if !(c >= '0' && c <= '9') && !(i == 0 && (c == '+' || c == '-')) {
				clean = ""
				break
			}
		}
		n, err := strconv.ParseInt(clean, 10, 64)
		if err != nil {
			if isRangeError(err) {
				return nil, errIntOverflow
			}
			return nil, Errorf("invalid literal for int() with base 10: %s", ReprString(x))
		}
		return int(n), nil
	}
	return nil, Errorf("int() argument must be a string, a bytes-like object or a real number, not '%s'", typeName(v))
}

// toFloat is Python float(v).
func toFloat(v any) (any, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1.0, nil
		}
		return 0.0, nil
	case int:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		s := strings.TrimSpace(x)
		bad := s == "" || strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Contains(s, "__") ||
			strings.ContainsAny(strings.ToLower(s), "xp")
		if !bad {
			low := strings.ToLower(strings.TrimLeft(s, "+-"))
			switch low {
			case "inf", "infinity", "nan":
			default:
				for _, c := range low {
					if !(c >= '0' && c <= '9') && !strings.ContainsRune("._e+-", c) {
						bad = true
						break
					}
				}
			}
		}
		if !bad {
			f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
			if err == nil || isRangeError(err) {
				return f, nil
			}
		}
		return nil, Errorf("could not convert string to float: %s", ReprString(x))
	}
	return nil, Errorf("float() argument must be a string or a real number, not '%s'", typeName(v))
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// noFileConflicts is true iff no two tasks share an entry of files_owned.
func noFileConflicts(w *Work, a []any) (any, error) {
	tasks, ok := a[0].([]any)
	if !ok {
		return nil, Errorf("no_file_conflicts() expects a list of tasks, not %s", typeName(a[0]))
	}
	owner := map[string]int{}
	for i, t := range tasks {
		m, ok := t.(map[string]any)
		if !ok {
			return nil, Errorf("no_file_conflicts(): task %d is a %s, not a mapping", i, typeName(t))
		}
		raw, ok := m["files_owned"]
		if !ok || raw == nil {
			continue
		}
		files, ok := raw.([]any)
		if !ok {
			return nil, Errorf("no_file_conflicts(): files_owned of task %d is a %s, not a list", i, typeName(raw))
		}
		for _, f := range files {
			if err := w.spendElems(1); err != nil {
				return nil, err
			}
			key, err := str(w, f)
			if err != nil {
				return nil, err
			}
			if prev, seen := owner[key]; seen && prev != i {
				return false, nil
			}
			owner[key] = i
		}
	}
	return true, nil
}
