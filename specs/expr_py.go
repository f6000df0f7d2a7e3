package specs

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file gives expression values Python semantics: truthiness, equality,
// ordering, arithmetic, repr/xStr and the int/float/len conversions. Values are
// normalised first (normValue) to a small set of Go types:
//
//	nil, bool, int, float64, string, []any, map[string]any
//
// anything else is an opaque "object".

// xMaxPyDepth bounds recursion over nested values (repr, equality, ordering,
// normalisation) so hostile, deeply nested results cannot exhaust the stack.
const xMaxPyDepth = 200

// xMaxBuiltValue bounds values built by an expression (string and list
// repetition, concatenation) in bytes or elements.
const xMaxBuiltValue = 1 << 20

// xpyError is a run-time error raised by an expression; its text reads like the
// Python exception message (without the exception class noise).
type xpyError struct{ msg string }

func (e *xpyError) Error() string { return e.msg }

func xpyErrf(format string, args ...any) error { return &xpyError{msg: fmt.Sprintf(format, args...)} }

var xErrTooDeep = &xpyError{msg: "value is nested too deeply"}

// xWorkBudget bounds the element visits (comparisons, repr, repetition) one
// evaluation may perform, so hostile data or expressions cannot run long.
const xWorkBudget = 5_000_000

// xWork counts the work of one evaluation; it is created per Eval and passed
// to every function call (a hidden argument), so it is never shared between
// goroutines.
type xWork struct{ steps int }

var xErrTooExpensive = &xpyError{msg: "expression is too expensive to evaluate"}

// spend records n units of work; it fails once the budget is exhausted. A
// nil *xWork is unbounded (used for small internal formatting).
func (w *xWork) spend(n int) error {
	if w == nil {
		return nil
	}
	w.steps += n
	if w.steps > xWorkBudget || n < 0 {
		return xErrTooExpensive
	}
	return nil
}

