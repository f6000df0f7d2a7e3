package specs

import (
	"fmt"
	"regexp"
	"sort"

	"gopkg.in/yaml.v3"
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
	compileExpr  ExprCompiler              // Parse's compiler; nil: every expression is an error
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
