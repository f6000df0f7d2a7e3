package specs

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	exprchecker "github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/stratum-go/stratum/specs/py"
)

// compiledExpr is the compiled form of an Expr. It is immutable after
// CompileExpr, so Eval may run concurrently.
type compiledExpr struct {
	program     *vm.Program
	rw          *rewritten
	resultPaths [][]string
}

// exprOptions are the expr options shared by every compilation: no expr
// builtins, our functions instead, bounded tree size, names resolved from the
// per-Eval environment map (they were checked by the static pass).
var exprOptions = sync.OnceValue(func() []expr.Option {
	opts := []expr.Option{
		expr.DisableAllBuiltins(),
		expr.AllowUndefinedVariables(),
		expr.MaxNodes(maxExprNodes),
	}
	for _, name := range py.BuiltinNames() {
		f, _ := py.LookupBuiltin(name)
		opts = append(opts, expr.Function(name, wrapFunc(name, f.Call)))
	}
	for name, fn := range helpers {
		opts = append(opts, expr.Function(name, wrapFunc(name, fn)))
	}
	return opts
})

// baseConfig is the expr configuration every compilation starts from, built
// once: creating it (expr's builtin table, then DisableAllBuiltins and our
// functions) cost more than the rest of a compilation.
var baseConfig = sync.OnceValue(func() *conf.Config {
	cfg := conf.CreateNew()
	for _, op := range exprOptions() {
		op(cfg)
	}
	for name := range cfg.Disabled {
		delete(cfg.Builtins, name)
	}
	return cfg
})

// exprConfig returns a private copy of the base configuration with the given
// patches. The function tables are shared read-only; the checker's type cache
// (NtCache), which it writes to, is fresh per compilation so concurrent
// compilations do not share it.
func exprConfig(visitors ...ast.Visitor) *conf.Config {
	c := *baseConfig()
	c.NtCache = nature.Cache{}
	c.Visitors = visitors
	return &c
}

// buildProgram is expr.Compile on a prepared configuration.
func buildProgram(src string, cfg *conf.Config) (*vm.Program, error) {
	cfg.Check()
	tree, err := exprchecker.ParseCheck(src, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Optimize {
		if err := optimizer.Optimize(&tree.Node, cfg); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				return nil, fe.Bind(tree.Source)
			}
			return nil, err
		}
	}
	return compiler.Compile(tree, cfg)
}

// wrapFunc adapts a builtin or helper to expr's function signature.
func wrapFunc(name string, fn func(*py.Work, []any) (any, error)) func(params ...any) (any, error) {
	return func(params ...any) (any, error) {
		return callFunc(name, fn, params)
	}
}

// CompileExpr compiles src as an expression of the given kind. Every error is
// an *ExprError with a byte offset into src where one is known. The result is
// immutable and safe for concurrent Eval.
//
// The dialect is what agents write for the original Python server, run on
// expr-lang with Python semantics:
//
//   - literals True/False/None and true/false/null; 'single' or "double"
//     quoted strings (u'…' and r'…' prefixes); lists, dicts, and tuples
//     ('a', 'b') which become lists; # comments;
//   - and/or/not with Python truthiness (and/or return an operand, not is
//     looser than comparisons), X if C else Y, comparison chains
//     (0 <= x < 1), is / is not, in / not in (lists, dict keys,
//     substrings), + - * / % ** with Python numbers (int/float mix, true
//     division, floor modulo; // is refused);
//   - result.a.b and result['a'] on mappings (a missing key is an error
//     "result has no field 'a'", not null), indexes and slices with negative
//     bounds, a few pure methods (lower, upper, strip, lstrip, rstrip,
//     startswith, endswith, split, join, replace, find, count, get, keys,
//     values, items);
//   - functions len, str, int, float, bool, any, all, min, max,
//     file_exists, file_contains (10 MB cap; paths confined to
//     EvalEnv.Root, symlinks included, or to EvalEnv.FS) and
//     no_file_conflicts;
//   - list comprehensions [X for v in Y if C] (one for, at most one if)
//     and generators as the only argument of a call (any(X for v in Y)),
//     run as expr's map/filter. Nothing else can be called; expr's own builtins,
//     closures, let, ';' and the operators .., matches, contains,
//     startsWith and endsWith are refused.
//
// Names in scope depend on kind: `result` (ensure, score_expr, accumulate),
// `result` plus the iteration locals (exit_criterion), `item`
// (accumulate_key), and `$.input.x` / `$.steps.s.output.f` references
// (skip_if). Source containing "__" is refused (Forbidden), as are sources
// longer than MaxExprLen or with more than 2000 syntax nodes; an evaluation
// has a bounded work budget, counted in bytes of data touched (see
// EvalContext).
func CompileExpr(kind ExprKind, src string) (*Expr, error) {
	c, err := compileExpr(kind, src)
	if err != nil {
		return nil, err
	}
	return &Expr{Source: src, Kind: kind, compiled: c}, nil
}

