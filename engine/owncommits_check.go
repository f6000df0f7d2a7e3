//go:build stratum_owncheck

package engine

// Built with -tags stratum_owncheck (the tests of the packages that drive
// the engine: engine/run, engine/mcp), a Service checks that its own-commit
// copies stay as they were put (owncommits.go, checkOwnCommits).
func init() { checkOwnCommits = true }
