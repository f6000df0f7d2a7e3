package exprlang

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stratum-go/stratum/specs"
)

// The rewrite step turns the Python-flavoured source agents write into the
// expr-lang dialect, keeping a byte map back to the original so that errors
// point into the text the user wrote:
//
//	True/False/None/null      → true/false/nil (not after '.')
//	x is None / x is not None → x == nil / x != nil
//	('a', 'b') / ('a',) / ()  → ['a', 'b'] / ['a',] / []
//	# comment                 → dropped
//	u'…' / r'…'               → '…' / `…`
//	$.steps.s.output.f        → __ref0 (skip_if only)
//	[X for v in Y if C]       → __comp(Y, v, X, C) (expr_comp.go)
//
// Generated names contain "__", which the source itself may never contain,
// so they cannot collide with or be forged by user text.

type tokKind int

const (
	tkIdent tokKind = iota
	tkKeyword
	tkString
	tkNumber
	tkPunct
	tkRef
	tkComment
)

type token struct {
	kind       tokKind
	start, end int // byte offsets in the original source
	text       string
}

// keywordOps are words that act as operators, so a '(' after them opens a
// tuple rather than a call.
var keywordOps = map[string]bool{
	"in": true, "not": true, "and": true, "or": true, "is": true, "if": true, "else": true,
	"let": true, "matches": true, "contains": true, "startsWith": true, "endsWith": true,
}

// rewritten is the result of rewriting one source text.
type rewritten struct {
	out    string
	origAt []int    // origAt[i] = byte offset in the original source of out[i]; len(out)+1 entries
	refs   []string // distinct $-reference tokens in source order; refs[i] is bound to refVar(i)
	depth  []int32  // bracket nesting depth at each byte of out; len(out)+1 entries
}

// refVar is the generated variable bound to the i-th $-reference.
func refVar(i int) string { return "__ref" + strconv.Itoa(i) }

func isIdentStart(r rune) bool { return r == '_' || r == '$' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return isIdentStart(r) || unicode.IsDigit(r) }

func isRefChar(c byte) bool {
	return c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// scanString returns the end offset (exclusive) of the quoted literal that
// starts at src[i] (the quote); len(src) when unterminated.
func scanString(src string, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j + 1
		}
	}
	return len(src)
}

// tokenize splits src into tokens. It is lenient: anything it does not
// understand becomes a one-character punctuation token for the real parser
// to reject.
func tokenize(kind specs.ExprKind, src string) ([]token, *specs.ExprError) {
	var toks []token
	for i := 0; i < len(src); {
		r, w := utf8.DecodeRuneInString(src[i:])
		c := src[i]
		switch {
		case unicode.IsSpace(r):
			i += w
		case c == '#':
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				j = len(src) - i
			}
			toks = append(toks, token{kind: tkComment, start: i, end: i + j})
			i += j
		case c == '\'' || c == '"' || c == '`':
			j := scanString(src, i)
			toks = append(toks, token{kind: tkString, start: i, end: j, text: src[i:j]})
			i = j
		case strings.ContainsRune("bBrRuUfF", r) && i+1 < len(src) && (src[i+1] == '\'' || src[i+1] == '"'):
			if c == 'f' || c == 'F' {
				return nil, &specs.ExprError{Offset: i, Message: "f-strings are not supported"}
			}
			j := scanString(src, i+1)
			toks = append(toks, token{kind: tkString, start: i, end: j, text: src[i:j]})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && (isRefChar(src[j]) && !(src[j] == '.' && j+1 < len(src) && src[j+1] == '.')) {
				if (src[j] == 'e' || src[j] == 'E') && j+1 < len(src) && (src[j+1] == '+' || src[j+1] == '-') {
					j++
				}
				j++
			}
			toks = append(toks, token{kind: tkNumber, start: i, end: j, text: src[i:j]})
			i = j
		case c == '$' && i+1 < len(src) && src[i+1] == '.':
			j := i + 2
			for j < len(src) && isRefChar(src[j]) {
				j++
			}
			if kind != specs.ExprSkipIf {
				return nil, &specs.ExprError{Offset: i, Message: "$-references are only allowed in skip_if"}
			}
			if j == i+2 {
				return nil, &specs.ExprError{Offset: i, Message: "incomplete $-reference (expected $.input.<name> or $.steps.<id>.output…)"}
			}
			toks = append(toks, token{kind: tkRef, start: i, end: j, text: src[i:j]})
			i = j
		case isIdentStart(r):
			j := i + w
			for j < len(src) {
				r2, w2 := utf8.DecodeRuneInString(src[j:])
				if !isIdentPart(r2) {
					break
				}
				j += w2
			}
			k := tkIdent
			if keywordOps[src[i:j]] {
				k = tkKeyword
			}
			toks = append(toks, token{kind: k, start: i, end: j, text: src[i:j]})
			i = j
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			return nil, &specs.ExprError{Offset: i, Message: "'//' (floor division) is not supported; use int(a / b)"}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			return nil, &specs.ExprError{Offset: i, Message: "'/*' comments are not supported; use '#'"}
		case c == '?' && i+1 < len(src) && src[i+1] == '.':
			toks = append(toks, token{kind: tkPunct, start: i, end: i + 2, text: "?."})
			i += 2
		default:
			toks = append(toks, token{kind: tkPunct, start: i, end: i + w, text: src[i : i+w]})
			i += w
		}
	}
	return toks, nil
}

