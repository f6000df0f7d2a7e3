package specs

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/stratum-go/stratum/specs/py"
)

// checker accumulates diagnostics for one Parse call.
type checker struct {
	file         string
	version      string
	diags        Diagnostics
	exprCache    map[exprKey]exprResult    // one compilation per distinct (kind, source)
	src          []byte                    // the input, for positions inside scalars
	lineStart    []int                     // byte offset of each line start (lazily built)
	suggestSpent int                       // candidates examined by didYouMean so far
	reCache      map[string]*regexp.Regexp // compiled guardrails by pattern
	exprJobs     []exprJob                 // expressions waiting for runExprJobs
}

// rawLine returns the text of a 1-based line of the input.
func (c *checker) rawLine(line int) (string, bool) {
	if c.lineStart == nil {
		c.lineStart = []int{0}
		for i, b := range c.src {
			if b == '\n' {
				c.lineStart = append(c.lineStart, i+1)
			}
		}
	}
	if line < 1 || line > len(c.lineStart) {
		return "", false
	}
	start := c.lineStart[line-1]
	end := len(c.src)
	if line < len(c.lineStart) {
		end = c.lineStart[line] - 1
	}
	return string(c.src[start:end]), true
}

func (c *checker) addAt(code string, pos Pos, path, msg, sugg string) {
	c.diags = append(c.diags, Diagnostic{
		File: c.file, Line: pos.Line, Column: pos.Column, Severity: SeverityError,
		Code: code, ErrorType: ErrorTypeOf(code), Path: path, Message: msg, Suggestion: sugg,
	})
}

func (c *checker) add(code string, n *yaml.Node, path, msg, sugg string) {
	c.addAt(code, posOf(n), path, msg, sugg)
}

// warn records a warning: a problem worth fixing that does not make the spec
// invalid.
func (c *checker) warn(code string, n *yaml.Node, path, msg, sugg string) {
	pos := posOf(n)
	c.diags = append(c.diags, Diagnostic{
		File: c.file, Line: pos.Line, Column: pos.Column, Severity: SeverityWarning,
		Code: code, ErrorType: ErrorTypeOf(code), Path: path, Message: msg, Suggestion: sugg,
	})
}

func posOf(n *yaml.Node) Pos {
	if n == nil {
		return Pos{}
	}
	return Pos{n.Line, n.Column}
}

// since reports whether the spec's version is at least v.
func (c *checker) since(v string) bool { return c.version >= v }

// entry is one key of a mapping: the key node and the (alias-resolved) value.
type entry struct {
	key, val *yaml.Node
}

// mapping is a decoded YAML mapping in declaration order, with merge keys
// (`<<`) applied and duplicates reported. bad records keys whose value had
// the wrong type, so later checks do not cascade from them.
type mapping struct {
	node    *yaml.Node
	owner   *yaml.Node // the key this mapping is the value of (nil for list items and the root)
	keys    []string
	entries map[string]entry
	bad     map[string]bool
}

func (m *mapping) has(k string) bool {
	if m == nil {
		return false
	}
	_, ok := m.entries[k]
	return ok
}

func (m *mapping) get(k string) (entry, bool) {
	if m == nil {
		return entry{}, false
	}
	e, ok := m.entries[k]
	return e, ok
}

// keyNode returns the key node of k, or the mapping node.
func (m *mapping) keyNode(k string) *yaml.Node {
	if e, ok := m.get(k); ok {
		return e.key
	}
	return m.node
}

// valNode returns the value node of k, or the mapping node.
func (m *mapping) valNode(k string) *yaml.Node {
	if e, ok := m.get(k); ok {
		return e.val
	}
	return m.node
}

func joinPath(path, k string) string {
	if k == "" {
		k = `""`
	}
	if path == "" || path == "root" {
		return k
	}
	return path + "." + k
}

