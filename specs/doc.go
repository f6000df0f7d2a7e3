// Package specs is the Stratum spec language: it decodes `*.stratum.yaml` files
// (IR versions "0.1", "0.2" and "0.3"), validates them, and normalises them into
// the public, read-only IR types that the engine, the store and the TUI consume.
//
// # Pipeline
//
//  1. Decode: the text is parsed into yaml.v3 nodes so that every value keeps its
//     line and column. Hostile input (invalid UTF-8, alias bombs, very deep
//     nesting, huge files, a non-mapping root) is refused with a diagnostic in
//     bounded time and memory.
//  2. Structural checks: the field set of each object for the spec's version,
//     types, required fields and enumerations (the original's JSON-Schema stage,
//     error type ir_validation_error), and names: a mapping key or a field that
//     names something (a step id, a reference, a routing target) may not
//     contain a control or bidirectional formatting character (invalid-name),
//     since names reach terminals.
//  3. Semantic checks: every rule of the original (ir_semantic_error) plus the
//     stricter ones REFERENCE.md lists (duplicate ids, unknown $-references, cycles,
//     recursive flows, expressions that do not compile, ensure references to
//     fields that the output contract does not declare, contracts nested past
//     MaxContractDepth or past MaxContractNodes inlined, on_timeout: approve
//     on an approver: human gate).
//  4. Normalisation: defaults are applied and every expression is compiled once
//     (see Expr); the engine only runs them.
//
// Every problem is reported, not just the first: Parse returns all Diagnostics
// sorted by position, each with file:line:col, a stable code, the original's
// error type and dotted path, a message and a suggestion. A code has one
// error type (codes.go); where the original reports a problem, the code is
// the one with the original's type (an empty guardrail pattern is its
// schema's error; an empty intent is its "exactly one of" step-mode error).
// Diagnostic.String escapes control characters; EscapeControl and
// EscapeControlLines are the one escaper of untrusted text for terminals
// (controls as \xNN, bidirectional characters as \uNNNN).
//
// Constructs of the original's newer releases that this package does not
// implement (the TypeScript rewrite's version: 1) are
// reported as CodeUnsupported, naming the version gap (unsupported.go).
// Reasoning-certificate templates are checked and given their defaults as
// the original does (cert.go).
//
// # Expressions
//
// The expression dialect is split in three. This package holds the types
// the engine runs: Expr (compiled once by Parse, then only evaluated),
// EvalEnv, ExprError, and the ExprCompiler and ExprProgram interfaces.
// Parse takes the compiler as an argument: subpackage exprlang is the
// dialect's compiler (exprlang.Compile), rewriting the Python-flavoured
// source into expr-lang, checking scope and arity, patching every
// operation through a helper, and running the program. Subpackage py is
// the run time: the Python semantics of values, operators, builtins and
// methods, and the work budget that bounds one evaluation. py is also the
// one place for Python's repr() of strings and floats (CanonicalJSON uses
// it). So a program that only runs compiled flows (the Go library) links
// neither expr-lang nor the compiler; the CLI, the MCP server and `stratum
// run` parse with exprlang.Compile.
//
// # Spec files
//
// A spec file is named *.stratum.yaml (SpecSuffix, IsSpecName).
// FindSpecFiles is the discovery rule of `stratum validate`: a directory is
// searched recursively, skipping hidden subdirectories (which covers .git)
// and node_modules (IsSkippedDir). The watcher (subpackage watch) is built
// from the same predicates and also leaves out hidden file names;
// DiscoverWorkflows lists spec names directly in one directory.
// CollectSpecFiles and ValidateFiles are `stratum validate` over its paths;
// WriteResults renders the results in the format ChooseFormat picks from
// its flags (human, json, or github under GitHub Actions). ValidatePaths
// (with ValidateLine, its flags, and PathsStatus, the exit status of a
// problem with the paths) and CompileTo are the commands' bodies
// (command.go), so main.go only binds flags. MigrateFile is
// `stratum migrate` over Migrate: the diff, the question, the atomic write
// and the command's exit statuses (migrate_command.go). The help texts of
// validate, workflows, compile and migrate are in command_help.go.
//
// # Ownership
//
// The IR types are shared, read-only values: nothing outside this package may
// modify a *Spec after Parse returned it. This package and its subpackages
// import nothing else of stratum; the only outside dependencies are yaml.v3
// and jsonschema (expr-lang for exprlang, fsnotify for watch).
package specs