// rewriteSource applies the dialect rewrites to src.
func rewriteSource(kind specs.ExprKind, src string) (*rewritten, *specs.ExprError) {
	toks, err := tokenize(kind, src)
	if err != nil {
		return nil, err
	}
	// Drop comments: they never reach the parser.
	sig := toks[:0:0]
	for _, t := range toks {
		if t.kind != tkComment {
			sig = append(sig, t)
		}
	}
	comps, cerr := findComprehensions(sig)
	if cerr != nil {
		return nil, cerr
	}
	rw := &rewritten{}
	repl, skip := replacements(sig, rw)
	e := &emitter{src: src, sig: sig, repl: repl, skip: skip, conds: findConditionals(sig), comps: comps,
		origAt: make([]int, 0, len(src)+1), depth: make([]int32, 0, len(src)+1)}
	e.emitRange(0, len(sig))
	tail := 0
	if len(sig) > 0 {
		tail = sig[len(sig)-1].end
	}
	emitGap(src[tail:], tail, e.emit)
	e.origAt = append(e.origAt, len(src))
	e.depth = append(e.depth, e.cur)
	rw.depth = e.depth
	rw.out = e.b.String()
	rw.origAt = e.origAt
	return rw, nil
}

// brackets matches the brackets of sig: match maps an opening bracket's
// token index to its closing one's, and hasComma says which opening
// brackets enclose a top-level comma.
func brackets(sig []token) (match map[int]int, hasComma map[int]bool) {
	var stack []int
	hasComma = map[int]bool{}
	match = map[int]int{}
	for i, t := range sig {
		if t.kind != tkPunct {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			stack = append(stack, i)
		case ")", "]", "}":
			if len(stack) > 0 {
				open := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				match[open] = i
			}
		case ",":
			if len(stack) > 0 {
				hasComma[stack[len(stack)-1]] = true
			}
		}
	}
	return match, hasComma
}

// replacements are the token rewrites of sig, by token index: $ references
// become variables (recorded in rw.refs), True/False/None their Go
// spellings, `is`/`is not` == and !=, u"…" and r"…" strings plain ones,
// and tuples (a '(' not preceded by an identifier, ')' ']' '}' or a
// literal, whose matching ')' encloses a top-level comma, or nothing)
// lists. skip are tokens merged into a previous replacement.
func replacements(sig []token, rw *rewritten) (repl map[int]string, skip map[int]bool) {
	repl = make(map[int]string)
	skip = make(map[int]bool)
	refIdx := map[string]int{}
	match, hasComma := brackets(sig)
	for i, t := range sig {
		var prev *token
		if i > 0 {
			prev = &sig[i-1]
		}
		afterDot := prev != nil && prev.kind == tkPunct && (prev.text == "." || prev.text == "?.")
		switch t.kind {
		case tkRef:
			n, ok := refIdx[t.text]
			if !ok {
				n = len(rw.refs)
				refIdx[t.text] = n
				rw.refs = append(rw.refs, t.text)
			}
			repl[i] = refVar(n)
		case tkIdent:
			if afterDot {
				continue
			}
			switch t.text {
			case "True":
				repl[i] = "true"
			case "False":
				repl[i] = "false"
			case "None", "null":
				repl[i] = "nil"
			}
		case tkKeyword:
			if afterDot || t.text != "is" {
				continue
			}
			if i+1 < len(sig) && sig[i+1].kind == tkKeyword && sig[i+1].text == "not" {
				repl[i] = "!="
				skip[i+1] = true
			} else {
				repl[i] = "=="
			}
		case tkString:
			switch t.text[0] {
			case 'u', 'U':
				repl[i] = t.text[1:]
			case 'r', 'R':
				body := t.text[2:]
				if strings.HasSuffix(body, t.text[1:2]) && len(body) > 0 {
					body = body[:len(body)-1]
				}
				if !strings.Contains(body, "`") {
					repl[i] = "`" + body + "`"
				}
			}
		case tkPunct:
			if t.text != "(" {
				continue
			}
			if prev != nil {
				switch prev.kind {
				case tkIdent, tkString, tkNumber, tkRef:
					continue
				case tkPunct:
					if prev.text == ")" || prev.text == "]" || prev.text == "}" {
						continue
					}
				}
			}
			end, ok := match[i]
			if !ok || sig[end].text != ")" {
				continue
			}
			if hasComma[i] || end == i+1 {
				repl[i] = "["
				repl[end] = "]"
			}
		}
	}
	return repl, skip
}

