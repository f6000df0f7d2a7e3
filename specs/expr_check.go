package specs

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/expr-lang/expr/ast"

	"github.com/stratum-go/stratum/specs/py"
)

// analysis is what the static pass learns about a parsed expression.
type analysis struct {
	err         *ExprError
	resultPaths [][]string
}

// exprScope returns the variable names visible to an expression kind.
func exprScope(kind ExprKind) ([]string, bool) {
	switch kind {
	case ExprEnsure, ExprScore, ExprAccumulate:
		return []string{"result"}, true
	case ExprExitCriterion:
		return append([]string{"result"}, exitCriterionVars...), true
	case ExprAccumulateKey:
		return []string{"item"}, true
	case ExprSkipIf, ExprPredicate:
		return nil, true
	case ExprWhenFirst, ExprWhen, ExprExitWhen:
		return append([]string{"item"}, stageVars[kind]...), true
	}
	return nil, false
}

// stageVars are the locals of a pipeline stage's predicates besides item
// (from EvalEnv.Vars; missing ones are null). The _raw names hold the
// value as produced; the others its text (a string as it is, anything
// else as JSON), as in the original.
var stageVars = map[ExprKind][]string{
	ExprWhen:     {"prev", "prev_raw"},
	ExprExitWhen: {"result", "result_raw"},
}

// exitCriterionVars are the iteration locals an exit_criterion sees (from
// EvalEnv.Vars; missing ones are null).
var exitCriterionVars = []string{
	"best_score", "prior_scores", "iteration", "accumulator", "accumulated_count", "new_count", "dry_streak",
}

// checker walks a parsed tree (before any patching) and records the first
// problem in source order plus the result paths.
type exprChecker struct {
	kind    ExprKind
	rw      *rewritten
	scope   map[string]bool
	names   []string // scope names + function names, for hints
	callees map[ast.Node]bool
	idents  []*ast.IdentifierNode
	chains  map[*ast.MemberNode][]string
	inner   map[*ast.MemberNode]bool
	err     *ExprError
}

func (c *exprChecker) fail(n ast.Node, forbidden bool, format string, args ...any) {
	c.failWith(n, &ExprError{Message: fmt.Sprintf(format, args...), Forbidden: forbidden})
}

// failWith records e at n unless an earlier problem was recorded.
func (c *exprChecker) failWith(n ast.Node, e *ExprError) {
	off := c.rw.origOffset(n.Location().From)
	if c.err != nil && (off < 0 || (c.err.Offset >= 0 && c.err.Offset <= off)) {
		return
	}
	e.Offset = off
	c.err = e
}

// Visit implements ast.Visitor (post-order).
func (c *exprChecker) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		c.idents = append(c.idents, n)
	case *ast.CallNode:
		c.callees[n.Callee] = true
		c.checkCall(n)
	case *ast.MemberNode:
		if n.Method {
			return
		}
		prop, ok := n.Property.(*ast.StringNode)
		if !ok {
			return
		}
		var base []string
		switch inner := n.Node.(type) {
		case *ast.IdentifierNode:
			if inner.Value != "result" {
				return
			}
		case *ast.MemberNode:
			p, ok := c.chains[inner]
			if !ok {
				return
			}
			base = p
			c.inner[inner] = true
		default:
			return
		}
		c.chains[n] = append(append([]string(nil), base...), prop.Value)
	case *ast.BinaryNode:
		if msg, bad := unsupportedOps[n.Operator]; bad {
			c.fail(n, false, "operator '%s' is not supported%s", n.Operator, msg)
		}
	case *ast.BuiltinNode:
		c.fail(n, true, "function '%s' is not allowed%s", n.Name, nameHint(n.Name, py.BuiltinNames()))
	case *ast.PredicateNode, *ast.PointerNode:
		c.fail(n, true, "closures are not allowed")
	case *ast.VariableDeclaratorNode:
		c.fail(n, false, "'let' is not supported")
	case *ast.SequenceNode:
		c.fail(n, false, "only one expression is allowed (found ';')")
	}
}

func (c *exprChecker) checkCall(n *ast.CallNode) {
	switch callee := n.Callee.(type) {
	case *ast.IdentifierNode:
		f, ok := py.LookupBuiltin(callee.Value)
		if !ok && newerBuiltins[callee.Value].what != "" {
			c.failWith(callee, &ExprError{Message: newerBuiltins[callee.Value].message(), Newer: callee.Value})
			return
		}
		if !ok {
			c.fail(callee, true, "function '%s' is not allowed%s", callee.Value, nameHint(callee.Value, py.BuiltinNames()))
			return
		}
		if c.kind == ExprPredicate && !c.predicateCall(n, callee.Value) {
			return
		}
		if len(n.Arguments) < f.Min || (f.Max >= 0 && len(n.Arguments) > f.Max) {
			c.fail(callee, false, "%s() %s", callee.Value, py.ArityText(f.Min, f.Max, len(n.Arguments)))
		}
	case *ast.MemberNode:
		name := ""
		if s, ok := callee.Property.(*ast.StringNode); ok {
			name = s.Value
		}
		if !py.IsMethod(name) {
			c.fail(callee.Property, true, "method '%s' is not allowed%s", name, nameHint(name, py.MethodNames()))
		}
	default:
		c.fail(n, true, "only the builtin functions can be called")
	}
}

