// Package backend is the store side of the stratum command: it opens the
// store the settings select (store/shared, with team mode linked in: the
// command opens bbolt files and etcd clusters alike) and holds the bodies
// of `stratum store info|check|copy|compact` and `gc --damaged` (Describe,
// Check, CopyLocations and CopyStores, Compact, QuarantineDamaged), with
// the help texts of store and gc (command_help.go). command.go holds those
// commands whole, so main.go only binds flags and opens the store:
// InfoCommand, CheckCommand, CompactCommand, CopyCommand and
// GCDamagedCommand answer with (report or answer, exit status, error) and
// main prints a Report as JSON or text. Where the store is, and
// the settings read for it, are store/shared's (the one place that rule
// lives).
//
// Part of the stratum command, not a public API: its exported names serve
// the command's packages and may change.
package backend
