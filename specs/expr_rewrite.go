package specs

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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
//
// Generated names contain "__", which the source itself may never contain,
// so they cannot collide with or be forged by user text.

type xTokKind int

const (
	xTkIdent xTokKind = iota
	xTkKeyword
	xTkString
	xTkNumber
	xTkPunct
	xTkRef
	xTkComment
)

type xToken struct {
	kind       xTokKind
	start, end int // byte offsets in the original source
	text       string
}

// xKeywordOps are words that act as operators, so a '(' after them opens a
// tuple rather than a xCall.
var xKeywordOps = map[string]bool{
	"in": true, "not": true, "and": true, "or": true, "is": true, "if": true, "else": true,
	"let": true, "matches": true, "contains": true, "startsWith": true, "endsWith": true,
}

// xRewritten is the result of rewriting one source text.
type xRewritten struct {
	out    string
	origAt []int    // origAt[i] = byte offset in the original source of out[i]; len(out)+1 entries
	refs   []string // distinct $-reference tokens in source order; refs[i] is bound to xRefVar(i)
	depth  []int32  // bracket nesting depth at each byte of out; len(out)+1 entries
}

// xRefVar is the generated variable bound to the i-th $-reference.
func xRefVar(i int) string { return "__ref" + strconv.Itoa(i) }

func xIsIdentStart(r rune) bool { return r == '_' || r == '$' || unicode.IsLetter(r) }
func xIsIdentPart(r rune) bool  { return xIsIdentStart(r) || unicode.IsDigit(r) }

func xIsRefChar(c byte) bool {
	return c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// xScanString returns the end offset (exclusive) of the quoted literal that
// starts at src[i] (the quote); len(src) when unterminated.
func xScanString(src string, i int) int {
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

// xTokenize splits src into tokens. It is lenient: anything it does not
// understand becomes a one-character punctuation xToken for the real parser
// to reject.
func xTokenize(kind ExprKind, src string) ([]xToken, *ExprError) {
	var toks []xToken
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
			toks = append(toks, xToken{kind: xTkComment, start: i, end: i + j})
			i += j
		case c == '\'' || c == '"' || c == '`':
			j := xScanString(src, i)
			toks = append(toks, xToken{kind: xTkString, start: i, end: j, text: src[i:j]})
			i = j
		case strings.ContainsRune("bBrRuUfF", r) && i+1 < len(src) && (src[i+1] == '\'' || src[i+1] == '"'):
			if c == 'f' || c == 'F' {
				return nil, &ExprError{Offset: i, Message: "f-strings are not supported"}
			}
			j := xScanString(src, i+1)
			toks = append(toks, xToken{kind: xTkString, start: i, end: j, text: src[i:j]})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && (xIsRefChar(src[j]) && !(src[j] == '.' && j+1 < len(src) && src[j+1] == '.')) {
				if (src[j] == 'e' || src[j] == 'E') && j+1 < len(src) && (src[j+1] == '+' || src[j+1] == '-') {
					j++
				}
				j++
			}
			toks = append(toks, xToken{kind: xTkNumber, start: i, end: j, text: src[i:j]})
			i = j
		case c == '$' && i+1 < len(src) && src[i+1] == '.':
			j := i + 2
			for j < len(src) && xIsRefChar(src[j]) {
				j++
			}
			if kind != ExprSkipIf {
				return nil, &ExprError{Offset: i, Message: "$-references are only allowed in skip_if"}
			}
			if j == i+2 {
				return nil, &ExprError{Offset: i, Message: "incomplete $-reference (expected $.input.<name> or $.steps.<id>.output…)"}
			}
			toks = append(toks, xToken{kind: xTkRef, start: i, end: j, text: src[i:j]})
			i = j
		case xIsIdentStart(r):
			j := i + w
			for j < len(src) {
				r2, w2 := utf8.DecodeRuneInString(src[j:])
				if !xIsIdentPart(r2) {
					break
				}
				j += w2
			}
			k := xTkIdent
			if xKeywordOps[src[i:j]] {
				k = xTkKeyword
			}
			toks = append(toks, xToken{kind: k, start: i, end: j, text: src[i:j]})
			i = j
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			return nil, &ExprError{Offset: i, Message: "'//' (floor division) is not supported; use int(a / b)"}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			return nil, &ExprError{Offset: i, Message: "'/*' comments are not supported; use '#'"}
		case c == '?' && i+1 < len(src) && src[i+1] == '.':
			toks = append(toks, xToken{kind: xTkPunct, start: i, end: i + 2, text: "?."})
			i += 2
		default:
			toks = append(toks, xToken{kind: xTkPunct, start: i, end: i + w, text: src[i : i+w]})
			i += w
		}
	}
	return toks, nil
}

