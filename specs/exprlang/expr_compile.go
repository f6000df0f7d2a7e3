package exprlang

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/stratum-go/stratum/specs"

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

// Limits of the expression language (specs.MaxExprLen bounds the source).
const (
	// maxExprNodes bounds the syntax tree at compile time.
	maxExprNodes = 2000
	// exprMemoryBudget bounds what one evaluation may allocate (expr's own
	// accounting of array, map and range sizes).
	exprMemoryBudget = 1 << 20
)

// compiledExpr is the specs.ExprProgram of a compiled expression. It is
// immutable after Compile, so Run may be called concurrently.
type compiledExpr struct {
	kind        specs.ExprKind
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

// Compile compiles src as an expression of the given kind; it is the
// specs.ExprCompiler of the spec language. Every error is
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
func Compile(kind specs.ExprKind, src string) (*specs.Expr, error) {
	c, err := compileExpr(kind, src)
	if err != nil {
		return nil, err
	}
	return specs.NewExpr(kind, src, c), nil
}

func compileExpr(kind specs.ExprKind, src string) (c *compiledExpr, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, &specs.ExprError{Offset: -1, Message: fmt.Sprintf("cannot compile expression: %v", r)}
		}
	}()
	if _, ok := exprScope(kind); !ok {
		return nil, &specs.ExprError{Offset: -1, Message: fmt.Sprintf("unknown expression kind %q", string(kind))}
	}
	if len(src) > specs.MaxExprLen {
		return nil, &specs.ExprError{Offset: specs.MaxExprLen, Message: fmt.Sprintf("expression is too long (%d bytes, at most %d)", len(src), specs.MaxExprLen)}
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
		return nil, &specs.ExprError{Offset: off, Message: "expression is not valid UTF-8"}
	}
	if i := strings.Index(src, "__"); i >= 0 {
		return nil, &specs.ExprError{Offset: i, Message: "'__' is not allowed in expressions", Forbidden: true}
	}
	if strings.TrimSpace(src) == "" {
		return nil, &specs.ExprError{Offset: 0, Message: "empty expression"}
	}
	rw, rwErr := rewriteSource(kind, src)
	if rwErr != nil {
		return nil, rwErr
	}
	if strings.TrimSpace(rw.out) == "" {
		return nil, &specs.ExprError{Offset: 0, Message: "empty expression"}
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
	return &compiledExpr{kind: kind, program: prog, rw: rw, resultPaths: a.resultPaths}, nil
}

var unexpectedTokenRe = regexp.MustCompile(`unexpected token (\w+)\("((?:[^"\\]|\\.)*)"\)`)

// fileError converts an expr error into an *ExprError with an offset into
// the original source and a message without expr's location noise.
func (rw *rewritten) fileError(err error) *specs.ExprError {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return &specs.ExprError{Offset: -1, Message: err.Error()}
	}
	msg := fe.Message
	var pe *py.Error
	var list []string
	if errors.As(fe.Prev, &pe) {
		msg, list = pe.Error(), pe.List()
	}
	off := rw.origOffset(fe.From)
	if strings.HasPrefix(msg, "unexpected token EOF") || msg == "unexpected end of expression" {
		return &specs.ExprError{Offset: rw.origAt[len(rw.out)], Message: "unexpected end of expression"}
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
	return &specs.ExprError{Offset: off, Message: msg, Violations: list}
}

// ResultPaths implements specs.ExprProgram.
func (c *compiledExpr) ResultPaths() [][]string {
	if len(c.resultPaths) == 0 {
		return nil
	}
	out := make([][]string, len(c.resultPaths))
	for i, p := range c.resultPaths {
		out[i] = append([]string(nil), p...)
	}
	return out
}

// Refs implements specs.ExprProgram.
func (c *compiledExpr) Refs() []string { return append([]string(nil), c.rw.refs...) }

// Run implements specs.ExprProgram: see specs.Expr.EvalContext.
func (c *compiledExpr) Run(ctx context.Context, env specs.EvalEnv) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &specs.ExprError{Offset: -1, Message: fmt.Sprintf("evaluation failed: %v", r)}
		}
	}()
	if err := ctx.Err(); err != nil {
		cancelled := &py.Cancelled{Err: context.Cause(ctx)}
		return nil, &specs.ExprError{Offset: -1, Message: cancelled.Error(), Cause: cancelled.Err}
	}
	vars, verr := evalVars(ctx, c.kind, c, env)
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

// evalVars builds the variable map one evaluation sees.
func evalVars(ctx context.Context, kind specs.ExprKind, c *compiledExpr, env specs.EvalEnv) (map[string]any, *specs.ExprError) {
	vars := make(map[string]any, 4+len(c.rw.refs))
	vars[varRoot] = env.Root
	if env.FS != nil {
		vars[varRoot] = py.FSRoot{FS: env.FS}
	}
	vars[varWork] = py.NewWork(ctx)
	put := func(name string, v any) *specs.ExprError {
		n, err := py.Normalize(v)
		if err != nil {
			return &specs.ExprError{Offset: -1, Message: fmt.Sprintf("%s: %v", name, err)}
		}
		vars[name] = n
		return nil
	}
	switch kind {
	case specs.ExprEnsure, specs.ExprScore, specs.ExprAccumulate:
		if err := put("result", env.Result); err != nil {
			return nil, err
		}
	case specs.ExprExitCriterion:
		if err := put("result", env.Result); err != nil {
			return nil, err
		}
		for _, name := range exitCriterionVars {
			if err := put(name, env.Vars[name]); err != nil {
				return nil, err
			}
		}
	case specs.ExprAccumulateKey:
		if err := put("item", env.Item); err != nil {
			return nil, err
		}
	case specs.ExprWhenFirst, specs.ExprWhen, specs.ExprExitWhen:
		if err := put("item", env.Item); err != nil {
			return nil, err
		}
		for _, name := range stageVars[kind] {
			if err := put(name, env.Vars[name]); err != nil {
				return nil, err
			}
		}
	case specs.ExprSkipIf:
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
