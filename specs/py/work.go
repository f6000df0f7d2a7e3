package py

import "fmt"

// maxDepth bounds recursion over nested values (repr, equality, ordering,
// normalisation) so hostile, deeply nested results cannot exhaust the stack.
const maxDepth = 200

// maxBuilt bounds values built by an expression (string and list
// repetition, concatenation, join, replace, repr) in bytes or elements.
const maxBuilt = 1 << 20

// workBudget bounds the element visits (comparisons, repr, repetition, file
// reads) one evaluation may perform, so hostile data or expressions cannot
// run long.
const workBudget = 5_000_000

// Work counts the work of one evaluation. Create one per evaluation (the
// zero value is ready) and pass it to every call of that evaluation; it is
// not safe for concurrent use. A nil *Work is unbounded (used for small
// internal formatting).
type Work struct{ steps int }

// Spend records n units of work; it fails once the budget is exhausted.
func (w *Work) Spend(n int) error {
	if w == nil {
		return nil
	}
	w.steps += n
	if w.steps > workBudget || n < 0 {
		return errTooExpensive
	}
	return nil
}

// Error is a run-time error raised by an expression; its text reads like the
// Python exception message (without the exception class).
type Error struct{ msg string }

// Error implements error.
func (e *Error) Error() string { return e.msg }

// Errorf returns an *Error with a formatted message.
func Errorf(format string, args ...any) error {
	return &Error{msg: fmt.Sprintf(format, args...)}
}

var (
	errTooDeep      = &Error{msg: "value is nested too deeply"}
	errTooExpensive = &Error{msg: "expression is too expensive to evaluate"}
	errIntOverflow  = &Error{msg: "integer result is too large"}
	errTooLarge     = &Error{msg: "result is too large"}
)
