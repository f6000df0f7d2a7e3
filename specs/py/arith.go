package py

import (
	"math"
	"strings"
)

// Arith evaluates a binary arithmetic operator (+ - * / % and ** or ^ for
// power) with Python semantics: int op int stays int (except true division)
// and fails on overflow instead of wrapping; a float operand makes a float;
// % is floor modulo; + concatenates strings and lists; * repeats them.
func Arith(w *Work, op string, a, b any) (any, error) {
	ai, af, aInt, aNum := number(a)
	bi, bf, bInt, bNum := number(b)
	if aNum && bNum {
		if aInt && bInt {
			return intArith(op, ai, bi)
		}
		return floatArith(op, af, bf)
	}
	switch op {
	case "+":
		switch x := a.(type) {
		case string:
			if y, ok := b.(string); ok {
				if len(x)+len(y) > maxBuilt {
					return nil, errTooLarge
				}
				if err := w.spendBytes(len(x) + len(y)); err != nil {
					return nil, err
				}
				return x + y, nil
			}
			return nil, Errorf("can only concatenate str (not \"%s\") to str", typeName(b))
		case []any:
			if y, ok := b.([]any); ok {
				if len(x)+len(y) > maxBuilt {
					return nil, errTooLarge
				}
				if err := w.spendElems(len(x) + len(y)); err != nil {
					return nil, err
				}
				out := make([]any, 0, len(x)+len(y))
				return append(append(out, x...), y...), nil
			}
			return nil, Errorf("can only concatenate list (not \"%s\") to list", typeName(b))
		}
	case "*":
		if bNum && bInt {
			if s, ok := a.(string); ok {
				return repeatString(w, s, bi)
			}
			if l, ok := a.([]any); ok {
				return repeatList(w, l, bi)
			}
		}
		if aNum && aInt {
			if s, ok := b.(string); ok {
				return repeatString(w, s, ai)
			}
			if l, ok := b.([]any); ok {
				return repeatList(w, l, ai)
			}
		}
	}
	sym := op
	if op == "^" {
		sym = "**"
	}
	return nil, Errorf("unsupported operand type(s) for %s: '%s' and '%s'", sym, typeName(a), typeName(b))
}

func repeatString(w *Work, s string, n int) (any, error) {
	if n <= 0 || s == "" {
		return "", nil
	}
	if n > maxBuilt/len(s) {
		return nil, errTooLarge
	}
	if err := w.spendBytes(n * len(s)); err != nil {
		return nil, err
	}
	return strings.Repeat(s, n), nil
}

func repeatList(w *Work, l []any, n int) (any, error) {
	if n <= 0 || len(l) == 0 {
		return []any{}, nil
	}
	if n > maxBuilt/len(l) {
		return nil, errTooLarge
	}
	if err := w.spendElems(n * len(l)); err != nil {
		return nil, err
	}
	out := make([]any, 0, len(l)*n)
	for range n {
		out = append(out, l...)
	}
	return out, nil
}

func intArith(op string, a, b int) (any, error) {
	switch op {
	case "+":
		c := a + b
		if (c > a) != (b > 0) && b != 0 {
			return nil, errIntOverflow
		}
		return c, nil
	case "-":
		c := a - b
		if (c < a) != (b > 0) && b != 0 {
			return nil, errIntOverflow
		}
		return c, nil
	case "*":
		if a == 0 || b == 0 {
			return 0, nil
		}
		c := a * b
		if c/b != a || (a == -1 && b == math.MinInt) || (b == -1 && a == math.MinInt) {
			return nil, errIntOverflow
		}
		return c, nil
	case "/":
		if b == 0 {
			return nil, Errorf("division by zero")
		}
		return float64(a) / float64(b), nil
	case "%":
		if b == 0 {
			return nil, Errorf("integer modulo by zero")
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
				return nil, Errorf("zero to a negative power")
			}
			return math.Pow(float64(a), float64(b)), nil
		}
		result, base := 1, a
		for e := b; e > 0; e >>= 1 {
			if e&1 == 1 {
				r, err := intArith("*", result, base)
				if err != nil {
					return nil, err
				}
				result = r.(int)
			}
			if e > 1 {
				nb, err := intArith("*", base, base)
				if err != nil {
					return nil, err
				}
				base = nb.(int)
			}
		}
		return result, nil
	}
	return nil, Errorf("unsupported operator %s", op)
}

func floatArith(op string, a, b float64) (any, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, Errorf("float division by zero")
		}
		return a / b, nil
	case "%":
		if b == 0 {
			return nil, Errorf("float modulo")
		}
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "**", "^":
		if a == 0 && b < 0 {
			return nil, Errorf("0.0 cannot be raised to a negative power")
		}
		r := math.Pow(a, b)
		if math.IsNaN(r) && !math.IsNaN(a) && !math.IsNaN(b) {
			return nil, Errorf("negative number cannot be raised to a fractional power")
		}
		return r, nil
	}
	return nil, Errorf("unsupported operator %s", op)
}

// Unary is unary minus (op "-") or plus (any other op, as written "+") on a
// number; bools count as 0 and 1.
func Unary(op string, v any) (any, error) {
	neg := op == "-"
	i, f, isInt, ok := number(v)
	if !ok {
		sym := "-"
		if !neg {
			sym = "+"
		}
		return nil, Errorf("bad operand type for unary %s: '%s'", sym, typeName(v))
	}
	if !neg {
		if isInt {
			return i, nil
		}
		return f, nil
	}
	if isInt {
		if i == math.MinInt {
			return nil, errIntOverflow
		}
		return -i, nil
	}
	return -f, nil
}
