package py

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Repr is Python's repr(v) of a value: None, True, 42, 0.5, 'text', lists
// as [a, b] and dicts as {'k': v} with keys sorted. Other Go types
// (json.Number, integer kinds, typed slices and maps) are normalised first;
// an opaque value is printed with %v. The error is non-nil for a value
// nested deeper than 200 levels or a repr longer than 1 MiB.
func Repr(v any) (string, error) {
	var b strings.Builder
	if err := repr(nil, &b, v, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// str is Python str(v): a string is itself, anything else its repr.
func str(w *Work, v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	var b strings.Builder
	if err := repr(w, &b, v, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// repr writes Python repr(v) to b.
func repr(w *Work, b *strings.Builder, v any, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	if err := w.spendElems(1); err != nil {
		return err
	}
	if b.Len() > maxBuilt {
		return errTooLarge
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
		b.WriteString(ReprFloat(x))
	case string:
		if b.Len()+len(x) > maxBuilt {
			return errTooLarge
		}
		if err := w.spendBytes(len(x)); err != nil {
			return err
		}
		b.WriteString(ReprString(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := repr(w, b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		if err := w.spendElems(len(x) * (1 + bits.Len(uint(len(x))))); err != nil {
			return err
		}
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
			if b.Len()+len(k) > maxBuilt {
				return errTooLarge
			}
			if err := w.spendBytes(len(k)); err != nil {
				return err
			}
			b.WriteString(ReprString(k))
			b.WriteString(": ")
			if err := repr(w, b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		n, changed, err := normalize(v, depth)
		if err != nil {
			return err
		}
		if changed {
			return repr(w, b, n, depth+1)
		}
		fmt.Fprintf(b, "%v", v)
	}
	return nil
}

// ReprString is Python's repr() of a str: in single quotes, or in double
// quotes when the text contains a single quote and no double quote; the
// backslash and the chosen quote are escaped with a backslash; \t, \n and \r
// are written as such; other non-printable characters (Unicode categories
// C* and Z* except the ASCII space, so also U+0080–U+00A0, U+00AD and U+2028)
// as \xNN below U+0100, \uNNNN below U+10000 and \UNNNNNNNN above. Printable
// non-ASCII text (é, 中, 😀) is kept as it is.
//
// A Python str cannot hold bytes that are not UTF-8; a Go string can: each
// such byte is written as \xNN (as in the repr of a bytes object), so no
// information is lost. Printability follows Go's Unicode tables, which may
// be a version apart from CPython's for newly assigned characters.
func ReprString(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for i := 0; i < len(s); {
		// A run of printable ASCII that needs no escape is copied at once.
		j := i
		for j < len(s) && s[j] >= ' ' && s[j] < 0x7f && s[j] != '\\' && s[j] != q {
			j++
		}
		if j > i {
			b.WriteString(s[i:j])
			i = j
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			writeEscape(&b, 'x', uint32(s[i]), 2)
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
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+w])
		case r < 0x100:
			writeEscape(&b, 'x', uint32(r), 2)
		case r < 0x10000:
			writeEscape(&b, 'u', uint32(r), 4)
		default:
			writeEscape(&b, 'U', uint32(r), 8)
		}
		i += w
	}
	b.WriteByte(q)
	return b.String()
}

// writeEscape writes a backslash, the letter and v in digits lower-case hex
// digits (\x0a, \u2028, \U0001f600).
func writeEscape(b *strings.Builder, letter byte, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteByte('\\')
	b.WriteByte(letter)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hex[v>>uint(shift)&0xf])
	}
}

// ReprStrings is Python's repr() of a list of str: ['a', 'b'].
func ReprStrings(items []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ReprString(s))
	}
	b.WriteByte(']')
	return b.String()
}

// ReprFloat is Python's repr() of a float: the shortest digits that
// round-trip, positional when the decimal exponent is in [-4, 16) and always
// with a fractional part (1.0, 0.0001, 1000000000000000.0), scientific
// otherwise with a sign and at least two exponent digits (1e-05, 1.5e+16);
// -0.0, and inf, -inf and nan as Python prints them.
func ReprFloat(f float64) string { return formatFloat(f, 64) }

// ReprFloat32 is ReprFloat of the shortest decimal that round-trips through
// float32: float32(0.1) is "0.1" (not 0.10000000149011612), as Python would
// print that decimal read back as a float.
func ReprFloat32(f float32) string { return formatFloat(float64(f), 32) }

func formatFloat(f float64, bitSize int) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	// "-d.ddde±XX" with the shortest digits.
	e := strconv.FormatFloat(f, 'e', -1, bitSize)
	neg := false
	if e[0] == '-' {
		neg = true
		e = e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	var out strings.Builder
	if neg {
		out.WriteByte('-')
	}
	if exp < -4 || exp >= 16 {
		out.WriteByte(digits[0])
		if len(digits) > 1 {
			out.WriteByte('.')
			out.WriteString(digits[1:])
		}
		out.WriteByte('e')
		if exp < 0 {
			out.WriteByte('-')
			exp = -exp
		} else {
			out.WriteByte('+')
		}
		if exp < 10 {
			out.WriteByte('0')
		}
		out.WriteString(strconv.Itoa(exp))
		return out.String()
	}
	switch {
	case exp < 0:
		out.WriteString("0.")
		out.WriteString(strings.Repeat("0", -exp-1))
		out.WriteString(digits)
	case exp+1 >= len(digits):
		out.WriteString(digits)
		out.WriteString(strings.Repeat("0", exp+1-len(digits)))
		out.WriteString(".0")
	default:
		out.WriteString(digits[:exp+1])
		out.WriteByte('.')
		out.WriteString(digits[exp+1:])
	}
	return out.String()
}
