package py

import (
	"fmt"
	"reflect"
	"strings"
)

// equal is Python ==.
func equal(w *Work, a, b any, depth int) (bool, error) {
	if depth > maxDepth {
		return false, errTooDeep
	}
	if err := w.spendElems(1); err != nil {
		return false, err
	}
	ai, af, aInt, aNum := number(a)
	bi, bf, bInt, bNum := number(b)
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
		if !ok || len(x) != len(y) {
			return false, nil
		}
		if err := w.spendCompare(len(x)); err != nil {
			return false, err
		}
		return x == y, nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false, nil
		}
		for i := range x {
			eq, err := equal(w, x[i], y[i], depth+1)
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
			eq, err := equal(w, xv, yv, depth+1)
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

// less is Python a < b, with a TypeError-like *unorderable error for
// operands that have no order; op is the operator as written, for that
// message.
func less(w *Work, op string, a, b any, depth int) (bool, error) {
	if depth > maxDepth {
		return false, errTooDeep
	}
	if err := w.spendElems(1); err != nil {
		return false, err
	}
	ai, af, aInt, aNum := number(a)
	bi, bf, bInt, bNum := number(b)
	if aNum && bNum {
		if aInt && bInt {
			return ai < bi, nil
		}
		return af < bf, nil
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			if err := w.spendCompare(min(len(x), len(y))); err != nil {
				return false, err
			}
			return x < y, nil
		}
	case []any:
		if y, ok := b.([]any); ok {
			for i := 0; i < len(x) && i < len(y); i++ {
				eq, err := equal(w, x[i], y[i], depth+1)
				if err != nil {
					return false, err
				}
				if !eq {
					return less(w, op, x[i], y[i], depth+1)
				}
			}
			return len(x) < len(y), nil
		}
	}
	return false, &unorderable{op: op, a: typeName(a), b: typeName(b)}
}

// unorderable is the TypeError of an ordering comparison; a and b are the
// operand types in the order they were compared.
type unorderable struct{ op, a, b string }

func (e *unorderable) Error() string {
	return fmt.Sprintf("'%s' not supported between instances of '%s' and '%s'", e.op, e.a, e.b)
}

// Compare evaluates a comparison operator (==, !=, <, <=, >, >=) with
// Python semantics: numbers compare across int, float and bool; strings and
// lists order lexicographically; other orderings are a TypeError naming the
// operand types as written.
func Compare(w *Work, op string, a, b any) (bool, error) {
	ok, err := compare(w, op, a, b)
	if u, isU := err.(*unorderable); isU && (op == ">" || op == ">=") {
		// The operands were compared reversed; report them as written.
		err = &unorderable{op: op, a: u.b, b: u.a}
	}
	return ok, err
}

func compare(w *Work, op string, a, b any) (bool, error) {
	switch op {
	case "==":
		return equal(w, a, b, 0)
	case "!=":
		eq, err := equal(w, a, b, 0)
		return !eq, err
	case "<":
		return less(w, op, a, b, 0)
	case ">":
		return less(w, op, b, a, 0)
	case "<=", ">=":
		x, y := a, b
		if op == ">=" {
			x, y = b, a
		}
		// x <= y  ⇔  x < y or x == y, with NaN never ordered.
		lt, err := less(w, op, x, y, 0)
		if err != nil || lt {
			return lt, err
		}
		return equal(w, x, y, 0)
	}
	return false, Errorf("unknown comparison %s", op)
}

// CompareChain is a Python comparison chain (0 <= x < 1): ops[i] compares
// operands[i] with operands[i+1]; the chain stops at the first false
// comparison. len(operands) must be len(ops)+1.
func CompareChain(w *Work, ops []string, operands []any) (bool, error) {
	for i, op := range ops {
		ok, err := Compare(w, op, operands[i], operands[i+1])
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// In is Python `a in b`: an element of a list (by ==), a key of a dict, a
// substring of a string.
func In(w *Work, a, b any) (bool, error) {
	switch y := b.(type) {
	case string:
		x, ok := a.(string)
		if !ok {
			return false, Errorf("'in <string>' requires string as left operand, not %s", typeName(a))
		}
		if err := w.spendBytes(len(y) + len(x)); err != nil {
			return false, err
		}
		return strings.Contains(y, x), nil
	case []any:
		for _, e := range y {
			eq, err := equal(w, a, e, 0)
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
			return false, Errorf("unhashable type: '%s'", typeName(a))
		}
		return false, nil
	}
	return false, Errorf("argument of type '%s' is not iterable", typeName(b))
}
