package specs

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/stratum-go/stratum/specs/py"
)

// reprNode renders a node the way the original's (Python) messages do.
func reprNode(n *yaml.Node) string {
	n = resolve(n)
	if n == nil {
		return "None"
	}
	switch n.Kind {
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			return "{}"
		}
		return "{…}"
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return "[]"
		}
		return "[…]"
	case yaml.DocumentNode:
		return "document"
	}
	switch n.Tag {
	case "!!null":
		return "None"
	case "!!bool":
		b, _ := strconv.ParseBool(strings.ToLower(n.Value))
		if b {
			return "True"
		}
		return "False"
	case "!!int", "!!float":
		return n.Value
	}
	v := n.Value
	if len([]rune(v)) > 60 {
		v = string([]rune(v)[:57]) + "…"
	}
	return "'" + v + "'"
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func isStr(n *yaml.Node) bool {
	n = resolve(n)
	return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!str"
}

func (c *checker) wrongType(m *mapping, k, path, typ string) {
	m.bad[k] = true
	c.add(CodeWrongType, m.valNode(k), joinPath(path, k),
		fmt.Sprintf("%s is not of type '%s'", reprNode(m.valNode(k)), typ), typeHint(typ))
}

func typeHint(typ string) string {
	switch typ {
	case "string":
		return "Quote the value to make it a string."
	case "integer":
		return "Use a whole number."
	case "number":
		return "Use a number."
	case "boolean":
		return "Use true or false."
	case "array":
		return "Use a YAML list."
	case "object":
		return "Use a YAML mapping."
	}
	return "See IR schema documentation"
}

// str returns a string field. ok is false when absent or of the wrong type
// (reported). nonEmpty reports an empty string.
func (c *checker) str(m *mapping, k, path string, nonEmpty bool) (string, bool) {
	e, present := m.get(k)
	if !present {
		return "", false
	}
	if !isStr(e.val) {
		c.wrongType(m, k, path, "string")
		return "", false
	}
	if nonEmpty && e.val.Value == "" {
		m.bad[k] = true
		c.add(CodeEmptyValue, e.val, joinPath(path, k), "'' should be non-empty", fmt.Sprintf("Give '%s' a non-empty value.", k))
		return "", false
	}
	return e.val.Value, true
}

// name is str for a field whose value names something (a step id, a
// function, flow or contract reference, a routing target): a value with a
// control character is reported and not returned.
func (c *checker) name(m *mapping, k, path string, nonEmpty bool) (string, bool) {
	v, ok := c.str(m, k, path, nonEmpty)
	if ok && c.badName(m.valNode(k), joinPath(path, k), v) {
		m.bad[k] = true
		return "", false
	}
	return v, ok
}

// badName reports a name (a mapping key, or the value of a field that names
// something) containing a control character, C0 (U+0000–U+001F), DEL or C1
// (U+0080–U+009F), or a bidirectional formatting character (isBidi): spec
// names reach terminals, and such a name could inject escape sequences
// into an operator's screen or reorder what it shows. The message and the
// path show the character escaped.
func (c *checker) badName(n *yaml.Node, path, name string) bool {
	r, ok := controlRune(name)
	if !ok {
		return false
	}
	if isBidi(r) {
		c.add(CodeInvalidName, n, path,
			fmt.Sprintf("%s contains the bidirectional formatting character U+%04X", py.ReprString(name), r),
			"Names may not contain bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) or line separators (U+2028, U+2029): use printable text.")
		return true
	}
	c.add(CodeInvalidName, n, path,
		fmt.Sprintf("%s contains the control character U+%04X", py.ReprString(name), r),
		"Names may not contain control characters (U+0000–U+001F, U+007F–U+009F): use printable text.")
	return true
}

// strOrNull returns a string-or-null field ("" for null).
func (c *checker) strOrNull(m *mapping, k, path string) (string, bool) {
	e, present := m.get(k)
	if !present {
		return "", false
	}
	if isNull(e.val) {
		return "", true
	}
	return c.str(m, k, path, false)
}

// enum returns a string field restricted to allowed values.
func (c *checker) enum(m *mapping, k, path string, allowed []string) (string, bool) {
	v, ok := c.str(m, k, path, false)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if v == a {
			return v, true
		}
	}
	m.bad[k] = true
	sugg := "Allowed values: " + plainList(allowed)
	if d := c.didYouMean(v, allowed); d != "" {
		sugg += " (" + d + ")"
	}
	c.add(CodeInvalidValue, m.valNode(k), joinPath(path, k), fmt.Sprintf("'%s' is not one of %s", v, py.ReprStrings(allowed)), sugg)
	return "", false
}