// finish checks free names and orders the result paths.
func (c *exprChecker) finish() *analysis {
	for _, id := range c.idents {
		if c.callees[id] {
			continue
		}
		if c.scope[id.Value] {
			continue
		}
		if strings.HasPrefix(id.Value, "$") {
			c.fail(id, true, "name '%s' is not allowed", id.Value)
			continue
		}
		c.fail(id, false, "name '%s' is not defined%s", id.Value, nameHint(id.Value, c.names))
	}
	type chain struct {
		from int
		path []string
	}
	var chains []chain
	for m, p := range c.chains {
		if c.inner[m] {
			continue
		}
		chains = append(chains, chain{from: c.rw.origOffset(m.Location().From), path: p})
	}
	sort.SliceStable(chains, func(i, j int) bool {
		if chains[i].from != chains[j].from {
			return chains[i].from < chains[j].from
		}
		return strings.Join(chains[i].path, ".") < strings.Join(chains[j].path, ".")
	})
	a := &analysis{err: c.err}
	seen := map[string]bool{}
	for _, ch := range chains {
		k := strings.Join(ch.path, "\x00")
		if seen[k] {
			continue
		}
		seen[k] = true
		a.resultPaths = append(a.resultPaths, ch.path)
	}
	return a
}

// analyze runs the static checks over a parsed (unpatched) tree.
func analyze(root ast.Node, kind ExprKind, rw *rewritten) *analysis {
	names, _ := exprScope(kind)
	c := &exprChecker{
		kind:    kind,
		rw:      rw,
		scope:   map[string]bool{},
		callees: map[ast.Node]bool{},
		chains:  map[*ast.MemberNode][]string{},
		inner:   map[*ast.MemberNode]bool{},
	}
	for _, n := range names {
		c.scope[n] = true
	}
	for i := range rw.refs {
		c.scope[refVar(i)] = true
	}
	c.names = append(append(c.names, names...), py.BuiltinNames()...)
	c.names = append(c.names, "True", "False", "None")
	ast.Walk(&root, c)
	return c.finish()
}

// nameHint returns ` (did you mean 'x'?)` when a candidate is close to s.
func nameHint(s string, candidates []string) string {
	if best := nearestName(s, candidates); best != "" {
		return fmt.Sprintf(" (did you mean '%s'?)", best)
	}
	return ""
}

// nearestName is the candidate closest to s: case-insensitive edit distance
// of at most 2 (1 for names of up to 3 runes). "" when none is close.
func nearestName(s string, candidates []string) string {
	if s == "" {
		return ""
	}
	ls := strings.ToLower(s)
	best, bestD := "", 1<<30
	limit := 2
	if len([]rune(s)) <= 3 {
		limit = 1
	}
	for _, cand := range candidates {
		if cand == s {
			continue
		}
		d := levenshtein(ls, strings.ToLower(cand))
		if d <= limit && (d < bestD || (d == bestD && cand < best)) {
			best, bestD = cand, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// unsupportedOps are expr operators that Python does not have, with a hint.
var unsupportedOps = map[string]string{
	"..":         "",
	"matches":    "",
	"contains":   "; use 'x in y'",
	"startsWith": "; use .startswith()",
	"endsWith":   "; use .endswith()",
}

// predicateCall checks a call in a deterministic predicate: only the
// first tier's builtins, and file paths that are string literals under one
// of PredicateBuckets (the original refuses other paths when the judge
// runs; here the spec is refused).
func (c *exprChecker) predicateCall(n *ast.CallNode, name string) bool {
	if !slices.Contains(PredicateBuiltins, name) {
		c.fail(n.Callee, true, "function '%s' is not available to a deterministic predicate (it may call %s)", name, strings.Join(PredicateBuiltins, ", "))
		return false
	}
	if (name != "file_exists" && name != "file_contains") || len(n.Arguments) == 0 {
		return true
	}
	lit, ok := n.Arguments[0].(*ast.StringNode)
	if !ok {
		c.fail(n.Arguments[0], true, "the path of %s() in a deterministic predicate must be a string literal starting with %s", name, strings.Join(PredicateBuckets, " or "))
		return false
	}
	for _, b := range PredicateBuckets {
		if strings.HasPrefix(lit.Value, b) {
			return true
		}
	}
	c.fail(n.Arguments[0], true, "deterministic predicate references path outside staging tree: %s (expected prefix 'artifacts/' or 'modified/')", py.ReprString(lit.Value))
	return false
}
