package specs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// MaxSpecBytes is the largest spec Parse accepts (code too-large).
const MaxSpecBytes = 8 << 20

// MaxDepth is the deepest nesting of mappings and sequences Parse accepts
// (code too-deep).
const MaxDepth = 32

// maxAliasExpansion bounds how many nodes aliases may add to the document
// when expanded (code yaml-aliases): a billion-laughs document is refused
// before anything walks it.
const maxAliasExpansion = 1_000_000

// Parse decodes, validates and normalises one spec. The Spec is non-nil only
// when there is no error-severity diagnostic. Diagnostics are sorted
// (Diagnostics.Sort). file goes into every Diagnostic.File; Spec.Source keeps
// src. Parse never panics and runs in time and memory bounded by the input
// size.
//
// compile compiles the spec's expressions (exprlang.Compile, of package
// specs/exprlang); with nil, a spec with an expression does not parse.
func Parse(file string, src []byte, compile ExprCompiler) (spec *Spec, ds Diagnostics) {
	c := &checker{file: file, src: src, compileExpr: compile}
	defer func() {
		if r := recover(); r != nil {
			spec = nil
			c.diags = append(c.diags, Diagnostic{
				File: file, Line: 0, Column: 0, Severity: SeverityError,
				Code: CodeYAMLSyntax, ErrorType: ParseError, Path: "root",
				Message:    fmt.Sprintf("internal validator error: %v", r),
				Suggestion: "This is a bug in stratum; please report it with the spec.",
			})
			c.diags.Sort()
			ds = c.diags
		}
	}()
	root := c.decode(src)
	if root != nil {
		spec = c.check(root, src)
	}
	c.diags.Sort()
	if c.diags.HasErrors() {
		spec = nil
	}
	return spec, c.diags
}

// ParseFile reads path and calls Parse with it and compile. Files larger
// than MaxSpecBytes are refused without being read whole.
func ParseFile(path string, compile ExprCompiler) (*Spec, Diagnostics) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Diagnostics{fileDiag(path, err)}
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxSpecBytes {
		return nil, Diagnostics{tooLargeDiag(path)}
	}
	// Non-regular files (pipes, devices) are read up to the limit.
	src, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, Diagnostics{fileDiag(path, err)}
	}
	if len(src) > MaxSpecBytes {
		return nil, Diagnostics{tooLargeDiag(path)}
	}
	return Parse(path, src, compile)
}

func fileDiag(path string, err error) Diagnostic {
	return Diagnostic{
		File: path, Severity: SeverityError, Code: CodeYAMLSyntax, ErrorType: ParseError,
		Path: "root", Message: "cannot read spec: " + err.Error(),
		Suggestion: "Check that the file exists and is readable.",
	}
}

func tooLargeDiag(file string) Diagnostic {
	return Diagnostic{
		File: file, Severity: SeverityError, Code: CodeTooLarge, ErrorType: ParseError,
		Path:       "root",
		Message:    fmt.Sprintf("spec is larger than %d bytes (8 MiB)", MaxSpecBytes),
		Suggestion: "Split the spec into smaller files.",
	}
}

var yamlLineRe = regexp.MustCompile(`line (\d+)`)

