package specs

import "io/fs"

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

// Expr is a compiled expression. It is compiled once, by Parse, and only run
// afterwards. Source is the text as written in the spec.
type Expr struct {
	Source string
	Kind   ExprKind
	Pos    Pos

	compiled *compiledExpr // set by CompileExpr; nil only for the zero value
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

// Limits of the expression language.
const (
	// MaxExprLen is the longest accepted source, in bytes.
	MaxExprLen = 4 << 10
	// maxExprNodes bounds the syntax tree at compile time.
	maxExprNodes = 2000
	// exprMemoryBudget bounds what one evaluation may allocate (expr's own
	// accounting of array, map and range sizes).
	exprMemoryBudget = 1 << 20
)