func compileExpr(kind ExprKind, src string) (c *compiledExpr, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, &ExprError{Offset: -1, Message: fmt.Sprintf("cannot compile expression: %v", r)}
		}
	}()
	if _, ok := exprScope(kind); !ok {
		return nil, &ExprError{Offset: -1, Message: fmt.Sprintf("unknown expression kind %q", string(kind))}
	}
	if len(src) > MaxExprLen {
		return nil, &ExprError{Offset: MaxExprLen, Message: fmt.Sprintf("expression is too long (%d bytes, at most %d)", len(src), MaxExprLen)}
	}
	if !utf8.ValidString(src) {
		off := 0
		for off < len(src) {
			r, w := utf8.DecodeRuneInString(src[off:])
			if r == utf8.RuneError && w == 1 {
				break
			}
			off += w
		}
		return nil, &ExprError{Offset: off, Message: "expression is not valid UTF-8"}
	}
	if i := strings.Index(src, "__"); i >= 0 {
		return nil, &ExprError{Offset: i, Message: "'__' is not allowed in expressions", Forbidden: true}
	}
	if strings.TrimSpace(src) == "" {
		return nil, &ExprError{Offset: 0, Message: "empty expression"}
	}
	rw, rwErr := rewriteSource(kind, src)
	if rwErr != nil {
		return nil, rwErr
	}
	if strings.TrimSpace(rw.out) == "" {
		return nil, &ExprError{Offset: 0, Message: "empty expression"}
	}

	tree, perr := parser.ParseWithConfig(rw.out, exprConfig())
	if perr != nil {
		return nil, rw.fileError(perr)
	}
	a := analyze(tree.Node, kind, rw)
	if a.err != nil {
		return nil, a.err
	}

	prog, cerr := buildProgram(rw.out, exprConfig(
		notFixer{rw: rw},
		&chainer{rw: rw, chains: map[*ast.CallNode]int{}},
		&pyPatcher{rw: rw},
		&compBuilder{}))
	if cerr != nil {
		return nil, rw.fileError(cerr)
	}
	return &compiledExpr{program: prog, rw: rw, resultPaths: a.resultPaths}, nil
}

var unexpectedTokenRe = regexp.MustCompile(`unexpected token (\w+)\("((?:[^"\\]|\\.)*)"\)`)

// fileError converts an expr error into an *ExprError with an offset into
// the original source and a message without expr's location noise.
func (rw *rewritten) fileError(err error) *ExprError {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return &ExprError{Offset: -1, Message: err.Error()}
	}
	msg := fe.Message
	var pe *py.Error
	var list []string
	if errors.As(fe.Prev, &pe) {
		msg, list = pe.Error(), pe.List()
	}
	off := rw.origOffset(fe.From)
	if strings.HasPrefix(msg, "unexpected token EOF") || msg == "unexpected end of expression" {
		return &ExprError{Offset: rw.origAt[len(rw.out)], Message: "unexpected end of expression"}
	}
	msg = unexpectedTokenRe.ReplaceAllStringFunc(msg, func(m string) string {
		sub := unexpectedTokenRe.FindStringSubmatch(m)
		if sub[1] == "EOF" {
			return "unexpected end of expression"
		}
		v := sub[2]
		// Show generated names as the user wrote them.
		for i, r := range rw.refs {
			if v == refVar(i) {
				v = r
			}
		}
		return fmt.Sprintf("unexpected '%s'", v)
	})
	msg = strings.Replace(msg, "compilation failed: expression exceeds maximum allowed nodes",
		fmt.Sprintf("expression is too complex (more than %d nodes)", maxExprNodes), 1)
	return &ExprError{Offset: off, Message: msg, Violations: list}
}

// ResultPaths returns the attribute paths read under `result`, in source
// order and without duplicates: `result.a.b` and `result['a']['b']` give
// ["a", "b"]; a path stops at the first non-constant index
// (`result.items[0].x` gives ["items"]). Method calls are not fields
// (`result.name.lower()` gives ["name"]).
func (e *Expr) ResultPaths() [][]string {
	if e == nil || e.compiled == nil {
		return nil
	}
	if len(e.compiled.resultPaths) == 0 {
		return nil
	}
	out := make([][]string, len(e.compiled.resultPaths))
	for i, p := range e.compiled.resultPaths {
		out[i] = append([]string(nil), p...)
	}
	return out
}

