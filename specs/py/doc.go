// Package py is the run time of the Stratum expression dialect: the Python
// semantics that ensure, skip_if, exit_criterion and the other spec
// expressions promise. An expression that agents wrote for the original
// (Python) Stratum server must mean the same here, so values behave as in
// Python: truthiness, == across int and float, ordering and its TypeErrors,
// `in`, arithmetic (true division, floor modulo, int overflow refused rather
// than wrapped), str() and repr(), int() and float() parsing, len(), iteration
// order, the allowed string and dict methods, and error messages that read
// like Python's exceptions.
//
// # Values
//
// Every function works on normalised values (see Normalize):
//
//	nil, bool, int, float64, string, []any, map[string]any
//
// anything else is an opaque "object". json.Number, every Go integer and
// float kind, typed slices and string-keyed maps are converted; integral
// float64 values (as encoding/json produces them) become int, so that
// str(result.count) is "4" as in Python.
//
// # Bounds
//
// Expressions run on hostile data, so every evaluation carries a Work
// counter: comparisons, repr, repetition and file reads spend from a fixed
// budget (5,000,000 units), and an evaluation that exhausts it fails with
// "expression is too expensive to evaluate". Values built by an expression
// (string and list repetition, concatenation, join, replace, repr) are
// capped at 1 MiB (bytes or elements), nested values at 200 levels, and
// file_contains reads files of at most MaxFileBytes (10 MB). The file
// functions are confined to a root directory: paths that leave it,
// lexically or through a symlink, are false.
//
// # Python repr
//
// ReprString, ReprStrings and ReprFloat (ReprFloat32) are the one place
// where Stratum renders Python's repr() of a str or a float: expression
// values and the canonical JSON of contract hashes use them, and so should
// every message copied from the original that prints a value with {x!r}.
//
// The package imports nothing else of stratum; the compile-time half of the
// dialect (tokenising, rewriting, scope checks, compilation) is in package
// specs, which calls into this one.
package py