// emitter assembles the rewritten source and its offset map: origAt[k] is
// the offset in the source of output byte k, depth[k] its bracket depth.
type emitter struct {
	src    string
	sig    []token
	repl   map[int]string
	skip   map[int]bool
	conds  map[int]conditional
	comps  map[int]comprehension
	b      strings.Builder
	origAt []int
	depth  []int32
	cur    int32
}

// emit writes s, from source offset orig (same: byte for byte, else every
// byte maps to orig).
func (e *emitter) emit(s string, orig int, same bool) {
	for k := 0; k < len(s); k++ {
		if same {
			e.origAt = append(e.origAt, orig+k)
		} else {
			e.origAt = append(e.origAt, orig)
		}
		e.depth = append(e.depth, e.cur)
	}
	e.b.WriteString(s)
}

// emitSyn writes generated brackets, keeping the depth map right.
func (e *emitter) emitSyn(s string, orig int) {
	for k := 0; k < len(s); k++ {
		c := s[k]
		if c == ')' {
			e.cur--
		}
		e.emit(s[k:k+1], orig, false)
		if c == '(' {
			e.cur++
		}
	}
}

// emitTok writes token i (rewritten) and the text before it.
func (e *emitter) emitTok(i int) {
	t := e.sig[i]
	prevEnd := 0
	if i > 0 {
		prevEnd = e.sig[i-1].end
	}
	// Text between tokens (whitespace; comments become one space each).
	emitGap(e.src[prevEnd:t.start], prevEnd, e.emit)
	text := e.src[t.start:t.end]
	if r, ok := e.repl[i]; ok {
		text = r
	}
	if e.skip[i] {
		text = ""
	}
	closes := t.kind == tkPunct && (text == ")" || text == "]" || text == "}")
	if closes {
		e.cur--
	}
	e.emit(text, t.start, !e.skip[i] && e.repl[i] == "")
	if t.kind == tkPunct && (text == "(" || text == "[" || text == "{") {
		e.cur++
	}
}

// emitRange writes tokens [lo, hi): Python's `X if C else Y` becomes
// `((C) ? (X) : (Y))`, a comprehension a __comp call (expr_comp.go).
func (e *emitter) emitRange(lo, hi int) {
	sig := e.sig
	for i := lo; i < hi; {
		if c, ok := e.conds[i]; ok && c.end <= hi {
			at := sig[c.ifIdx].start
			e.emitSyn("((", at)
			e.emitRange(c.ifIdx+1, c.elseIdx)
			e.emitSyn(") ? (", at)
			e.emitRange(c.start, c.ifIdx)
			e.emitSyn(") : (", sig[c.elseIdx].start)
			e.emitRange(c.elseIdx+1, c.end)
			e.emitSyn("))", sig[c.elseIdx].start)
			i = c.end
			continue
		}
		if c, ok := e.comps[i]; ok && c.close < hi {
			e.emitComp(c)
			i = c.close + 1
			continue
		}
		e.emitTok(i)
		i++
	}
}

// conditional is a Python conditional expression `X if C else Y` as token
// indexes: X is [start, ifIdx), C (ifIdx, elseIdx), Y (elseIdx, end).
type conditional struct{ start, ifIdx, elseIdx, end int }