// asMapping decodes n (already alias-resolved) as a mapping. It reports
// duplicate keys. It returns nil if n is not a mapping (no diagnostic: the
// caller reports the type).
func (c *checker) asMapping(n *yaml.Node, path string) *mapping {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	m := &mapping{node: n, entries: map[string]entry{}, bad: map[string]bool{}}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		name := k.Value
		if k.Kind != yaml.ScalarNode {
			name = reprNode(k)
		}
		if c.badName(k, joinPath(path, EscapeControl(name)), name) {
			continue // left out, so no later message repeats it
		}
		if prev, dup := m.entries[name]; dup {
			c.add(CodeDuplicateKey, k, joinPath(path, name),
				fmt.Sprintf("duplicate key '%s' (first defined at line %d)", name, prev.key.Line),
				"Remove one of the duplicate keys.")
			continue
		}
		m.keys = append(m.keys, name)
		m.entries[name] = entry{key: k, val: v}
	}
	// Merge keys: explicit keys win; earlier merge sources win over later.
	for _, src := range merges {
		var sources []*yaml.Node
		if src.Kind == yaml.SequenceNode {
			for _, s := range src.Content {
				sources = append(sources, resolve(s))
			}
		} else {
			sources = append(sources, src)
		}
		for _, s := range sources {
			if s.Kind != yaml.MappingNode {
				c.add(CodeWrongType, s, path, fmt.Sprintf("%s is not of type 'object' (merge key '<<' needs a mapping)", reprNode(s)), "Merge only mappings with '<<'.")
				continue
			}
			sub := c.asMapping(s, path)
			for _, k := range sub.keys {
				if _, ok := m.entries[k]; ok {
					continue
				}
				m.keys = append(m.keys, k)
				m.entries[k] = sub.entries[k]
			}
		}
	}
	return m
}

// fieldSet describes the keys allowed in one kind of object.
type fieldSet struct {
	what   string            // "step", "function", … for messages
	fields map[string]string // name → first version that allows it
	ext    map[string]bool   // stratum extensions (named as such in messages)
	// required by version ("0.1", "0.2", "0.3"); missing versions fall back to the nearest lower one.
	required map[string][]string
	// open: unknown keys are allowed (JSON-Schema-like objects).
	open bool
	// lenient: unknown keys are ignored with a warning, because the original
	// accepts them (a spec valid there stays valid here).
	lenient bool
	// newer: keys of the original's newer releases that this stratum does
	// not implement (reported as unsupported, and marked bad).
	newer map[string]newerConstruct
}

func (fs *fieldSet) requiredFor(v string) []string {
	for _, cand := range []string{v, Version03, Version02, Version01} {
		if cand > v {
			continue
		}
		if r, ok := fs.required[cand]; ok {
			return r
		}
	}
	return nil
}

func (fs *fieldSet) names(version string) []string {
	var out []string
	for k, v := range fs.fields {
		if v <= version {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// checkFields reports unknown / later-version keys and missing required keys.
// It returns false if any required key is missing.
func (c *checker) checkFields(m *mapping, fs *fieldSet, path string) bool {
	kept := m.keys[:0:0]
	for _, k := range m.keys {
		since, known := fs.fields[k]
		switch {
		case known && since <= c.version:
		case known:
			what := "field"
			if fs.ext[k] {
				what = "stratum extension"
			}
			c.add(CodeNeedsVersion, m.keyNode(k), joinPath(path, k),
				fmt.Sprintf("%s '%s' (in %s) requires IR version \"%s\" or later; this spec is version \"%s\"", what, k, fs.what, since, c.version),
				fmt.Sprintf("Use version: \"%s\"", max(since, LatestVersion)))
			// Treat the key as absent from here on, so that later checks
			// do not cascade from it.
			delete(m.entries, k)
			continue
		case fs.open:
		case fs.newer[k].what != "":
			c.unsupported(fs.newer[k], m.keyNode(k), joinPath(path, k))
			delete(m.entries, k)
			m.bad[k] = true
			continue
		default:
			sugg := ""
			if a, ok := fieldAliases[k]; ok && fs.fields[a] != "" && fs.fields[a] <= c.version {
				sugg = fmt.Sprintf("did you mean %q?", a)
			} else {
				sugg = c.didYouMean(k, fs.names(c.version))
			}
			if sugg == "" {
				sugg = "Remove unrecognised fields"
			}
			if fs.lenient {
				c.warn(CodeUnknownField, m.keyNode(k), joinPath(path, k),
					fmt.Sprintf("'%s' is not a known key of %s and is ignored", k, fs.what), sugg)
				delete(m.entries, k)
				continue
			}
			c.add(CodeUnknownField, m.keyNode(k), joinPath(path, k),
				fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected in %s)", k, fs.what), sugg)
			delete(m.entries, k)
			continue
		}
		kept = append(kept, k)
	}
	m.keys = kept
	req := fs.requiredFor(c.version)
	ok := true
	at := m.node
	if m.owner != nil {
		at = m.owner
	}
	var missing []string
	for _, r := range req {
		if !m.has(r) {
			missing = append(missing, r)
		}
	}
	for _, r := range missing {
		// The original's suggestion listed every required field, present
		// or not; naming only the missing ones says what to add.
		ok = false
		c.add(CodeMissingField, at, path, fmt.Sprintf("'%s' is a required property (in %s)", r, fs.what),
			"Add required field(s): "+plainList(missing))
	}
	return ok
}

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
