// Package store is the bbolt persistence of stratum: flow states, the event
// log, the pending-gate index, list summaries and the persistent result
// cache, in one file ($STRATUM_HOME/stratum.db) shared by every stratum
// process on the machine (the TUI, `stratum mcp`, `stratum gate`, `stratum
// run`). It implements engine.Store — transactions, the event log, Watch and
// GC — and passes store/storetest; it may import engine, specs and review,
// and nothing imports it except main, store/shared, store/backend and
// tests.
//
// This is one of two backends of the same port: store/etcdstore keeps the
// same flows, log and cache in an etcd cluster shared by many machines
// (team mode); store/shared opens one or the other from STRATUM_STORE or
// the config's store: (a path, or etcd://HOST:PORT[,…]/PREFIX; etcd only
// with store/team linked in), and store/backend copies between them
// (stratum store copy). What follows is the bbolt file.
//
// # Sharing the file
//
// A Store holds the file's lock only inside a call. Every View opens the
// file, takes its lock (shared), runs exactly one transaction and closes
// the file. Every Update takes the lock (exclusive), runs one transaction
// and releases the lock, so a process that is idle never blocks the
// others; it leaves the file open and mapped, unlocked, for
// Options.KeepOpen (DefaultKeepOpen, 1 s) after its last Update, and the
// next Update of the same process, having re-taken the lock, reuses that
// handle only if no other process wrote meanwhile: the path still names
// the same file, of the same size, whose last committed transaction (in
// bbolt's meta page; every commit increments it) is the one the handle
// left. bbolt's in-memory state of the handle (the free-page list, the
// mapping) is then exactly the file's. Otherwise, and after KeepOpen, the
// handle is closed and the file opened afresh. A burst of transitions
// (an agent reporting steps, a runner) thus skips the open, mmap and
// munmap of each, and an idle process holds nothing open. Under the lock
// the file is stat'ed once (the size check, the page-check generation and
// the kept handle's size share it) and once more after a commit: one fstat
// per read, two per write.
//
// A lock held by another process is retried with jittered exponential
// backoff (one non-blocking try each time) up to Options.LockTimeout, then
// the call fails with an error wrapping engine.ErrLocked. Goroutines of one process queue on an in-process lock
// first. Each engine transition is one read-modify-write inside one Update,
// so concurrent processes cannot lose each other's updates; an Update that
// returns is durable (bbolt fsyncs before Commit returns), and kill -9 at
// any point loses nothing that was committed. An Update whose fn wrote
// nothing is rolled back rather than committed, saving the fsyncs. Every
// transaction re-checks meta/schema_version, so a process still running
// when a newer stratum migrates the file stops with ErrNewerSchema instead
// of writing the old format into it.
//
// # Conditional put
//
// Put is the port's conditional put (engine.Tx): it writes a flow only if
// the flow is stored at the version the writer expects (engine.NotStored:
// not at all), else it returns an *engine.VersionError (errors.Is
// engine.ErrConflict) and writes nothing. The stored version is read from
// the flow's summary, which Put reads anyway to move its index entries, so
// the state is not decoded; bbolt runs one write transaction at a time, so
// nothing comes between the comparison and the write. The state's stamps
// (UpdatedAt, CreatedAt, Version) are the writer's, set before Put
// (state.FlowState.Stamp): the store compares and stores, and stamps
// nothing but a zero SchemaVersion.
//
// # Schema
//
// Every bucket is top-level. Keys marked ‖ are concatenations. Flow states
// and events are JSON (an event as engine.Event.AppendJSON writes it, the
// bytes the log has always held: testdata/events); meta values are raw; <summary> is the engine's
// FlowSummary of the flow (see Summaries) in the compact binary codec of
// codec.go, version 3 since schema 4 (List decodes up to 10,000 of them per
// call, and JSON was several times slower).
//
//	meta/                               raw values, readable by every version
//	    format          = "stratum"     marks the file as ours
//	    schema_version  = "6"           ASCII decimal; gates migrations
//	    created_at      = RFC 3339      when the file was initialised
//	    upgraded_at     = RFC 3339      last migration (absent if never)
//	flows/
//	    <flow id>       = state.FlowState JSON (stratum_state_version inside),
//	                      raw_spec a reference: "\x00sha256:" ‖ 64 hex digits,
//	                      records null and trace absent: they are in flowlog;
//	                      step_outputs and attempts null when in flowlog
//	flowlog/                            since schema 5 (flowlog.go)
//	    <flow id> ‖ 0x00 ‖ "m"          = <tag:8> ‖ <records:4> ‖ <trace:4> ‖ <flags:1> ‖ <spec:32>
//	    <flow id> ‖ 0x00 ‖ "r" ‖ <i:4>  = records[i], state.Record JSON
//	    <flow id> ‖ 0x00 ‖ "t" ‖ <i:4>  = trace[i], JSON
//	                                    since schema 6, past 16 steps (flowsteps.go):
//	    <flow id> ‖ 0x00 ‖ "n"          = <tag:8> ‖ <outputs:4> ‖ <attempts:4> ‖ <flags:1>
//	    <flow id> ‖ 0x00 ‖ "s" ‖ <step> ‖ 0x00 ‖ "a" = attempts[step], ASCII decimal
//	    <flow id> ‖ 0x00 ‖ "s" ‖ <step> ‖ 0x00 ‖ "o" = step_outputs[step], JSON
//	specs/
//	    <sha256:32>     = <flows:8> ‖ spec text    once per distinct spec
//	summaries/
//	    <flow id>       = <summary>     as the last Put was given it, with the state's stamps
//	idx_created/
//	    <created:8> ‖ <flow id>                   = ""   newest-first listing
//	idx_status/
//	    <status> ‖ 0x00 ‖ <created:8> ‖ <flow id> = ""   List(Status)
//	idx_gates/
//	    <flow id>       = ""            status awaiting_gate and Gate set
//	idx_deadline/                       since schema 7
//	    <deadline:8> ‖ <flow id>        = ""   awaiting a gate with a deadline (GatesDue)
//	events/                             sequence = last seq ever assigned
//	    <seq:8>         = engine.Event JSON
//	    <flow id> ‖ 0x00 ‖ <seq:8>      = ""   a flow's events, for listing and Delete
//	cache/
//	    <cache key>     = raw cached bytes
//	guards/                             created by the first guard write (guards.go)
//	    <resource key> ‖ 0x00 ‖ 'r'      = a guarded resource's registration
//	    <resource key> ‖ 0x00 ‖ 'e' ‖ <seq:8> = its ledger entries, append-only
//
// A flow state's raw_spec (the spec text, several KiB and the same for
// every flow of a spec) is stored once in specs, keyed by its SHA-256, with
// the number of flows referring to it (<flows:8>, big-endian); the state's
// JSON holds the reference instead (an empty raw_spec stays empty). Get
// puts the text back and Put takes it out, so the engine never sees a
// reference, and a transition neither encodes, decodes nor rewrites the
// text. The entry is written only when a flow is created, deleted or
// changes spec, and deleted with the last flow referring to it.
//
// A flow's records and trace grow by an entry per step; since schema 5
// they are stored one key per entry (flowlog.go), so a transition encodes
// and writes only the entries it added (a step: one record) instead of the
// whole growing state — at 200 steps the state was ~100 KiB, rewritten on
// every step. The tag changes whenever a stored entry would change (a
// round archived, a revert), and then all of them are rewritten; each
// Store caches the entries it last read or wrote per flow, under their
// tag, so Get decodes only entries added since and Put compares without
// encoding. Get puts records and trace back into the state, so the engine
// never sees the split.
//
// A flow's step outputs and attempts hold an entry per step too, replaced
// rather than appended (a retry, a new round); since schema 6, once either
// holds more than 16 steps, they are stored one key per step id in
// bucket flowlog (flowsteps.go): a transition writes the entries it
// changed, added or removed, under a new tag (none: the tag is kept), and
// the Store caches the maps under their tag beside the flow's records, so
// Get copies them instead of decoding and Put compares instead of
// encoding. A shorter flow keeps them in its state, where they cost less
// than the leaf page of their own would cost every commit. Get puts them
// back as well: the state, and `stratum query flow`, read as before.
//
// <seq:8> is the uint64 from bucket events' NextSequence, 8 bytes big-endian,
// so the log sorts in commit order across all processes. The per-flow index
// lives in the same bucket (since schema 3; it was idx_flow_events): its
// keys are at least 10 bytes and start with the flow id's first byte, never
// 0x00, so they sort after every sequence key (below 2^56), and an Append
// dirties one B-tree path, not two. <created:8> is CreatedAt as Unix
// nanoseconds with the sign bit flipped, 8 bytes big-endian, so it sorts
// chronologically. Flow ids may not contain NUL and
// are at most 512 bytes.
//
// Put keeps summaries, flowlog and the idx_* buckets in step with flows
// inside the same transaction; Delete and GC remove a flow's state,
// summary, log entries, index entries, events and reference to its spec
// together. The index entries
// are keys only (since schema 3; schema 2 stored a copy of the summary in
// each), so they change only when a flow is created, changes status or CreatedAt, or starts or
// stops awaiting a gate, and then only the indexes whose key changed are
// touched (a completion from a gate rewrites idx_status, idx_gates and
// idx_deadline, not idx_created): a typical transition rewrites flows/<id> and
// summaries/<id> and appends to events (and a step's record to flowlog,
// and, past 16 steps, its output and attempts; the flow's log meta entry
// is rewritten only when it changes), so bbolt
// writes (and fdatasyncs) three or four B-tree paths, the root page and
// the free-page list — 11 or 12 pages at 10,000 flows for three (see The
// cost of a commit), where schema 2 wrote 21. List walks the keys of
// idx_created (or idx_status) backwards, from the last or from the key
// before ListFilter.After's (a page of the listing is one seek), and reads
// each returned flow's summary from summaries; PendingGates does the same
// over idx_gates, and GatesDue (the sweep of expired deadlines every
// command opens with) over the start of idx_deadline, up to the first
// deadline after now: it decodes only the summaries of the gates due.
// Count walks the same keys and reads no summary (100,000
// keys: a few milliseconds).
//
// # The cost of a commit
//
// A commit is bbolt's: the dirty pages are written and fdatasync'ed, then
// the meta page, and fdatasync'ed again. Nothing else is synced (the
// <path>.verified record is rewritten in place and not synced) except when
// the file grows (bbolt's ftruncate and fsync: rare, the file grows by
// doubling, then by 16 MiB). The free-page list is one more page of the
// commit, near the others (it added no run where measured); bbolt can
// instead rebuild it at open (NoFreelistSync), but by reading every page of
// the file, which each Update that opens the file afresh (another process
// wrote, or KeepOpen passed) would pay: tens of milliseconds at 10,000
// flows (64 MiB), a fifth of a second to a second at 100,000 (570 MiB).
// bbolt puts a commit's pages on the lowest free pages, scattered over the
// file, and the disk writes each run of adjacent pages separately: at
// 10,000 flows a transition that adds no record writes 11 or 12 pages
// (flows and summaries three deep, the end of events, the root page, the
// free-page list) in 8 or 9 runs, and on a virtual disk where a 4 KiB write
// and fsync takes 100–150 µs its I/O takes about 3 times that (2.6 to 3.3),
// against 1.6 to 1.9 for one page and the meta page (the floor of any
// commit); with one flow, 6 pages in 3 runs, about 2. The trees are three
// deep at 10,000 flows whatever their page fill, and pages of 16 KiB write
// 7.5 runs of 137 KiB instead.
//
// # Summaries
//
// The store derives nothing: the engine computes every summary
// (engine.Summarize: step k/n, current step, round, driver, parent, gate,
// runner lease) and hands it to Put with the state. Put stores it with the
// state's CreatedAt, UpdatedAt and Version, so the two records cannot
// disagree on them, and refuses a summary whose FlowID or Status is not
// the state's (the indexes are keyed by them); every other field is stored
// as given. GC decides from the stored summaries (engine's
// FlowSummary.Prunable). Because summaries are the engine's, Reindex takes
// the derivation as an argument, and a migration that changes what
// summaries hold rewrites the stored ones (rewriteSummaries) rather than
// recomputing them; 1→2 added the runner lease (Owner) from each state's
// "owner". 3→4 added the pending gate's review (state.GateReview: the
// question and whether revise is accepted) to the summaries of flows at a
// gate, by engine.Summarize of each such state with its flow in its stored
// spec (each distinct spec parsed once), so the gate list never decodes a
// state.
//
// # Watching
//
// Watch follows the log by sequence number for a consumer (the engine's
// Service.Watch, and through it the TUI, stratum_wait_gate and `run
// --on-gate wait`). Each Watch runs one goroutine with an fsnotify watcher
// on the store's directory — not the file, so a file replaced by rename is
// seen — filtered by the file's name; every commit of any process writes the
// file, so it wakes within a millisecond or two of a commit anywhere on the
// machine. Options.WatchPoll (DefaultWatchPoll, 2 s) is only the fallback
// when no file-system event comes (fsnotify unavailable or out of
// instances, network file systems). A wake-up reads what follows the last
// event delivered, in batches of up to 1,000, in a View; a read that fails
// (the file stayed locked past LockTimeout) is retried at the next wake-up.
// The process's own commits cost its watchers no read: an Update hands the
// events it appended to them in memory when it commits, and a wake-up (its
// file events) that finds the file as that commit left it — same status
// and same record in <path>.verified, which every commit rewrites with its
// transaction id before releasing the lock — and nothing undelivered
// before it reads nothing (watch_own.go); the events of the process's
// consecutive commits are kept, so a burst is delivered from memory too. A
// commit of another process changes the record, so its wake-up reads.
// After a quiet spell a wake-up is handled at once, then at most one per
// Options.WatchGap (10 ms): a burst's wake-ups collapse into one.
// The goroutine waits for the consumer to take each batch, so a slow
// consumer loses nothing, and it closes the channel when ctx ends.
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
// A write transaction first runs bbolt's page check (tx.Check) unless the
// file is at the generation the last stratum commit recorded in
// <path>.verified (device, inode, size, modification and change times,
// transaction id: verify.go), so a page damaged while no stratum process
// ran is refused with ErrCorrupt before anything is written over it. The
// check runs on a copy of the file (Tx.WriteTo) in a child process — this
// executable, turned into a checker by pagecheck.go's init — because
// bbolt's check runs in a goroutine of its own, where a memory fault on a
// damaged page would end the process instead of becoming ErrCorrupt;
// CheckFilePages is that check for any closed file.
//
// A flow whose state or summary cannot be decoded, the rest being sound, is
// an *engine.DamagedError (engine.ErrDamaged, wrapping ErrCorrupt): Get
// returns it, List and PendingGates return the other flows with it, GC
// skips the flow. QuarantineDamaged moves such records, raw, into bucket
// quarantine (<flow id> ‖ 0x00 ‖ "state" or "summary"), removing the flow
// like Delete and recounting the specs' references; older binaries ignore
// the bucket.
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
// Values returned by a Tx are private copies. Put sets a zero
// SchemaVersion on the state it is given, and Append sets Seq (and a zero
// Time) on the events it is given, even if the Update later fails.
package store