// integer returns an integer field ≥ minimum.
func (c *checker) integer(m *mapping, k, path string, minimum int64) (int64, bool) {
	e, present := m.get(k)
	if !present {
		return 0, false
	}
	n := resolve(e.val)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		// A float with an integral value (3.0) is an integer in JSON Schema.
		if n.Kind == yaml.ScalarNode && n.Tag == "!!float" {
			if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return c.checkMin(m, k, path, int64(f), minimum)
			}
		}
		c.wrongType(m, k, path, "integer")
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		c.wrongType(m, k, path, "integer")
		return 0, false
	}
	return c.checkMin(m, k, path, v, minimum)
}

func (c *checker) checkMin(m *mapping, k, path string, v, minimum int64) (int64, bool) {
	if v < minimum {
		m.bad[k] = true
		c.add(CodeOutOfRange, m.valNode(k), joinPath(path, k), fmt.Sprintf("%d is less than the minimum of %d", v, minimum),
			fmt.Sprintf("Use a value ≥ %d.", minimum))
		return 0, false
	}
	return v, true
}

// number returns a numeric field ≥ minimum.
func (c *checker) number(m *mapping, k, path string, minimum float64) (float64, bool) {
	e, present := m.get(k)
	if !present {
		return 0, false
	}
	n := resolve(e.val)
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		c.wrongType(m, k, path, "number")
		return 0, false
	}
	var v float64
	if err := n.Decode(&v); err != nil || math.IsNaN(v) {
		c.wrongType(m, k, path, "number")
		return 0, false
	}
	if v < minimum {
		m.bad[k] = true
		c.add(CodeOutOfRange, n, joinPath(path, k), fmt.Sprintf("%s is less than the minimum of %s", n.Value, strconv.FormatFloat(minimum, 'g', -1, 64)),
			fmt.Sprintf("Use a value ≥ %s.", strconv.FormatFloat(minimum, 'g', -1, 64)))
		return 0, false
	}
	return v, true
}

// boolean returns a boolean field.
func (c *checker) boolean(m *mapping, k, path string) (bool, bool) {
	e, present := m.get(k)
	if !present {
		return false, false
	}
	n := resolve(e.val)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		c.wrongType(m, k, path, "boolean")
		return false, false
	}
	var v bool
	if err := n.Decode(&v); err != nil {
		c.wrongType(m, k, path, "boolean")
		return false, false
	}
	return v, true
}

// strList returns a list-of-strings field; element nodes come back too.
func (c *checker) strList(m *mapping, k, path string, nonEmpty bool) ([]string, []*yaml.Node, bool) {
	e, present := m.get(k)
	if !present {
		return nil, nil, false
	}
	n := resolve(e.val)
	if n.Kind != yaml.SequenceNode {
		c.wrongType(m, k, path, "array")
		return nil, nil, false
	}
	if nonEmpty && len(n.Content) == 0 {
		m.bad[k] = true
		c.add(CodeEmptyValue, n, joinPath(path, k), "[] should be non-empty", fmt.Sprintf("Add at least one item to '%s', or remove it.", k))
		return nil, nil, false
	}
	var out []string
	var nodes []*yaml.Node
	ok := true
	for i, it := range n.Content {
		it = resolve(it)
		if !isStr(it) {
			ok = false
			m.bad[k] = true
			c.add(CodeWrongType, it, joinPath(path, k)+"."+strconv.Itoa(i), fmt.Sprintf("%s is not of type 'string'", reprNode(it)), typeHint("string"))
			continue
		}
		out = append(out, it.Value)
		nodes = append(nodes, it)
	}
	return out, nodes, ok
}

// object returns a mapping field.
func (c *checker) object(m *mapping, k, path string) (*mapping, bool) {
	e, present := m.get(k)
	if !present {
		return nil, false
	}
	sub := c.asMapping(e.val, joinPath(path, k))
	if sub != nil {
		sub.owner = e.key
	}
	if sub == nil {
		c.wrongType(m, k, path, "object")
		return nil, false
	}
	return sub, true
}

// toAny converts a node to plain Go values: map[string]any, []any, string,
// bool, int, float64, nil. Sizes are bounded by the alias check in decode.
func toAny(n *yaml.Node) any {
	n = resolve(n)
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.Tag == "!!merge" {
				if sub, ok := toAny(n.Content[i+1]).(map[string]any); ok {
					for kk, vv := range sub {
						if _, exists := out[kk]; !exists {
							out[kk] = vv
						}
					}
				}
				continue
			}
			out[k.Value] = toAny(n.Content[i+1])
		}
		return out
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, it := range n.Content {
			out[i] = toAny(it)
		}
		return out
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil
		case "!!bool":
			var b bool
			if n.Decode(&b) == nil {
				return b
			}
		case "!!int":
			var i int
			if n.Decode(&i) == nil {
				return i
			}
			var f float64
			if n.Decode(&f) == nil {
				return f
			}
		case "!!float":
			var f float64
			if n.Decode(&f) == nil {
				return f
			}
		}
		return n.Value
	}
	return nil
}