// normValue converts a value coming from JSON or Go into the canonical
// expression types. json.Number and every Go integer become int (or float64
// when they do not fit); integral float64 values (as produced by
// encoding/json) become int so that xStr(result.count) is "4" as in Python;
// other slices and string-keyed maps become []any and map[string]any.
// Containers are copied only when something inside changes.
func normValue(v any, depth int) (any, bool, error) {
	if depth > xMaxPyDepth {
		return nil, false, xErrTooDeep
	}
	switch x := v.(type) {
	case nil, bool, int, string:
		return v, false, nil
	case float64:
		if i, ok := xFloatAsInt(x); ok {
			return i, true, nil
		}
		return v, false, nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return int(i), true, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return string(x), true, nil
		}
		if i, ok := xFloatAsInt(f); ok && !strings.ContainsAny(string(x), ".eE") {
			return i, true, nil
		}
		return f, true, nil
	case []any:
		var out []any
		for i, e := range x {
			n, changed, err := normValue(e, depth+1)
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
			n, changed, err := normValue(e, depth+1)
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
		if i, ok := xFloatAsInt(f); ok {
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
			n, _, err := normValue(rv.Index(i).Interface(), depth+1)
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
			n, _, err := normValue(it.Value().Interface(), depth+1)
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
		n, _, err := normValue(rv.Elem().Interface(), depth+1)
		return n, true, err
	}
	return v, false, nil
}

// xFloatAsInt reports whether f is an integral value exactly representable as
// an int (|f| ≤ 2^53).
func xFloatAsInt(f float64) (int, bool) {
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	if f == 0 && math.Signbit(f) {
		return 0, true
	}
	return int(f), true
}

// xNorm is normValue for values that come back from expr itself.
func xNorm(v any) any {
	n, _, err := normValue(v, 0)
	if err != nil {
		return v
	}
	return n
}

// xpyType is the Python type name of a normalised value.
func xpyType(v any) string {
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

// xpyTruth is Python's xTruth value of v: None, False, 0, 0.0, "" and empty
// lists and dicts are false; everything else is true.
func xpyTruth(v any) bool {
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

// xpyNum returns v as a number: bools count as 0/1 as in Python.
func xpyNum(v any) (i int, f float64, isInt, ok bool) {
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

// xpyEqual is Python ==.
func xpyEqual(w *xWork, a, b any, depth int) (bool, error) {
	if depth > xMaxPyDepth {
		return false, xErrTooDeep
	}
	if err := w.spend(1); err != nil {
		return false, err
	}
	ai, af, aInt, aNum := xpyNum(a)
	bi, bf, bInt, bNum := xpyNum(b)
	if aNum && bNum {
		if aInt && bInt {
			return ai == bi, nil
		}
		return af == bf, nil
	}
	switch x := a.(type) {
	case nil:
		return b == nil, nil
	case string:
		y, ok := b.(string)
		return ok && x == y, nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false, nil
		}
		for i := range x {
			eq, err := xpyEqual(w, x[i], y[i], depth+1)
			if err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false, nil
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok {
				return false, nil
			}
			eq, err := xpyEqual(w, xv, yv, depth+1)
			if err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	}
	if b == nil || aNum || bNum {
		return false, nil
	}
	return reflect.DeepEqual(a, b), nil
}

// xpyLess is Python a < b; TypeError-like errors for unorderable operands.
func xpyLess(w *xWork, op string, a, b any, depth int) (bool, error) {
	if depth > xMaxPyDepth {
		return false, xErrTooDeep
	}
	if err := w.spend(1); err != nil {
		return false, err
	}
	ai, af, aInt, aNum := xpyNum(a)
	bi, bf, bInt, bNum := xpyNum(b)
	if aNum && bNum {
		if aInt && bInt {
			return ai < bi, nil
		}
		return af < bf, nil
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x < y, nil
		}
	case []any:
		if y, ok := b.([]any); ok {
			for i := 0; i < len(x) && i < len(y); i++ {
				eq, err := xpyEqual(w, x[i], y[i], depth+1)
				if err != nil {
					return false, err
				}
				if !eq {
					return xpyLess(w, op, x[i], y[i], depth+1)
				}
			}
			return len(x) < len(y), nil
		}
	}
	return false, &xUnorderable{op: op, a: xpyType(a), b: xpyType(b)}
}

// xUnorderable is the TypeError of an ordering comparison; a and b are the
// operand types in the order they were compared.
type xUnorderable struct{ op, a, b string }

func (e *xUnorderable) Error() string {
	return fmt.Sprintf("'%s' not supported between instances of '%s' and '%s'", e.op, e.a, e.b)
}

// xpyCompare evaluates a comparison operator (==, !=, <, <=, >, >=).
func xpyCompare(w *xWork, op string, a, b any) (bool, error) {
	ok, err := xpyCompare1(w, op, a, b)
	if u, isU := err.(*xUnorderable); isU && (op == ">" || op == ">=") {
		// The operands were compared reversed; report them as written.
		err = &xUnorderable{op: op, a: u.b, b: u.a}
	}
	return ok, err
}

func xpyCompare1(w *xWork, op string, a, b any) (bool, error) {
	switch op {
	case "==":
		return xpyEqual(w, a, b, 0)
	case "!=":
		eq, err := xpyEqual(w, a, b, 0)
		return !eq, err
	case "<":
		return xpyLess(w, op, a, b, 0)
	case ">":
		return xpyLess(w, op, b, a, 0)
	case "<=", ">=":
		x, y := a, b
		if op == ">=" {
			x, y = b, a
		}
		// x <= y  ⇔  x < y or x == y, with NaN never ordered.
		lt, err := xpyLess(w, op, x, y, 0)
		if err != nil || lt {
			return lt, err
		}
		return xpyEqual(w, x, y, 0)
	}
	return false, xpyErrf("unknown comparison %s", op)
}

// xpyIn is Python `a in b`.
func xpyIn(w *xWork, a, b any) (bool, error) {
	switch y := b.(type) {
	case string:
		x, ok := a.(string)
		if !ok {
			return false, xpyErrf("'in <string>' requires string as left operand, not %s", xpyType(a))
		}
		return strings.Contains(y, x), nil
	case []any:
		for _, e := range y {
			eq, err := xpyEqual(w, a, e, 0)
			if err != nil {
				return false, err
			}
			if eq {
				return true, nil
			}
		}
		return false, nil
	case map[string]any:
		switch k := a.(type) {
		case string:
			_, ok := y[k]
			return ok, nil
		case []any, map[string]any:
			return false, xpyErrf("unhashable type: '%s'", xpyType(a))
		}
		return false, nil
	}
	return false, xpyErrf("argument of type '%s' is not iterable", xpyType(b))
}

// xpyArith evaluates a binary arithmetic operator.
func xpyArith(w *xWork, op string, a, b any) (any, error) {
	ai, af, aInt, aNum := xpyNum(a)
	bi, bf, bInt, bNum := xpyNum(b)
	if aNum && bNum {
		if aInt && bInt {
			return xIntArith(op, ai, bi)
		}
		return xFloatArith(op, af, bf)
	}
	switch op {
	case "+":
		switch x := a.(type) {
		case string:
			if y, ok := b.(string); ok {
				if len(x)+len(y) > xMaxBuiltValue {
					return nil, xpyErrf("result is too large")
				}
				return x + y, nil
			}
			return nil, xpyErrf("can only concatenate str (not \"%s\") to str", xpyType(b))
		case []any:
			if y, ok := b.([]any); ok {
				if len(x)+len(y) > xMaxBuiltValue {
					return nil, xpyErrf("result is too large")
				}
				out := make([]any, 0, len(x)+len(y))
				return append(append(out, x...), y...), nil
			}
			return nil, xpyErrf("can only concatenate list (not \"%s\") to list", xpyType(b))
		}
	case "*":
		if bNum && bInt {
			if s, ok := a.(string); ok {
				return xRepeatStr(w, s, bi)
			}
			if l, ok := a.([]any); ok {
				return xRepeatList(w, l, bi)
			}
		}
		if aNum && aInt {
			if s, ok := b.(string); ok {
				return xRepeatStr(w, s, ai)
			}
			if l, ok := b.([]any); ok {
				return xRepeatList(w, l, ai)
			}
		}
	}
	sym := op
	if op == "^" {
		sym = "**"
	}
	return nil, xpyErrf("unsupported operand type(s) for %s: '%s' and '%s'", sym, xpyType(a), xpyType(b))
}

func xRepeatStr(w *xWork, s string, n int) (any, error) {
	if n <= 0 || s == "" {
		return "", nil
	}
	if n > xMaxBuiltValue/len(s) {
		return nil, xpyErrf("result is too large")
	}
	if err := w.spend(n * len(s) / 64); err != nil {
		return nil, err
	}
	return strings.Repeat(s, n), nil
}

func xRepeatList(w *xWork, l []any, n int) (any, error) {
	if n <= 0 || len(l) == 0 {
		return []any{}, nil
	}
	if n > xMaxBuiltValue/len(l) {
		return nil, xpyErrf("result is too large")
	}
	if err := w.spend(n * len(l)); err != nil {
		return nil, err
	}
	out := make([]any, 0, len(l)*n)
	for range n {
		out = append(out, l...)
	}
	return out, nil
}

var xErrIntOverflow = &xpyError{msg: "integer result is too large"}

func xIntArith(op string, a, b int) (any, error) {
	switch op {
	case "+":
		c := a + b
		if (c > a) != (b > 0) && b != 0 {
			return nil, xErrIntOverflow
		}
		return c, nil
	case "-":
		c := a - b
		if (c < a) != (b > 0) && b != 0 {
			return nil, xErrIntOverflow
		}
		return c, nil
	case "*":
		if a == 0 || b == 0 {
			return 0, nil
		}
		c := a * b
		if c/b != a || (a == -1 && b == math.MinInt) || (b == -1 && a == math.MinInt) {
			return nil, xErrIntOverflow
		}
		return c, nil
	case "/":
		if b == 0 {
			return nil, xpyErrf("division by zero")
		}
		return float64(a) / float64(b), nil
	case "%":
		if b == 0 {
			return nil, xpyErrf("integer modulo by zero")
		}
		if b == -1 {
			return 0, nil
		}
		m := a % b
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "**", "^":
		if b < 0 {
			if a == 0 {
				return nil, xpyErrf("zero to a negative power")
			}
			return math.Pow(float64(a), float64(b)), nil
		}
		result, base := 1, a
		for e := b; e > 0; e >>= 1 {
			if e&1 == 1 {
				r, err := xIntArith("*", result, base)
				if err != nil {
					return nil, err
				}
				result = r.(int)
			}
			if e > 1 {
				nb, err := xIntArith("*", base, base)
				if err != nil {
					return nil, err
				}
				base = nb.(int)
			}
		}
		return result, nil
	}
	return nil, xpyErrf("unsupported operator %s", op)
}

func xFloatArith(op string, a, b float64) (any, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, xpyErrf("float division by zero")
		}
		return a / b, nil
	case "%":
		if b == 0 {
			return nil, xpyErrf("float modulo")
		}
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "**", "^":
		if a == 0 && b < 0 {
			return nil, xpyErrf("0.0 cannot be raised to a negative power")
		}
		r := math.Pow(a, b)
		if math.IsNaN(r) && !math.IsNaN(a) && !math.IsNaN(b) {
			return nil, xpyErrf("negative number cannot be raised to a fractional power")
		}
		return r, nil
	}
	return nil, xpyErrf("unsupported operator %s", op)
}

// xpyNeg is unary minus (and plus when neg is false).
func xpyNeg(v any, neg bool) (any, error) {
	i, f, isInt, ok := xpyNum(v)
	if !ok {
		sym := "-"
		if !neg {
			sym = "+"
		}
		return nil, xpyErrf("bad operand type for unary %s: '%s'", sym, xpyType(v))
	}
	if !neg {
		if isInt {
			return i, nil
		}
		return f, nil
	}
	if isInt {
		if i == math.MinInt {
			return nil, xErrIntOverflow
		}
		return -i, nil
	}
	return -f, nil
}

// xpyStr is Python xStr(v).
func xpyStr(w *xWork, v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	var b strings.Builder
	if err := xpyRepr(w, &b, v, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// xpyRepr writes Python repr(v).
func xpyRepr(w *xWork, b *strings.Builder, v any, depth int) error {
	if depth > xMaxPyDepth {
		return xErrTooDeep
	}
	if err := w.spend(1); err != nil {
		return err
	}
	if b.Len() > xMaxBuiltValue {
		return xpyErrf("result is too large")
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		b.WriteString(xpyFloatRepr(x))
	case string:
		b.WriteString(xpyQuote(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := xpyRepr(w, b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(xpyQuote(k))
			b.WriteString(": ")
			if err := xpyRepr(w, b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		n, changed, err := normValue(v, depth)
		if err != nil {
			return err
		}
		if changed {
			return xpyRepr(w, b, n, depth+1)
		}
		fmt.Fprintf(b, "%v", v)
	}
	return nil
}

// xpyFloatRepr formats f as Python's repr(float) does: the shortest digits
// that round-trip, fixed notation for exponents in [-4, 16), scientific
// otherwise, and always a decimal point or exponent.
func xpyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expS, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expS)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// xpyQuote is Python's repr of a xStr.
func xpyQuote(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteByte(q)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		case !strconv.IsPrint(r) && r < 0x10000:
			if r < 0x100 {
				fmt.Fprintf(&b, "\\x%02x", r)
			} else {
				fmt.Fprintf(&b, "\\u%04x", r)
			}
		case !strconv.IsPrint(r):
			fmt.Fprintf(&b, "\\U%08x", r)
		default:
			b.WriteRune(r)
		}
		i += w
	}
	b.WriteByte(q)
	return b.String()
}

// xpyInt is Python int(v).
func xpyInt(v any) (any, error) {
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
			return nil, xpyErrf("cannot convert float NaN to integer")
		}
		if math.IsInf(x, 0) {
			return nil, xpyErrf("cannot convert float infinity to integer")
		}
		t := math.Trunc(x)
		if t >= 9.223372036854775807e18 || t < -9.223372036854775808e18 {
			return nil, xErrIntOverflow
		}
		return int(t), nil
	case string:
		s := strings.TrimSpace(x)
		clean := s
		if strings.Contains(s, "_") {
			if strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Contains(s, "__") {
				return nil, xpyErrf("invalid literal for int() with base 10: %s", xpyQuote(x))
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
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return nil, xErrIntOverflow
			}
			return nil, xpyErrf("invalid literal for int() with base 10: %s", xpyQuote(x))
		}
		return int(n), nil
	}
	return nil, xpyErrf("int() argument must be a string, a bytes-like object or a real number, not '%s'", xpyType(v))
}

// xpyFloat is Python float(v).
func xpyFloat(v any) (any, error) {
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
			if err == nil || xErrorIsRange(err) {
				return f, nil
			}
		}
		return nil, xpyErrf("could not convert string to float: %s", xpyQuote(x))
	}
	return nil, xpyErrf("float() argument must be a string or a real number, not '%s'", xpyType(v))
}

func xErrorIsRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// xpyLen is Python len(v).
func xpyLen(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return utf8.RuneCountInString(x), nil
	case []any:
		return len(x), nil
	case map[string]any:
		return len(x), nil
	case []byte:
		return len(x), nil
	}
	return nil, xpyErrf("object of type '%s' has no len()", xpyType(v))
}

// xpyIter returns the elements Python would iterate over: list items, dict
// keys (sorted), string characters.
func xpyIter(v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case map[string]any:
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
		out := make([]any, 0, len(x))
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	}
	return nil, xpyErrf("'%s' object is not iterable", xpyType(v))
}
