package specs

// PLACEHOLDER: replaced by the expression implementation (expr.go owner).
type compiledExpr struct{}
