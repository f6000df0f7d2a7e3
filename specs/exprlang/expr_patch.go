package exprlang

import (
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"

	"github.com/stratum-go/stratum/specs/py"
)

// notFixer gives `not` Python's precedence: in expr, unary `not` binds
// tighter than comparisons and arithmetic (`not a == b` is `(not a) == b`);
// in Python it applies to the whole comparison (`not (a == b)`). Post-order,
// so a `not` lifted out of a child is seen by the parent.
type notFixer struct{ rw *rewritten }

// tighterThanNot are the binary operators Python evaluates before `not`.
var tighterThanNot = map[string]bool{
	"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true, "in": true,
	"+": true, "-": true, "*": true, "/": true, "%": true, "**": true, "^": true,
	"matches": true, "contains": true, "startsWith": true, "endsWith": true, "..": true,
}

func (f notFixer) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BinaryNode)
	if !ok || !(tighterThanNot[b.Operator] || f.isChainAnd(b)) {
		return
	}
	u, ok := b.Left.(*ast.UnaryNode)
	if !ok || u.Operator != "not" || isInfixNotIn(u) {
		return
	}
	b.Left = u.Node
	lifted := &ast.UnaryNode{Operator: "not", Node: b}
	ast.Patch(node, lifted)
}

// isChainAnd reports whether b is the `&&` that expr's parser builds for a
// comparison chain (`a < b < c` → `a < b && b < c`); its location is the
// comparison operator, not an `&&`/`and` token.
func (f notFixer) isChainAnd(b *ast.BinaryNode) bool {
	if b.Operator != "&&" || f.rw == nil {
		return false
	}
	rest := f.rw.out[f.rw.outByte(b.Location().From):]
	return !strings.HasPrefix(rest, "&&") && !strings.HasPrefix(rest, "and")
}

// isInfixNotIn reports whether u came from `x not in y` (expr parses it as
// not(x in y), with the operand starting before the operator).
func isInfixNotIn(u *ast.UnaryNode) bool {
	b, ok := u.Node.(*ast.BinaryNode)
	return ok && b.Operator == "in" && b.Left.Location().From < u.Location().From
}

// chainer turns Python comparison chains (`0 <= x < 1`, `a == b == c`) into
// one __chain call: each operand is evaluated once and the comparisons are
// combined with `and`, as in Python. A parenthesised comparison used as an
// operand (`(a < b) == c`) is not a chain.
type chainer struct {
	rw     *rewritten
	chains map[*ast.CallNode]int // chain call → rune offset of its last operator
}

func (c *chainer) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BinaryNode)
	if !ok || !cmpOps[b.Operator] {
		return
	}
	at := b.Location().From
	switch l := b.Left.(type) {
	case *ast.BinaryNode:
		if !cmpOps[l.Operator] || !c.rw.sameLevel(l.Location().From, at) {
			return
		}
		ch := helperCall(helperChain, strNode(l.Operator+" "+b.Operator), l.Left, l.Right, b.Right)
		ast.Patch(node, ch)
		c.chains[ch] = at
	case *ast.CallNode:
		last, ok := c.chains[l]
		if !ok || !c.rw.sameLevel(last, at) {
			return
		}
		ops := l.Arguments[0].(*ast.StringNode)
		ops.Value += " " + b.Operator
		work := l.Arguments[len(l.Arguments)-1]
		l.Arguments = append(l.Arguments[:len(l.Arguments)-1], b.Right, work)
		ast.Patch(node, l)
		c.chains[l] = at
	}
}

// pyPatcher rewrites the tree so that every operation runs with Python
// semantics through the helpers of expr_helpers.go (run by package py).
type pyPatcher struct {
	rw  *rewritten
	tmp int // counter for generated temporaries
}

func ident(name string) *ast.IdentifierNode { return &ast.IdentifierNode{Value: name} }
func strNode(s string) *ast.StringNode      { return &ast.StringNode{Value: s} }

// helperCall builds a call of a helper; every helper call carries the
// evaluation's work counter as a hidden last argument.
func helperCall(name string, args ...ast.Node) *ast.CallNode {
	return &ast.CallNode{Callee: ident(name), Arguments: append(args, ident(varWork))}
}

// hasWorkArg reports whether a call already carries the hidden arguments.
func hasWorkArg(n *ast.CallNode) bool {
	if k := len(n.Arguments); k > 0 {
		id, ok := n.Arguments[k-1].(*ast.IdentifierNode)
		return ok && id.Value == varWork
	}
	return false
}

