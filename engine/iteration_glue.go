package engine

import "github.com/stratum-go/stratum/specs"

// iterEval evaluates a compiled iteration expression (score_expr,
// accumulate, accumulate_key) for its value.
// TEMPORARY until specs' Expr.Eval lands: reports the runtime as unavailable.
func iterEval(e *specs.Expr, env specs.EvalEnv) (any, error) {
	_, _ = e, env
	return nil, errNoEval
}
