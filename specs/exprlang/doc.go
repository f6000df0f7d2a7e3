// Package exprlang is the compiler of the spec language's expressions
// (ensure, skip_if, exit_criterion, a stage's when, a judge's predicate …):
// Compile is the specs.ExprCompiler that specs.Parse takes. It rewrites the
// Python-flavoured source into expr-lang (expr_rewrite.go, list
// comprehensions in expr_comp.go), checks names and calls against the
// expression's scope (expr_check.go), patches the syntax tree so that every
// operation runs through a helper with Python semantics (expr_patch.go,
// expr_helpers.go, run by package specs/py), and compiles it to an expr-lang
// program, which the specs.Expr it returns runs (expr_compile.go).
//
// It is a package of its own so that the programs that only run compiled
// flows, such as a Go program using the library, do not link expr-lang:
// they import package specs, which holds the types the engine evaluates,
// and never this one.
package exprlang