// decode runs the parse stage and returns the root node (alias-resolved), or
// nil after an ir_parse_error / not-mapping diagnostic.
func (c *checker) decode(src []byte) *yaml.Node {
	if len(src) > MaxSpecBytes {
		c.diags = append(c.diags, tooLargeDiag(c.file))
		return nil
	}
	if !utf8.Valid(src) {
		line, col := badUTF8Pos(src)
		c.addAt(CodeInvalidUTF8, Pos{line, col}, "root",
			fmt.Sprintf("spec is not valid UTF-8 (first invalid byte at line %d, column %d)", line, col),
			"Save the file as UTF-8.")
		return nil
	}
	if len(bytes.TrimSpace(src)) == 0 {
		c.addAt(CodeEmpty, Pos{}, "root", "Empty or blank YAML input", "Write a spec starting with version: \"0.3\".")
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := safeDecode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			c.addAt(CodeEmpty, Pos{}, "root", "Empty or blank YAML input (no YAML document, only comments)", "Write a spec starting with version: \"0.3\".")
			return nil
		}
		c.yamlError(err, src)
		return nil
	}
	var second yaml.Node
	if err := safeDecode(dec, &second); err == nil {
		pos := Pos{second.Line, second.Column}
		if pos.Line == 0 {
			pos = Pos{1, 1}
		}
		c.addAt(CodeMultipleDocuments, pos, "root",
			"expected a single YAML document, but the input contains more than one",
			"Remove the extra '---' document separator, or split the documents into separate spec files.")
		return nil
	} else if !errors.Is(err, io.EOF) {
		c.yamlError(err, src)
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		c.addAt(CodeEmpty, Pos{}, "root", "Empty or blank YAML input", "Write a spec starting with version: \"0.3\".")
		return nil
	}
	// Bound alias expansion and depth before anything walks the tree.
	m := newMeasurer(len(src))
	h, size := m.measure(doc.Content[0])
	if m.cyclic || size-m.distinct > maxAliasExpansion {
		c.addAt(CodeYAMLAliases, m.aliasPos(doc.Content[0]), "root",
			"YAML document contains excessive aliasing (aliases expand to too many nodes)",
			"Do not use YAML anchors/aliases to build large or recursive structures.")
		return nil
	}
	if h > MaxDepth {
		c.addAt(CodeTooDeep, m.deepPos, "root",
			fmt.Sprintf("YAML nesting is %d levels deep; the limit is %d", h, MaxDepth),
			"Flatten the structure.")
		return nil
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		c.addAt(CodeNotMapping, Pos{root.Line, root.Column}, "root",
			fmt.Sprintf("%s is not of type 'object': a spec must be a YAML mapping", reprNode(root)),
			"A spec is a mapping with version, contracts, functions and flows keys.")
		return nil
	}
	return root
}

// safeDecode runs yaml.v3 with a panic guard.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: parser failure: %v", r)
		}
	}()
	return dec.Decode(n)
}

// yamlError classifies a yaml.v3 error.
func (c *checker) yamlError(err error, src []byte) {
	msg := err.Error()
	line := 0
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	switch {
	case strings.Contains(msg, "excessive aliasing"):
		c.addAt(CodeYAMLAliases, Pos{line, 1}, "root", "YAML document contains excessive aliasing",
			"Do not use YAML anchors/aliases to build large or recursive structures.")
		return
	case strings.Contains(msg, "exceeded max depth"):
		c.addAt(CodeTooDeep, Pos{line, 1}, "root",
			fmt.Sprintf("YAML nesting is deeper than the limit of %d", MaxDepth), "Flatten the structure.")
		return
	}
	line = failingLine(src, line)
	limit := line + 1
	if strings.Contains(msg, "tab") || line == 0 {
		limit = 0
	}
	if tl, tc, ok := findIndentTab(src, limit); ok {
		c.addAt(CodeYAMLTab, Pos{tl, tc}, "root",
			"tabs are not allowed for indentation; use spaces",
			"Replace the tab characters at the start of the line with spaces.")
		return
	}
	text := strings.TrimPrefix(msg, "yaml: ")
	text = regexp.MustCompile(`^line \d+: `).ReplaceAllString(text, "")
	pos := Pos{line, 1}
	if line == 0 {
		pos = Pos{}
	}
	c.addAt(CodeYAMLSyntax, pos, "root", "YAML syntax error: "+text,
		"Check YAML syntax — indentation, colons, quoting.")
}

// maxPrefixSearch bounds the input size for which failingLine re-parses
// prefixes of the input to locate a syntax error.
const maxPrefixSearch = 1 << 20

