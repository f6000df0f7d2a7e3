package py

import (
	"context"
	"fmt"
)

// maxDepth bounds recursion over nested values (repr, equality, ordering,
// normalisation) so hostile, deeply nested results cannot exhaust the stack.
const maxDepth = 200

// maxBuilt bounds values built by an expression (string and list
// repetition, concatenation, join, replace, repr) in bytes or elements.
const maxBuilt = 1 << 20

// The cost model. One unit of work is about one byte of data touched: an
// operation spends, before it runs, the size of what it reads, copies,
// searches or builds, so the budget bounds both the time and the memory of
// one evaluation, whatever the size of the values. Measured worst cases
// (amd64): about 7 ns per unit (upper() of non-ASCII text), 0.1 ns per unit
// for the plain comparisons.
const (
	// workBudget is what one evaluation may spend: about 64 MiB of data
	// touched, so an ensure may read a result of a few MB a dozen times.
	workBudget = 64 << 20
	// costElem is the cost of visiting, comparing, copying or creating one
	// list element or dict entry (a slot is 16 bytes).
	costElem = 16
	// compareBytesPerUnit: equality, ordering and prefix tests of strings
	// run at memory speed and cost one unit per 16 bytes compared.
	compareBytesPerUnit = 16
	// checkEvery is how often (in units) Spend looks at the context, so a
	// cancelled evaluation stops within about a millisecond of work.
	checkEvery = 1 << 16
)

// Work counts the work of one evaluation. Create one per evaluation with
// NewWork (the zero value has the default budget and no context) and pass
// it to every call of that evaluation; it is not safe for concurrent use. A
// nil *Work is unbounded (used for small internal formatting).
type Work struct {
	steps     int
	nextCheck int
	ctx       context.Context
}

// NewWork returns the work counter of one evaluation: it fails once the
// budget is spent, and once ctx is done (nil = never).
func NewWork(ctx context.Context) *Work { return &Work{ctx: ctx} }

// Spend records n units of work; it fails once the budget is exhausted or
// the evaluation's context is done.
func (w *Work) Spend(n int) error {
	if w == nil {
		return nil
	}
	if n < 0 || n > workBudget-w.steps {
		w.steps = workBudget + 1
		return errTooExpensive
	}
	w.steps += n
	if w.ctx != nil && w.steps >= w.nextCheck {
		w.nextCheck = w.steps + checkEvery
		if err := w.ctx.Err(); err != nil {
			return &Cancelled{Err: context.Cause(w.ctx)}
		}
	}
	return nil
}

// spendBytes records the work of reading, searching, copying or building n
// bytes.
func (w *Work) spendBytes(n int) error { return w.Spend(n) }

// spendCompare records a string comparison that may read n bytes of each
// operand.
func (w *Work) spendCompare(n int) error { return w.Spend(1 + n/compareBytesPerUnit) }

// spendElems records the work of visiting, copying or creating n list
// elements or dict entries.
func (w *Work) spendElems(n int) error {
	if n < 0 || n > workBudget/costElem {
		return w.Spend(-1)
	}
	return w.Spend(n * costElem)
}

// Error is a run-time error raised by an expression; its text reads like the
// Python exception message (without the exception class).
type Error struct {
	msg  string
	list []string // the violations of a builtin that found some (Violations)
}

// Error implements error.
func (e *Error) Error() string { return e.msg }

// Errorf returns an *Error with a formatted message.
func Errorf(format string, args ...any) error {
	return &Error{msg: fmt.Sprintf(format, args...)}
}

// Cancelled is the error of an evaluation whose context was done; Err is
// the context's cause.
type Cancelled struct{ Err error }

// Error implements error.
func (e *Cancelled) Error() string { return "expression evaluation was cancelled: " + e.Err.Error() }

// Unwrap returns the context's cause.
func (e *Cancelled) Unwrap() error { return e.Err }

var (
	errTooDeep      = &Error{msg: "value is nested too deeply"}
	errTooExpensive = &Error{msg: "expression exceeded its evaluation budget (more than 64 MiB of data compared, searched, copied or built)"}
	errIntOverflow  = &Error{msg: "integer result is too large"}
	errTooLarge     = &Error{msg: "result is too large"}
)
