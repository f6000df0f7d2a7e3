package exprlang

import (
	"strings"

	"github.com/stratum-go/stratum/specs/py"
)

// Compiled programs call two kinds of functions, both run by package py: the
// builtins that source text calls by name (py.LookupBuiltin), and the helpers
// below, which the patcher (expr_patch.go) generates so that every operation
// runs with Python semantics. Helper and hidden variable names contain "__",
// which source text can never contain.
const (
	helperGet    = "__get"    // obj, key, description of obj
	helperMethod = "__method" // receiver, method name, description, args…
	helperIn     = "__in"     // a, b
	helperCmp    = "__cmp"    // operator, a, b
	helperArith  = "__arith"  // operator, a, b
	helperNeg    = "__neg"    // "-" or "+", operand
	helperTruth  = "__truth"  // value
	helperChain  = "__chain"  // operators separated by spaces, operands…
	helperSlice  = "__slice"  // obj, from (nil = start), to (nil = end), description of obj

	varRoot = "__root" // specs.EvalEnv.Root, the hidden last argument of the file builtins
	varWork = "__work" // the evaluation's *py.Work, the hidden last argument of every call
)

// helpers are the generated functions; their arguments are as laid out by
// the patcher, after normalisation and without the work counter.
var helpers = map[string]func(w *py.Work, a []any) (any, error){
	helperGet: func(w *py.Work, a []any) (any, error) {
		desc, _ := a[2].(string)
		return py.Get(w, a[0], a[1], desc)
	},
	helperMethod: func(w *py.Work, a []any) (any, error) {
		name, _ := a[1].(string)
		desc, _ := a[2].(string)
		return py.CallMethod(w, a[0], name, desc, a[3:])
	},
	helperIn: func(w *py.Work, a []any) (any, error) { return py.In(w, a[0], a[1]) },
	helperCmp: func(w *py.Work, a []any) (any, error) {
		return py.Compare(w, a[0].(string), a[1], a[2])
	},
	helperArith: func(w *py.Work, a []any) (any, error) {
		return py.Arith(w, a[0].(string), a[1], a[2])
	},
	helperNeg:   func(w *py.Work, a []any) (any, error) { return py.Unary(a[0].(string), a[1]) },
	helperTruth: func(w *py.Work, a []any) (any, error) { return py.Truth(a[0]), nil },
	helperChain: func(w *py.Work, a []any) (any, error) {
		return py.CompareChain(w, strings.Fields(a[0].(string)), a[1:])
	},
	helperIter: func(w *py.Work, a []any) (any, error) { return py.Iterate(w, a[0]) },
	helperSlice: func(w *py.Work, a []any) (any, error) {
		desc, _ := a[3].(string)
		return py.Slice(w, a[0], a[1], a[2], desc)
	},
}

// callFunc runs a builtin or helper on the arguments a compiled program
// passes (the evaluation's work counter last) and never panics: each call
// costs one unit of work, and arguments are normalised first.
func callFunc(name string, fn func(*py.Work, []any) (any, error), args []any) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, py.Errorf("%s: internal error: %v", strings.TrimLeft(name, "_"), r)
		}
	}()
	var w *py.Work
	if n := len(args); n > 0 {
		if ww, ok := args[n-1].(*py.Work); ok {
			w, args = ww, args[:n-1]
		}
	}
	if w == nil {
		w = &py.Work{}
	}
	if err := w.Spend(1); err != nil {
		return nil, err
	}
	for i, a := range args {
		args[i] = py.AsValue(a)
	}
	return fn(w, args)
}
