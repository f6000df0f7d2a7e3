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
// counter (NewWork) and every operation pays, before it runs, for the size
// of the data it touches: one unit per byte read, searched, split,
// converted, copied or built for strings (len, in, count, find, split,
// lower/upper/strip, replace, slicing and indexing, int/float parsing,
// repr/str, concatenation, repetition, file_contains reads); 16 units per
// list element or dict entry visited, compared, copied or created; one unit
// per 16 bytes for the memory-speed string comparisons (==, <, startswith,
// endswith). One evaluation may spend 64 Mi units (about 64 MiB of data
// touched; the slowest operation, upper() of non-ASCII text, runs at about
// 7 ns a unit), so an ensure may read a result of a few MB a dozen times,
// and one that would exceed the budget fails with "expression exceeded its
// evaluation budget (…)" before the operation that exceeds it runs: memory
// allocated by one evaluation is bounded by its budget too. The Work also
// carries the evaluation's context: once it is done, the next check (every
// 64 Ki units, well under a millisecond) fails with a *Cancelled error.
//
// Values built by an expression (string and list repetition,
// concatenation, join, replace, repr) are capped at 1 MiB (bytes or
// elements), nested values at 200 levels, and file_contains reads files of
// at most MaxFileBytes (10 MB). The file functions are confined to a root
// directory: paths that leave it, lexically or through a symlink, are
// false; or to an fs.FS (FSRoot), such as a staged judge turn read from
// its archive.
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
