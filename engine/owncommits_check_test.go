package engine

// The engine's own tests always run with the own-commit copies checked
// (owncommits.go): a transition that writes into a recorded value in place
// fails them.
func init() { checkOwnCommits = true }