// findConditionals finds Python conditional expressions, keyed by the
// index of their first token. An `if` is a conditional when it follows an
// operand (expr's own `if c {…}` starts an expression instead). X reaches
// back and Y forward to the nearest unmatched bracket, ',', ':', ';' or a
// comprehension's `for` (and X stops after an `else`, so
// `a if b else c if d else e` nests to the right).
func findConditionals(sig []token) map[int]conditional {
	conds := map[int]conditional{}
	isOpen := func(t token) bool { return t.kind == tkPunct && (t.text == "(" || t.text == "[" || t.text == "{") }
	isClose := func(t token) bool { return t.kind == tkPunct && (t.text == ")" || t.text == "]" || t.text == "}") }
	isSep := func(t token) bool {
		return t.kind == tkPunct && (t.text == "," || t.text == ":" || t.text == ";") || isWord(t, "for")
	}
	isKw := func(t token, w string) bool { return t.kind == tkKeyword && t.text == w }
	for i, t := range sig {
		if !isKw(t, "if") || i == 0 {
			continue
		}
		switch p := sig[i-1]; {
		case p.kind == tkIdent || p.kind == tkString || p.kind == tkNumber || p.kind == tkRef:
		case isClose(p):
		default:
			continue
		}
		// X: back to the enclosing boundary.
		start, n := 0, 0
		for j := i - 1; j >= 0; j-- {
			u := sig[j]
			if isClose(u) {
				n++
			} else if isOpen(u) {
				if n == 0 {
					start = j + 1
					break
				}
				n--
			} else if n == 0 && (isSep(u) || isKw(u, "else") || isKw(u, "if")) {
				start = j + 1
				break
			}
		}
		// C: forward to the matching `else` at the same level.
		elseIdx := -1
		n = 0
		for j := i + 1; j < len(sig) && elseIdx < 0; j++ {
			u := sig[j]
			switch {
			case isOpen(u):
				n++
			case isClose(u):
				n--
			case n == 0 && isKw(u, "else"):
				elseIdx = j
			case n == 0 && isKw(u, "if"):
				// A conditional inside C must be parenthesised in Python.
				j = len(sig)
			}
			if n < 0 || (n == 0 && isSep(u)) {
				break
			}
		}
		if elseIdx < 0 {
			continue
		}
		// Y: forward to the enclosing boundary.
		end := len(sig)
		n = 0
		for j := elseIdx + 1; j < len(sig); j++ {
			u := sig[j]
			if isOpen(u) {
				n++
			} else if isClose(u) {
				if n == 0 {
					end = j
					break
				}
				n--
			} else if n == 0 && isSep(u) {
				end = j
				break
			}
		}
		if start >= i || elseIdx+1 >= end || elseIdx == i+1 {
			continue // an operand is empty: leave it to the parser to report
		}
		if _, dup := conds[start]; !dup {
			conds[start] = conditional{start: start, ifIdx: i, elseIdx: elseIdx, end: end}
		}
	}
	return conds
}

// emitGap copies inter-token text, blanking out '#' comments.
func emitGap(gap string, base int, emit func(string, int, bool)) {
	for len(gap) > 0 {
		h := strings.IndexByte(gap, '#')
		if h < 0 {
			emit(gap, base, true)
			return
		}
		emit(gap[:h], base, true)
		nl := strings.IndexByte(gap[h:], '\n')
		if nl < 0 {
			emit(" ", base+h, false)
			return
		}
		emit(" ", base+h, false)
		gap = gap[h+nl:]
		base += h + nl
	}
}

// outByte maps a rune offset in the rewritten text to a byte offset in it
// (len(out) when past the end).
func (rw *rewritten) outByte(runeOff int) int {
	n := 0
	for i := range rw.out {
		if n == runeOff {
			return i
		}
		n++
	}
	return len(rw.out)
}

// sameLevel reports whether the operators at rune offsets a < b of the
// rewritten text are at the same bracket depth with nothing in between
// closing that level: `x < y < z`, but not `(x < y) < z`.
func (rw *rewritten) sameLevel(a, b int) bool {
	i, j := rw.outByte(a), rw.outByte(b)
	if i > j {
		i, j = j, i
	}
	d := rw.depth[i]
	for k := i; k <= j && k < len(rw.depth); k++ {
		if rw.depth[k] < d {
			return false
		}
	}
	return rw.depth[j] == d
}

// origOffset maps a rune offset in the rewritten text (as expr reports it)
// to a byte offset in the original source; -1 if out of range.
func (rw *rewritten) origOffset(runeOff int) int {
	if runeOff < 0 {
		return -1
	}
	n := 0
	for i := range rw.out {
		if n == runeOff {
			return rw.origAt[i]
		}
		n++
	}
	if n == runeOff {
		return rw.origAt[len(rw.out)]
	}
	return -1
}
