package engine

// The engine's calls into package specs for expressions, JSON Schema and
// canonical JSON go through these helpers; specs are parsed with the
// Service's parser (Service.parse), and refused without one (noParser).

import (
	"context"
	"errors"

	"github.com/stratum-go/stratum/specs"
)

// errNoEval is returned when there is no expression to evaluate.
var errNoEval = errors.New("no expression")

// evalBool evaluates a compiled expression for its (Python) truth value; it
// stops soon after ctx is done (the transition's transitionEnv.Ctx).
func evalBool(ctx context.Context, e *specs.Expr, env specs.EvalEnv) (bool, error) {
	if e == nil {
		return false, errNoEval
	}
	return e.EvalBoolContext(ctx, env)
}

// evalValue evaluates a compiled expression for its value; it stops soon
// after ctx is done.
func evalValue(ctx context.Context, e *specs.Expr, env specs.EvalEnv) (any, error) {
	if e == nil {
		return nil, errNoEval
	}
	return e.EvalContext(ctx, env)
}

// schemaViolations validates v against a compiled step schema; nil = valid.
func schemaViolations(s *specs.Schema, v any) []string {
	if s == nil {
		return nil
	}
	return s.Validate(v)
}

// canonicalJSON is specs.CanonicalJSON.
func canonicalJSON(v any) ([]byte, error) { return specs.CanonicalJSON(v) }

// noParser is the answer of a Service without ParseSpec to every spec (not
// cached: it is not the spec's fault).
func noParser(file string) specs.Diagnostics {
	return specs.Diagnostics{{
		File: file, Severity: specs.SeverityError, Code: specs.CodeUnsupported,
		ErrorType: specs.ErrorTypeOf(specs.CodeUnsupported), Path: "root",
		Message:    "this engine.Service has no spec parser (Service.ParseSpec) and cannot run spec flows",
		Suggestion: "Set Service.ParseSpec to exprlang.ParseSpec (package specs/exprlang).",
	}}
}

// exprViolations are the violations an ensure builtin reported
// (vocabulary_compliance, plan_completion), nil for any other error.
func exprViolations(err error) []string {
	var xe *specs.ExprError
	if errors.As(err, &xe) {
		return xe.Violations
	}
	return nil
}
