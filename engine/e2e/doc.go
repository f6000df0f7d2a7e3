// Package e2e runs the end-to-end tests of the stratum command: it builds the
// binary once and runs the testscript scripts in ../../testdata/script against
// it, each in its own work directory with its own STRATUM_HOME, so no test
// touches the real ~/.stratum. TestRunOnGateWaitLatency measures how soon
// `stratum run --on-gate wait` continues after `stratum gate approve` in
// another process.
//
// Run one script with: go test ./engine/e2e -run TestScripts/validate
// Refresh the expected output embedded in scripts with: go test ./engine/e2e -update
package e2e
