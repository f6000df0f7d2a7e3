// Package watch watches directories of Stratum specs (`*.stratum.yaml`) and
// re-validates a spec whenever it changes on disk, for `stratum validate
// --watch` and the TUI.
//
// # What is watched
//
// The watcher watches directories, never single files: editors save
// atomically by writing a temporary file and renaming it over the target,
// which silently drops a watch placed on the file itself. Events are filtered
// by name: only files whose base name ends in ".stratum.yaml"
// (specs.IsSpecName) and does not start with "." are reported. With
// Options.Recursive, subdirectories are watched too, except those that spec
// discovery skips (specs.IsSkippedDir: hidden directories, which covers
// ".git", and "node_modules"), and directories created later are picked up as
// they appear.
//
// Create, Write, Rename and Remove events all count as "this path may have
// changed". Events are debounced per path (Options.Debounce, 100 ms by
// default); when a path's debounce fires the watcher stats it: a file that
// exists is parsed again and reported with its Spec and Diagnostics, a known
// file that is gone is reported with Removed set. A file that is renamed away
// and back within the debounce window is therefore a change, not a removal.
// An fsnotify error (for example a kernel queue overflow, which means events
// were lost) triggers a full rescan.
//
// # Generations and slow consumers
//
// Every Update carries a generation number that is strictly increasing across
// all updates of one Watcher, in the order they are delivered, so a UI can
// drop a validation result that is older than one it already shows. The
// Updates channel is buffered; when the consumer lags, pending updates are
// coalesced per path (only the newest state of each path is kept) so the
// watcher never blocks on the consumer and never drops the newest state.
//
// # Concurrency
//
// One goroutine owns the debounce timer, the pending set and the outbox; the
// only shared state is the snapshot behind Files, guarded by a mutex. Close
// cancels that goroutine, closes the fsnotify watcher and waits for the
// goroutine to return, after which the Updates channel is closed. The pure
// parts (the debouncer and the outbox) are unit-tested without goroutines; the
// loop is tested under testing/synctest with a fake event source, and end to
// end against the real file system.
package watch
