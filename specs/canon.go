package specs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stratum-go/stratum/specs/py"
)

// CanonicalJSON renders v the way Python's
// json.dumps(v, sort_keys=True, separators=(',', ':')) does with its default
// ensure_ascii=True, so content hashes agree with the original's:
//
//   - object keys sorted by code point, no whitespace anywhere;
//   - strings escaped like Python: \" \\ \n \r \t \b \f, every other character
//     outside printable ASCII (space to '~') as \uXXXX (lower-case hex,
//     surrogate pairs above U+FFFF); '/', '<', '>' and '&' are not escaped;
//   - integers (int, int64, uint64, …, and json.Number literals without '.',
//     'e' or 'E') without a fractional part;
//   - floats (float32, float64, and json.Number literals with '.', 'e' or 'E')
//     in Python's shortest repr: 1.0, 0.5, 1e-05, 1e+16, 1.5e+300;
//     NaN and ±Inf as NaN, Infinity and -Infinity (Python's default).
//
// Note that a float64 is always rendered as a float ("1.0"): yaml.v3 decodes
// integers as int, so a float64 from YAML was written as a float, as Python
// would see it. JSON callers that need the int/float distinction should decode
// with json.Decoder.UseNumber.
//
// Accepted values: nil, bool, string, every integer and float kind,
// json.Number, map[string]any, map[any]any (keys converted like Python
// converts them: strings as-is, numbers, bools and null rendered), []any.
// Any other value is converted through encoding/json first.
func CanonicalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeCanonical(&b, v, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Hash12 returns the first 12 hex digits of the SHA-256 of b (seed 000 §1.4).
func Hash12(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// maxCanonicalDepth bounds recursion on hostile or cyclic values.
const maxCanonicalDepth = 10000

func writeCanonical(b *bytes.Buffer, v any, depth int) error {
	if depth > maxCanonicalDepth {
		return fmt.Errorf("canonical json: value nested deeper than %d levels", maxCanonicalDepth)
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		writePyString(b, x)
	case int:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int8:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int16:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case uint:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case uint8:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case uint16:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case uint32:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case uint64:
		b.WriteString(strconv.FormatUint(x, 10))
	case float32:
		b.WriteString(jsonFloat(float64(x), 32))
	case float64:
		b.WriteString(jsonFloat(x, 64))
	case json.Number:
		s, err := pyNumber(x)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writePyString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, val := range x {
			ks, err := pyKey(k)
			if err != nil {
				return err
			}
			m[ks] = val
		}
		return writeCanonical(b, m, depth)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		g, err := viaJSON(v)
		if err != nil {
			return fmt.Errorf("canonical json: %w", err)
		}
		return writeCanonical(b, g, depth)
	}
	return nil
}

// viaJSON converts an arbitrary Go value (typed maps and slices, structs) into
// the generic map/slice/json.Number form by a round trip through encoding/json.
func viaJSON(v any) (any, error) {
	rv := reflect.ValueOf(v)
	// Typed slices and maps of generic values convert cheaply without JSON
	// (and keep float64 elements as floats).
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, nil
		}
		if rv.Type().Elem().Kind() != reflect.Uint8 {
			out := make([]any, rv.Len())
			for i := range out {
				out[i] = rv.Index(i).Interface()
			}
			return out, nil
		}
	case reflect.Map:
		if rv.IsNil() {
			return nil, nil
		}
		out := make(map[any]any, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			out[iter.Key().Interface()] = iter.Value().Interface()
		}
		return out, nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		return rv.Elem().Interface(), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// pyKey converts a non-string map key the way Python's json module does.
func pyKey(k any) (string, error) {
	switch x := k.(type) {
	case string:
		return x, nil
	case nil:
		return "null", nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case float32, float64, json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		var b bytes.Buffer
		if err := writeCanonical(&b, x, 0); err != nil {
			return "", err
		}
		return b.String(), nil
	default:
		return "", fmt.Errorf("canonical json: unsupported map key type %T", k)
	}
}

// pyNumber renders a json.Number literal as Python would after json.loads.
func pyNumber(n json.Number) (string, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		i, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return "", fmt.Errorf("canonical json: invalid number %q", s)
		}
		return i.String(), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Python's json.loads turns out-of-range floats into inf as well.
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return "", fmt.Errorf("canonical json: invalid number %q", s)
		}
	}
	return jsonFloat(f, 64), nil
}

// jsonFloat is a float as Python's json.dumps writes it: NaN, Infinity and
// -Infinity for the non-finite values, repr(float) otherwise (float32 values
// with the shortest digits that round-trip through float32).
func jsonFloat(f float64, bitSize int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case bitSize == 32:
		return py.ReprFloat32(float32(f))
	}
	return py.ReprFloat(f)
}

// writePyString writes s as a JSON string with Python's ensure_ascii escaping.
// Invalid UTF-8 bytes become U+FFFD.
func writePyString(b *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	writeU := func(r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hexDigits[(r>>12)&0xf])
		b.WriteByte(hexDigits[(r>>8)&0xf])
		b.WriteByte(hexDigits[(r>>4)&0xf])
		b.WriteByte(hexDigits[r&0xf])
	}
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r >= ' ' && r <= '~':
			b.WriteByte(byte(r))
		case r > 0xffff:
			r -= 0x10000
			writeU(0xd800 + (r>>10)&0x3ff)
			writeU(0xdc00 + r&0x3ff)
		default:
			writeU(r)
		}
	}
	b.WriteByte('"')
}
