package specs

import (
	"context"
	"io/fs"

	"github.com/stratum-go/stratum/specs/py"
)

// ExprKind says where an expression appears; it decides which names are in scope.
type ExprKind string

const (
	ExprEnsure        ExprKind = "ensure"         // result
	ExprSkipIf        ExprKind = "skip_if"        // $.input.x, $.steps.s.output.f references
	ExprExitCriterion ExprKind = "exit_criterion" // result + iteration locals
	ExprScore         ExprKind = "score_expr"     // result
	ExprAccumulate    ExprKind = "accumulate"     // result
	ExprAccumulateKey ExprKind = "accumulate_key" // item
	// A pipeline stage's when: item (the first stage), item, prev and
	// prev_raw (a later stage); its exit_when: item, result, result_raw.
	ExprWhenFirst ExprKind = "when (first stage)"
	ExprWhen      ExprKind = "when"
	ExprExitWhen  ExprKind = "exit_when"
	// ExprPredicate is the statement of a judge step's deterministic
	// predicate: no names, and only the builtins of the judge's first tier
	// (PredicateBuiltins), whose file paths are string literals under
	// artifacts/ or modified/ of the staged turn (EvalEnv.Root).
	ExprPredicate ExprKind = "predicate"
)

// PredicateBuiltins are the builtins a deterministic predicate may call
// (the original's first-tier surface).
var PredicateBuiltins = []string{"bool", "file_contains", "file_exists", "int", "len", "max", "min", "str"}

// PredicateBuckets are the prefixes a deterministic predicate's paths must
// have: the staged artifacts and the staged copies of the modified files.
var PredicateBuckets = []string{"artifacts/", "modified/"}

// Expr is a compiled expression. It is compiled once, by Parse (with the
// ExprCompiler its caller gives it), and only run afterwards. Source is the
// text as written in the spec.
type Expr struct {
	Source string
	Kind   ExprKind
	Pos    Pos

	program ExprProgram // set by NewExpr; nil only for the zero value
}

// ExprCompiler compiles src as an expression of the given kind. Every error
// is an *ExprError with a byte offset into src where one is known; the
// result is immutable and safe for concurrent evaluation. Parse takes one:
// package specs/exprlang is the expression language (exprlang.Compile), so
// that only the programs that parse specs link its compiler.
type ExprCompiler func(kind ExprKind, src string) (*Expr, error)

// ExprProgram is the compiled form of an Expr, made by an ExprCompiler. It
// is immutable, so Run may be called concurrently.
type ExprProgram interface {
	// Run evaluates the program against env and returns its value (nil,
	// bool, int, float64, string, []any or map[string]any). Every error is
	// an *ExprError; Run never panics and stops soon after ctx is done.
	Run(ctx context.Context, env EvalEnv) (any, error)
	// Refs are the distinct `$.…` reference tokens of a skip_if
	// expression in source order; the caller may modify the slice.
	Refs() []string
	// ResultPaths are the attribute paths read under `result`, in source
	// order and without duplicates; the caller may modify them.
	ResultPaths() [][]string
}

// NewExpr is the compiled expression src of kind kind whose program is p
// (an ExprCompiler's result; Pos is set by Parse).
func NewExpr(kind ExprKind, src string, p ExprProgram) *Expr {
	return &Expr{Source: src, Kind: kind, program: p}
}

// ResultPaths returns the attribute paths read under `result`, in source
// order and without duplicates: `result.a.b` and `result['a']['b']` give
// ["a", "b"]; a path stops at the first non-constant index
// (`result.items[0].x` gives ["items"]). Method calls are not fields
// (`result.name.lower()` gives ["name"]).
func (e *Expr) ResultPaths() [][]string {
	if e == nil || e.program == nil {
		return nil
	}
	return e.program.ResultPaths()
}

// Refs returns the distinct `$.…` reference tokens of a skip_if expression
// in source order (text inside string literals is not a reference).
func (e *Expr) Refs() []string {
	if e == nil || e.program == nil {
		return nil
	}
	return e.program.Refs()
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
func (e *Expr) EvalContext(ctx context.Context, env EvalEnv) (any, error) {
	if e == nil || e.program == nil {
		return nil, &ExprError{Offset: -1, Message: "expression is not compiled"}
	}
	return e.program.Run(ctx, env)
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

// RefResolver resolves a `$.input.x` / `$.steps.s.output.f` reference for
// skip_if. ok=false means unresolvable (the expression then sees null, as in
// the original).
type RefResolver func(ref string) (value any, ok bool)

// EvalEnv is what an expression sees when it runs.
type EvalEnv struct {
	Result any            // `result` (ensure, exit_criterion, score_expr, accumulate)
	Item   any            // `item` (accumulate_key, a stage's when and exit_when)
	Vars   map[string]any // extra locals (exit_criterion: best_score, prior_scores, iteration, accumulator, accumulated_count, new_count, dry_streak; when: prev, prev_raw; exit_when: result, result_raw)
	Refs   RefResolver    // skip_if $-references
	// Root confines file_exists / file_contains: relative paths are resolved
	// against it and paths that escape it are false. "" = the current directory.
	Root string
	// FS, when not nil, replaces Root: the file functions read the files
	// of FS (paths cleaned and slash-separated; an absolute path, or one
	// that leaves FS's top, is false). FS must keep its names inside
	// itself (os.Root's FS does; os.DirFS follows symlinks out).
	FS fs.FS
}

// ExprError is a compile or run-time problem of an expression. Error returns
// Message alone, so it reads well inside a violation
// ("Ensure expression '<expr>' raised: <msg>").
type ExprError struct {
	Offset    int    // byte offset into the source of the problem; -1 when unknown
	Message   string // human message, e.g. "result has no field 'x'"
	Forbidden bool   // true for "__", or a call/name that is not allowed
	// Newer names a builtin of the original's newer releases that this
	// stratum does not implement (vocabulary_compliance, plan_completion).
	Newer string
	// Violations are the violations a builtin found
	// (vocabulary_compliance, plan_completion): the ensure loop reports each
	// one instead of Message, as the original does. nil for other errors.
	Violations []string
	// Cause is the context's cause when the evaluation was cancelled
	// (errors.Is(err, context.Canceled) holds), nil otherwise.
	Cause error
}

// Error implements error.
func (e *ExprError) Error() string { return e.Message }

// Unwrap returns Cause.
func (e *ExprError) Unwrap() error { return e.Cause }

// MaxExprLen is the longest accepted expression source, in bytes.
const MaxExprLen = 4 << 10