// failingLine refines the line of a YAML syntax error. yaml.v3 reports the
// line of the enclosing construct, which can be far above the real problem;
// the first line at which a prefix of the input stops parsing is a better
// answer. It binary-searches prefixes ending at line boundaries, starting
// from yaml.v3's line.
func failingLine(src []byte, reported int) int {
	if len(src) > maxPrefixSearch {
		return reported
	}
	var ends []int // ends[i] = offset just after line i+1
	for i, b := range src {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(src) {
		ends = append(ends, len(src))
	}
	fails := func(k int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(src[:ends[k-1]]))
		for {
			var n yaml.Node
			err := safeDecode(dec, &n)
			if errors.Is(err, io.EOF) {
				return false
			}
			if err != nil {
				return true
			}
		}
	}
	lo, hi := max(reported, 1), len(ends)
	if lo > hi || !fails(hi) {
		return reported
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi
}

// findIndentTab finds the first line (at or before errLine when errLine > 0)
// whose leading whitespace contains a tab.
func findIndentTab(src []byte, errLine int) (line, col int, ok bool) {
	lines := bytes.Split(src, []byte("\n"))
	for i, l := range lines {
		if errLine > 0 && i+1 > errLine {
			break
		}
		for j, b := range l {
			if b == '\t' {
				return i + 1, j + 1, true
			}
			if b != ' ' {
				break
			}
		}
	}
	return 0, 0, false
}

// badUTF8Pos returns the 1-based line and column (in characters) of the first
// invalid UTF-8 byte.
func badUTF8Pos(src []byte) (line, col int) {
	line, col = 1, 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return line, col
}

// measurer computes, with memoisation, the nesting height and the expanded
// size of every node, following aliases, so that alias bombs are detected
// without expanding them.
type measurer struct {
	memo     map[*yaml.Node]measured
	distinct int
	cyclic   bool
	deepPos  Pos
}

type measured struct {
	height, size int
	busy         bool
}

const sizeCap = 1 << 40

func newMeasurer(srcLen int) *measurer {
	return &measurer{memo: make(map[*yaml.Node]measured, srcLen/16+16)}
}

func (m *measurer) measure(n *yaml.Node) (height, size int) {
	if n == nil {
		return 0, 0
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 0, 1
		}
		return m.measure(n.Alias)
	}
	if len(n.Content) == 0 {
		// Leaves are never shared in a way that matters: count them
		// without memoising.
		m.distinct++
		if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
			return 1, 1
		}
		return 0, 1
	}
	if r, ok := m.memo[n]; ok {
		if r.busy {
			m.cyclic = true
			return 0, sizeCap
		}
		return r.height, r.size
	}
	m.memo[n] = measured{busy: true}
	m.distinct++
	size = 1
	for _, ch := range n.Content {
		h, s := m.measure(ch)
		height = max(height, h)
		size = min(size+s, sizeCap)
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		height++
		if height > MaxDepth && m.deepPos == (Pos{}) {
			m.deepPos = Pos{n.Line, n.Column}
		}
	}
	m.memo[n] = measured{height: height, size: size}
	return height, size
}

// aliasPos returns the position of the first alias node in document order.
func (m *measurer) aliasPos(root *yaml.Node) Pos {
	seen := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node) (Pos, bool)
	walk = func(n *yaml.Node) (Pos, bool) {
		if n == nil || seen[n] {
			return Pos{}, false
		}
		seen[n] = true
		if n.Kind == yaml.AliasNode {
			return Pos{n.Line, n.Column}, true
		}
		for _, ch := range n.Content {
			if p, ok := walk(ch); ok {
				return p, true
			}
		}
		return Pos{}, false
	}
	if p, ok := walk(root); ok {
		return p
	}
	return Pos{root.Line, root.Column}
}

// resolve follows aliases (bounded: aliases were checked by measure).
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 64; i++ {
		n = n.Alias
	}
	return n
}