// Refs returns the distinct `$.…` reference tokens of a skip_if expression
// in source order (text inside string literals is not a reference).
func (e *Expr) Refs() []string {
	if e == nil || e.compiled == nil {
		return nil
	}
	return append([]string(nil), e.compiled.rw.refs...)
}

// Eval is EvalContext without a context: the evaluation is still bounded
// by its work budget.
func (e *Expr) Eval(env EvalEnv) (any, error) { return e.EvalContext(context.Background(), env) }

// EvalContext runs the compiled expression against env and returns its
// value (nil, bool, int, float64, string, []any or map[string]any).
// Run-time problems are returned as *ExprError; EvalContext never panics and
// is safe for concurrent use.
//
// One evaluation is bounded by a work budget that counts the size of the
// data each operation touches (see package py): an expression that would
// exceed it fails with "expression exceeded its evaluation budget …" before
// the operation runs. It also stops soon (within about a millisecond of
// work) after ctx is done, with an *ExprError whose Cause is the context's
// cause.
func (e *Expr) EvalContext(ctx context.Context, env EvalEnv) (out any, err error) {
	if e == nil || e.compiled == nil {
		return nil, &ExprError{Offset: -1, Message: "expression is not compiled"}
	}
	c := e.compiled
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &ExprError{Offset: -1, Message: fmt.Sprintf("evaluation failed: %v", r)}
		}
	}()
	if err := ctx.Err(); err != nil {
		cancelled := &py.Cancelled{Err: context.Cause(ctx)}
		return nil, &ExprError{Offset: -1, Message: cancelled.Error(), Cause: cancelled.Err}
	}
	vars, verr := evalVars(ctx, e.Kind, c, env)
	if verr != nil {
		return nil, verr
	}
	machine := vm.VM{MemoryBudget: exprMemoryBudget}
	res, rerr := machine.Run(c.program, vars)
	if rerr != nil {
		xe := c.rw.fileError(rerr)
		if xe.Message == "memory budget exceeded" {
			xe.Message = "expression uses too much memory"
		}
		var cancelled *py.Cancelled
		if errors.As(rerr, &cancelled) {
			xe.Cause = cancelled.Err
		}
		return nil, xe
	}
	return py.AsValue(res), nil
}

// EvalBool runs the expression and returns the Python truth value of its
// result (None, False, 0, "", [] and {} are false).
func (e *Expr) EvalBool(env EvalEnv) (bool, error) {
	return e.EvalBoolContext(context.Background(), env)
}

// EvalBoolContext is EvalContext for the Python truth value of the result.
func (e *Expr) EvalBoolContext(ctx context.Context, env EvalEnv) (bool, error) {
	v, err := e.EvalContext(ctx, env)
	if err != nil {
		return false, err
	}
	return py.Truth(v), nil
}

// evalVars builds the variable map one evaluation sees.
func evalVars(ctx context.Context, kind ExprKind, c *compiledExpr, env EvalEnv) (map[string]any, *ExprError) {
	vars := make(map[string]any, 4+len(c.rw.refs))
	vars[varRoot] = env.Root
	if env.FS != nil {
		vars[varRoot] = py.FSRoot{FS: env.FS}
	}
	vars[varWork] = py.NewWork(ctx)
	put := func(name string, v any) *ExprError {
		n, err := py.Normalize(v)
		if err != nil {
			return &ExprError{Offset: -1, Message: fmt.Sprintf("%s: %v", name, err)}
		}
		vars[name] = n
		return nil
	}
	switch kind {
	case ExprEnsure, ExprScore, ExprAccumulate:
		if err := put("result", env.Result); err != nil {
			return nil, err
		}
	case ExprExitCriterion:
		if err := put("result", env.Result); err != nil {
			return nil, err
		}
		for _, name := range exitCriterionVars {
			if err := put(name, env.Vars[name]); err != nil {
				return nil, err
			}
		}
	case ExprAccumulateKey:
		if err := put("item", env.Item); err != nil {
			return nil, err
		}
	case ExprWhenFirst, ExprWhen, ExprExitWhen:
		if err := put("item", env.Item); err != nil {
			return nil, err
		}
		for _, name := range stageVars[kind] {
			if err := put(name, env.Vars[name]); err != nil {
				return nil, err
			}
		}
	case ExprSkipIf:
		for i, ref := range c.rw.refs {
			var v any
			if env.Refs != nil {
				if rv, ok := env.Refs(ref); ok {
					v = rv
				}
			}
			if err := put(ref, v); err != nil {
				return nil, err
			}
			vars[refVar(i)] = vars[ref]
			delete(vars, ref)
		}
	}
	return vars, nil
}
