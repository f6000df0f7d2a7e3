package specs

// testCompile is the expression compiler this package's tests parse with:
// exprlang.Compile, set by SetTestCompile from the external test package
// (exprlang imports specs, so a test of package specs cannot import it).
var testCompile ExprCompiler

// SetTestCompile sets testCompile; exprlang_test.go calls it from init,
// before any test runs.
func SetTestCompile(c ExprCompiler) { testCompile = c }