// xRewriteSource applies the dialect rewrites to src.
func xRewriteSource(kind ExprKind, src string) (*xRewritten, *ExprError) {
	toks, err := xTokenize(kind, src)
	if err != nil {
		return nil, err
	}
	// Drop comments: they never reach the parser.
	sig := toks[:0:0]
	for _, t := range toks {
		if t.kind != xTkComment {
			sig = append(sig, t)
		}
	}

	repl := make(map[int]string) // xToken index → replacement text
	skip := make(map[int]bool)   // xToken index → removed entirely (merged into a previous replacement)
	refIdx := map[string]int{}
	rw := &xRewritten{}

	// Tuples: a '(' not preceded by an identifier, ')' ']' '}' or a literal,
	// whose matching ')' encloses a top-level comma (or nothing).
	var stack []int
	hasComma := map[int]bool{}
	match := map[int]int{}
	for i, t := range sig {
		if t.kind != xTkPunct {
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

	for i, t := range sig {
		var prev *xToken
		if i > 0 {
			prev = &sig[i-1]
		}
		afterDot := prev != nil && prev.kind == xTkPunct && (prev.text == "." || prev.text == "?.")
		switch t.kind {
		case xTkRef:
			n, ok := refIdx[t.text]
			if !ok {
				n = len(rw.refs)
				refIdx[t.text] = n
				rw.refs = append(rw.refs, t.text)
			}
			repl[i] = xRefVar(n)
		case xTkIdent:
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
		case xTkKeyword:
			if afterDot || t.text != "is" {
				continue
			}
			if i+1 < len(sig) && sig[i+1].kind == xTkKeyword && sig[i+1].text == "not" {
				repl[i] = "!="
				skip[i+1] = true
			} else {
				repl[i] = "=="
			}
		case xTkString:
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
		case xTkPunct:
			if t.text != "(" {
				continue
			}
			if prev != nil {
				switch prev.kind {
				case xTkIdent, xTkString, xTkNumber, xTkRef:
					continue
				case xTkPunct:
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

	conds := xFindConditionals(sig)

	// Assemble the output and the offset map.
	var b strings.Builder
	origAt := make([]int, 0, len(src)+1)
	depth := make([]int32, 0, len(src)+1)
	var cur int32
	emit := func(s string, orig int, same bool) {
		for k := 0; k < len(s); k++ {
			if same {
				origAt = append(origAt, orig+k)
			} else {
				origAt = append(origAt, orig)
			}
			depth = append(depth, cur)
		}
		b.WriteString(s)
	}
	// emitSyn writes generated brackets, keeping the depth map right.
	emitSyn := func(s string, orig int) {
		for k := 0; k < len(s); k++ {
			c := s[k]
			if c == ')' {
				cur--
			}
			emit(s[k:k+1], orig, false)
			if c == '(' {
				cur++
			}
		}
	}
	emitTok := func(i int) {
		t := sig[i]
		prevEnd := 0
		if i > 0 {
			prevEnd = sig[i-1].end
		}
		// Text between tokens (whitespace; comments become one space each).
		xEmitGap(src[prevEnd:t.start], prevEnd, emit)
		text := src[t.start:t.end]
		if r, ok := repl[i]; ok {
			text = r
		}
		if skip[i] {
			text = ""
		}
		closes := t.kind == xTkPunct && (text == ")" || text == "]" || text == "}")
		if closes {
			cur--
		}
		emit(text, t.start, !skip[i] && repl[i] == "")
		if t.kind == xTkPunct && (text == "(" || text == "[" || text == "{") {
			cur++
		}
	}
	// Python's `X if C else Y` becomes `((C) ? (X) : (Y))`.
	var emitRange func(lo, hi int)
	emitRange = func(lo, hi int) {
		for i := lo; i < hi; {
			if c, ok := conds[i]; ok && c.end <= hi {
				at := sig[c.ifIdx].start
				emitSyn("((", at)
				emitRange(c.ifIdx+1, c.elseIdx)
				emitSyn(") ? (", at)
				emitRange(c.xStart, c.ifIdx)
				emitSyn(") : (", sig[c.elseIdx].start)
				emitRange(c.elseIdx+1, c.end)
				emitSyn("))", sig[c.elseIdx].start)
				i = c.end
				continue
			}
			emitTok(i)
			i++
		}
	}
	emitRange(0, len(sig))
	tail := 0
	if len(sig) > 0 {
		tail = sig[len(sig)-1].end
	}
	xEmitGap(src[tail:], tail, emit)
	origAt = append(origAt, len(src))
	depth = append(depth, cur)
	rw.depth = depth
	rw.out = b.String()
	rw.origAt = origAt
	return rw, nil
}

// xConditional is a Python conditional expression `X if C else Y` as token
// indexes: X is [xStart, ifIdx), C (ifIdx, elseIdx), Y (elseIdx, end).
type xConditional struct{ xStart, ifIdx, elseIdx, end int }

// xFindConditionals finds Python conditional expressions, keyed by the
// index of their first token. An `if` is a conditional when it follows an
// operand (expr's own `if c {…}` starts an expression instead). X reaches
// back and Y forward to the nearest unmatched bracket, ',', ':' or ';' (and X
// stops after an `else`, so `a if b else c if d else e` nests to the right).
func xFindConditionals(sig []xToken) map[int]xConditional {
	conds := map[int]xConditional{}
	isOpen := func(t xToken) bool { return t.kind == xTkPunct && (t.text == "(" || t.text == "[" || t.text == "{") }
	isClose := func(t xToken) bool { return t.kind == xTkPunct && (t.text == ")" || t.text == "]" || t.text == "}") }
	isSep := func(t xToken) bool { return t.kind == xTkPunct && (t.text == "," || t.text == ":" || t.text == ";") }
	isKw := func(t xToken, w string) bool { return t.kind == xTkKeyword && t.text == w }
	for i, t := range sig {
		if !isKw(t, "if") || i == 0 {
			continue
		}
		switch p := sig[i-1]; {
		case p.kind == xTkIdent || p.kind == xTkString || p.kind == xTkNumber || p.kind == xTkRef:
		case isClose(p):
		default:
			continue
		}
		// X: back to the enclosing boundary.
		xStart, n := 0, 0
		for j := i - 1; j >= 0; j-- {
			u := sig[j]
			if isClose(u) {
				n++
			} else if isOpen(u) {
				if n == 0 {
					xStart = j + 1
					break
				}
				n--
			} else if n == 0 && (isSep(u) || isKw(u, "else") || isKw(u, "if")) {
				xStart = j + 1
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
		if xStart >= i || elseIdx+1 >= end || elseIdx == i+1 {
			continue // an operand is empty: leave it to the parser to report
		}
		if _, dup := conds[xStart]; !dup {
			conds[xStart] = xConditional{xStart: xStart, ifIdx: i, elseIdx: elseIdx, end: end}
		}
	}
	return conds
}

// xEmitGap copies inter-xToken text, blanking out '#' comments.
func xEmitGap(gap string, base int, emit func(string, int, bool)) {
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
func (rw *xRewritten) outByte(runeOff int) int {
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
func (rw *xRewritten) sameLevel(a, b int) bool {
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

// origOffset maps a rune offset in the xRewritten text (as expr reports it)
// to a byte offset in the original source; -1 if out of range.
func (rw *xRewritten) origOffset(runeOff int) int {
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
