// Package store is the bbolt persistence of stratum: flow states, the event
// log, the pending-gate index, list summaries and the persistent result
// cache, in one file ($STRATUM_HOME/stratum.db) shared by every stratum
// process on the machine (the TUI, `stratum mcp`, `stratum gate`, `stratum
// run`). It implements engine.Store; it may import engine, specs and review,
// and nothing imports it except main and tests.
//
// # Sharing the file
//
// A Store keeps no file open between calls. Every Update/View opens the
// file, takes its lock (exclusive for Update, shared for View), runs exactly
// one transaction and closes the file, so a process that is idle never
// blocks the others. A lock held by another process is retried with jittered
// exponential backoff (one non-blocking try each time) up to
// Options.LockTimeout, then the call fails with an error wrapping
// engine.ErrLocked. Goroutines of one process queue on an in-process lock
// first. Each engine transition is one read-modify-write inside one Update,
// so concurrent processes cannot lose each other's updates; an Update that
// returns is durable (bbolt fsyncs before Commit returns), and kill -9 at
// any point loses nothing that was committed. An Update whose fn wrote
// nothing is rolled back rather than committed, saving the fsyncs. Every
// transaction re-checks meta/schema_version, so a process still running
// when a newer stratum migrates the file stops with ErrNewerSchema instead
// of writing the old format into it.
//
// # Schema
//
// Every bucket is top-level. Keys marked ‖ are concatenations. Flow states
// and events are JSON; meta values are raw; <summary> is the compact binary
// engine.FlowSummary of codec.go (List decodes up to 10,000 of them per
// call, and JSON was several times slower).
//
//	meta/                               raw values, readable by every version
//	    format          = "stratum"     marks the file as ours
//	    schema_version  = "2"           ASCII decimal; gates migrations
//	    created_at      = RFC 3339      when the file was initialised
//	    upgraded_at     = RFC 3339      last migration (absent if never)
//	flows/
//	    <flow id>       = engine.FlowState JSON (stratum_state_version inside)
//	summaries/
//	    <flow id>       = <summary>     rewritten by every Put
//	idx_created/
//	    <created:8> ‖ <flow id>                   = <summary>   newest-first listing
//	idx_status/
//	    <status> ‖ 0x00 ‖ <created:8> ‖ <flow id> = <summary>   List(Status)
//	idx_gates/
//	    <flow id>       = <summary>     status awaiting_gate and Gate set
//	events/                             sequence = last seq ever assigned
//	    <seq:8>         = engine.Event JSON
//	idx_flow_events/
//	    <flow id> ‖ 0x00 ‖ <seq:8>      = ""   a flow's events, for listing and Delete
//	cache/
//	    <cache key>     = raw cached bytes
//
// <seq:8> is the uint64 from bucket events' NextSequence, 8 bytes big-endian,
// so the log sorts in commit order across all processes. <created:8> is
// CreatedAt as Unix nanoseconds with the sign bit flipped, 8 bytes
// big-endian, so it sorts chronologically. Flow ids may not contain NUL and
// are at most 512 bytes.
//
// Put keeps summaries and the idx_* buckets in step with flows inside the
// same transaction; Delete and GC remove a flow's state, summary, index
// entries and events together. List walks idx_created (or idx_status)
// backwards, reading the summaries stored in the index values, and decodes
// only the ones it returns.
//
// # Opening, corruption, migrations
//
// Open creates an absent file (and its directory) and initialises an empty
// one. An existing file is first inspected in a read-only transaction: a
// file bbolt rejects, a truncated file, a bbolt file of another program, or
// one whose meta/schema_version is newer than SchemaVersion gives a
// *FileError naming the file and what to do, and the file is never opened
// for writing. Faults while reading a damaged mapping are turned into
// ErrCorrupt rather than crashing the process.
//
// An older schema is migrated on Open: the file is first copied to
// <path>.bak-v<N> (N the old version), then every step from N to
// SchemaVersion and the version bump run in one write transaction, so a
// failed step leaves the file as it was.
//
// # Caveats
//
// Inside Update/View, fn must not call the Store again (it would wait for
// its own lock), and should be short: other processes wait while it runs.
// Values returned by a Tx are private copies. Put sets CreatedAt, UpdatedAt,
// Version and (when zero) SchemaVersion on the state it is given, even if
// the Update later fails.
package store