// truthNode wraps n in a Python truth test unless it already is a bool.
func truthNode(n ast.Node) ast.Node {
	if c, ok := n.(*ast.CallNode); ok {
		if id, ok := c.Callee.(*ast.IdentifierNode); ok && (id.Value == helperTruth || id.Value == helperIn || id.Value == helperCmp || id.Value == helperChain) {
			return n
		}
	}
	if _, ok := n.(*ast.BoolNode); ok {
		return n
	}
	return helperCall(helperTruth, n)
}

var arithOps = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true, "**": true, "^": true}
var cmpOps = map[string]bool{"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true}

func (p *pyPatcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.MemberNode:
		if n.Method || n.Optional {
			return
		}
		ast.Patch(node, helperCall(helperGet, n.Node, n.Property, strNode(p.describe(n.Node))))
	case *ast.CallNode:
		switch callee := n.Callee.(type) {
		case *ast.MemberNode:
			if !callee.Method {
				return
			}
			args := append([]ast.Node{callee.Node, callee.Property, strNode(p.describe(callee.Node))}, n.Arguments...)
			ast.Patch(node, helperCall(helperMethod, args...))
		case *ast.IdentifierNode:
			f, ok := py.LookupBuiltin(callee.Value)
			if !ok || hasWorkArg(n) {
				return
			}
			if f.Root {
				n.Arguments = append(n.Arguments, ident(varRoot))
			}
			n.Arguments = append(n.Arguments, ident(varWork))
		}
	case *ast.SliceNode:
		from, to := n.From, n.To
		if from == nil {
			from = &ast.NilNode{}
		}
		if to == nil {
			to = &ast.NilNode{}
		}
		ast.Patch(node, helperCall(helperSlice, n.Node, from, to, strNode(p.describe(n.Node))))
	case *ast.BinaryNode:
		switch {
		case n.Operator == "in":
			ast.Patch(node, helperCall(helperIn, n.Left, n.Right))
		case cmpOps[n.Operator]:
			ast.Patch(node, helperCall(helperCmp, strNode(n.Operator), n.Left, n.Right))
		case arithOps[n.Operator]:
			ast.Patch(node, helperCall(helperArith, strNode(n.Operator), n.Left, n.Right))
		case n.Operator == "and" || n.Operator == "&&" || n.Operator == "or" || n.Operator == "||":
			// Python returns an operand: `a or b` is `let t = a; t ? t : b`
			// and `a and b` is `let t = a; t ? b : t`, with Python truth,
			// `a` evaluated once and `b` only when needed.
			name := "__t" + strconv.Itoa(p.tmp)
			p.tmp++
			cond := &ast.ConditionalNode{Cond: truthNode(ident(name)), Exp1: n.Right, Exp2: ident(name)}
			if n.Operator == "or" || n.Operator == "||" {
				cond.Exp1, cond.Exp2 = ident(name), n.Right
			}
			ast.Patch(node, &ast.VariableDeclaratorNode{Name: name, Value: n.Left, Expr: cond})
		}
	case *ast.UnaryNode:
		switch n.Operator {
		case "not", "!":
			n.Node = truthNode(n.Node)
		case "-", "+":
			ast.Patch(node, helperCall(helperNeg, strNode(n.Operator), n.Node))
		}
	case *ast.ConditionalNode:
		n.Cond = truthNode(n.Cond)
	}
}

// describe renders an operand for error messages: result.a.b, item['x'],
// $.steps.s.output, or "value".
func (p *pyPatcher) describe(n ast.Node) string {
	switch x := n.(type) {
	case *ast.IdentifierNode:
		for i, r := range p.rw.refs {
			if refVar(i) == x.Value {
				return r
			}
		}
		return x.Value
	case *ast.CallNode:
		id, ok := x.Callee.(*ast.IdentifierNode)
		if !ok || id.Value != helperGet || len(x.Arguments) < 3 {
			break
		}
		base := "value"
		if s, ok := x.Arguments[2].(*ast.StringNode); ok {
			base = s.Value
		}
		switch k := x.Arguments[1].(type) {
		case *ast.StringNode:
			if isPlainName(k.Value) {
				return base + "." + k.Value
			}
			return base + "[" + py.ReprString(k.Value) + "]"
		case *ast.IntegerNode:
			return base + "[" + strconv.Itoa(k.Value) + "]"
		}
		return base + "[…]"
	}
	return "value"
}

func isPlainName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}
