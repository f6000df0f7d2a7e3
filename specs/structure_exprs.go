package specs

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"gopkg.in/yaml.v3"
)

// The expressions of a spec are compiled during Parse, after the structural
// walk has queued them: every distinct (kind, source) pair is compiled once,
// in parallel, and at most MaxExprs of them per spec; each occurrence gets
// its own Expr with its position, or a diagnostic pointing into the scalar.

// expr queues the compilation of an expression field (a string); set
// receives the compiled expression (see runExprJobs).
func (c *checker) expr(m *mapping, k, path, spath string, kind ExprKind, set func(*Expr)) {
	src, ok := c.str(m, k, path, true)
	if !ok {
		return
	}
	c.compile(kind, src, m.valNode(k), spath, string(kind), set)
}

// exprJob is one expression occurrence waiting to be compiled.
type exprJob struct {
	key   exprKey
	n     *yaml.Node
	spath string
	label string
	set   func(*Expr)
}

// compile queues one expression for compilation; runExprJobs compiles every
// distinct expression once (in parallel), then calls set for the ones that
// compiled and reports the others at the scalar node (with a column inside
// the expression when the scalar is a one-line plain or quoted scalar).
func (c *checker) compile(kind ExprKind, src string, n *yaml.Node, spath, label string, set func(*Expr)) {
	c.exprJobs = append(c.exprJobs, exprJob{key: exprKey{kind, src}, n: n, spath: spath, label: label, set: set})
}

// MaxExprs bounds the number of distinct expressions one spec may contain.
const MaxExprs = 5000

// runExprJobs compiles the queued expressions and hands them to their
// setters in the order they were queued.
func (c *checker) runExprJobs() {
	if c.exprCache == nil {
		c.exprCache = map[exprKey]exprResult{}
	}
	var keys []exprKey
	for _, j := range c.exprJobs {
		if _, seen := c.exprCache[j.key]; !seen {
			c.exprCache[j.key] = exprResult{}
			keys = append(keys, j.key)
		}
	}
	if len(keys) > MaxExprs {
		// Compiling costs ~0.1 ms and tens of KB per expression: refuse a
		// spec with more distinct expressions than any real flow needs, so
		// validation stays bounded in time and memory.
		seen := map[exprKey]bool{}
		for _, j := range c.exprJobs {
			seen[j.key] = true
			if len(seen) > MaxExprs {
				c.add(CodeTooLarge, j.n, j.spath,
					fmt.Sprintf("spec has %d distinct expressions; at most %d are allowed", len(keys), MaxExprs),
					"Split the spec, or reuse functions instead of repeating steps")
				break
			}
		}
		c.exprJobs = nil
		return
	}
	results := make([]exprResult, len(keys))
	workers := min(runtime.GOMAXPROCS(0), 8, len(keys)/16+1)
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(keys) {
					return
				}
				results[i].e, results[i].err = safeCompileExpr(c.compileExpr, keys[i].kind, keys[i].src)
			}
		})
	}
	wg.Wait()
	for i, k := range keys {
		c.exprCache[k] = results[i]
	}
	for _, j := range c.exprJobs {
		r := c.exprCache[j.key]
		if r.err != nil || r.e == nil {
			c.reportExprError(j, r.err)
			continue
		}
		// Identical expressions share one compiled program (Eval is safe
		// for concurrent use); each occurrence gets its own Expr with its
		// position.
		cp := *r.e
		cp.Pos = posOf(j.n)
		j.set(&cp)
	}
	c.exprJobs = nil
}

// safeCompileExpr is compile with a panic guard (it runs in a worker
// goroutine, where a panic would not reach Parse's recover).
func safeCompileExpr(compile ExprCompiler, kind ExprKind, src string) (e *Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, &ExprError{Offset: -1, Message: fmt.Sprintf("cannot compile expression: %v", r)}
		}
	}()
	if compile == nil {
		return nil, &ExprError{Offset: -1, Message: "expressions cannot be compiled: Parse was given no expression compiler"}
	}
	return compile(kind, src)
}

func (c *checker) reportExprError(j exprJob, err error) {
	src := j.key.src
	msg := "cannot compile expression"
	if err != nil {
		msg = err.Error()
	}
	forbidden, newer := false, ""
	off := -1
	if ee, ok := err.(*ExprError); ok {
		msg, forbidden, newer, off = ee.Message, ee.Forbidden, ee.Newer, ee.Offset
	}
	pos := c.exprPos(j.n, src, off)
	switch {
	case newer != "":
		c.addAt(CodeUnsupported, pos, j.spath, fmt.Sprintf("%s expression '%s': %s", j.label, src, msg), newerBuiltins[newer].hint)
	case forbidden && j.key.kind == ExprPredicate:
		c.addAt(CodeExprForbidden, pos, j.spath, fmt.Sprintf("%s expression '%s' is not allowed: %s", j.label, src, msg),
			fmt.Sprintf("A deterministic predicate may call %s, with paths under %s of the staged turn.", strings.Join(PredicateBuiltins, ", "), strings.Join(PredicateBuckets, " or ")))
	case forbidden:
		c.addAt(CodeExprForbidden, pos, j.spath, fmt.Sprintf("%s expression '%s' is not allowed: %s", j.label, src, msg),
			"Expressions may not use '__' or call functions outside the allowed builtins.")
	default:
		c.addAt(CodeExprSyntax, pos, j.spath, fmt.Sprintf("Cannot compile %s expression '%s': %s", j.label, src, msg),
			"Fix the expression syntax.")
	}
}

type exprKey struct {
	kind ExprKind
	src  string
}

type exprResult struct {
	e   *Expr
	err error
}

// exprPos returns the position of byte offset off of an expression whose
// source is the scalar n: inside the scalar when it is a plain or quoted
// scalar and the offset lies on its first line, else the scalar itself.
func (c *checker) exprPos(n *yaml.Node, src string, off int) Pos {
	p := posOf(n)
	if n == nil || off < 0 || off > len(src) || strings.Contains(src[:off], "\n") {
		return p
	}
	line, ok := c.rawLine(n.Line)
	if !ok {
		return p
	}
	raw := []rune(line)
	start := n.Column - 1 // rune index of the scalar's first character
	if start < 0 || start >= len(raw) {
		return p
	}
	want := []rune(src[:off])
	i := start
	switch n.Style {
	case 0:
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		i++ // the opening quote
	default:
		return p
	}
	for k := 0; k < len(want); k++ {
		if i >= len(raw) {
			return p
		}
		r := raw[i]
		switch {
		case n.Style == yaml.DoubleQuotedStyle && r == '\\' && i+1 < len(raw):
			skip := 2
			switch raw[i+1] {
			case 'x':
				skip = 4
			case 'u':
				skip = 6
			case 'U':
				skip = 10
			}
			i += skip
		case n.Style == yaml.SingleQuotedStyle && r == '\'' && i+1 < len(raw) && raw[i+1] == '\'':
			if want[k] != '\'' {
				return p
			}
			i += 2
		default:
			if r != want[k] {
				return p // folded or otherwise not a verbatim copy
			}
			i++
		}
	}
	p.Column = i + 1
	return p
}
