// Package etcdstore is the team backend of stratum: engine.Store over an
// etcd cluster (go.etcd.io/etcd/client/v3), so processes on many machines
// share flows, gates and the event log. It passes store/storetest like the
// bbolt store; it may import engine, and nothing imports it except
// store/team (which registers it with store/shared), store/backend, main
// and tests.
//
// # Transactions
//
// An Update runs fn against a snapshot of the keyspace: the first read pins
// the etcd revision R and every later read of the transaction is made at R,
// so fn sees one consistent state. Writes are buffered (and read back by the
// transaction itself). Commit is one etcd transaction: If every key fn read
// still has the mod revision it had at R (0 for a key that was absent), and
// no key of a range fn read inside an Update changed after R (ranges also
// compare meta/gen, which every deletion of a flow bumps, so a key deleted
// from a range is seen too), Then all the writes. A transaction that loses
// (another writer got there first) is retried from scratch with jittered
// backoff, bounded by Options.Timeout and maxAttempts; fn must be safe to
// call more than once, as the port already requires. Two deciders of one
// gate both read the flow's key; exactly one commit succeeds, the other
// re-runs fn on the new state and finds the gate decided. Nothing is ever
// half applied: an etcd transaction is atomic, and fn's writes are only
// sent in it.
//
// Put is the port's conditional put (engine.Tx): it compares the version
// stored with the one the writer expects (engine.NotStored: no such flow)
// and, when they differ, returns an *engine.VersionError (errors.Is
// engine.ErrConflict) without buffering anything. The stored version is
// the one of the state the transaction read (Get of f/<id>, as the engine
// reads a flow before it writes it), else it reads the flow's summary key
// s/<id>; f/ and s/ are only ever written together. Because the key was
// read, the commit compares its mod revision: a writer that changes the
// flow after the snapshot makes the commit fail and fn run again on a new
// snapshot, where Put sees the new version and refuses. The comparison and
// the write are therefore one atomic step. The stamps (UpdatedAt, CreatedAt, Version) are the
// writer's (state.FlowState.Stamp); the store stores them as given.
//
// # Keys
//
// Every key starts with the root of the prefix: "/PREFIX/" followed by a
// NUL byte (etcd://HOST:PORT/PREFIX → "/PREFIX/\x00"), so teams share a
// cluster and may nest: a prefix has no NUL, so no root starts with
// another's, and team/d's keys ("/team/d/\x00…") lie in no range of team's
// ("/team/\x00…"). An etcd role granted read/write on "/PREFIX/" covers the
// root. Below the root (‖ is concatenation, NUL separates a flow id from
// what follows; flow ids may not contain NUL):
//
//	meta/format          "stratum-etcd"
//	meta/schema_version  "7" (SchemaVersion)
//	meta/created_at      RFC 3339
//	meta/seq             high-water mark: at least every sequence number of
//	                     a deleted event (decimal; schema 2: the last one
//	                     assigned); written by Delete only
//	meta/gen             changed by every flow deletion (range-read guard)
//	meta/last_append     how many events the last appending commit
//	                     appended (decimal); its mod revision is that
//	                     commit's (schema 4; see Watching)
//	f/<id>               state.FlowState JSON, deflated from 1 KiB on
//	                     (pack.go; schema 5)
//	s/<id>               the flow's FlowSummary JSON, with the state's stamps
//	r/<id>‖NUL‖<task id> one task record of the flow (parallel_tasks), JSON,
//	                     when it has more than 16 (schema 6; tasks.go);
//	                     f/ and s/ then count them ("etcdstore_tasks");
//	                     a Put writes those whose record changed, one it
//	                     was handed before taken as unchanged (Tx.Put)
//	c/<created:16>‖NUL‖<id>                  (empty)   newest-first listing
//	t/<status>‖NUL‖<created:16>‖NUL‖<id>     (empty)   List(Status)
//	g/<id>               summary   status awaiting_gate with a Gate
//	p/<id>‖NUL‖<token:24><pos:4>  events (the log, schema 7): the first
//	                     one's sequence number is the key's mod
//	                     revision<<16 | pos, the others follow
//	e/<seq:16>           events (schema 6 and before: the ordered log,
//	                     seq the first one's; no longer written)
//	x/<id>‖NUL‖<seq:16>  events (schema 6 and before: a flow's; idem)
//	d/<id>               tombstone of a deleted flow with many events
//	k/<cache key>        raw cached bytes
//	gd/<key>/r           a guarded resource's registration (engine/guard)
//	gd/<key>/e/<seq:20>  its ledger entries, append-only (decimal seq)
//	leases/<lease id>‖NUL‖<id>  flow id, attached to the etcd lease of the
//	                     runner lease that owns the flow (see Runner leases)
//
// "events" is what one commit appended to one flow one after the other:
// one engine.Event JSON, or several as a JSON array (schema 5; before it,
// each event had keys of its own, which read the same).
// <seq:16>, <created:16> and <token:24> are lower-case hex digits (created: Unix
// nanoseconds with the sign bit flipped), so keys sort numerically.
// Count is a count-only range over c/ or t/<status> (no key is sent
// back); there is no counter key, which every writer would contend on.
// The entries of c/ and t/ name a flow and hold nothing (schema 4's held a
// copy of the summary, no longer read): List reads the entries, then the
// summaries from s/ at the same snapshot, in one request per 100 flows. So
// a transition writes f/ and s/, and an index entry only when its key
// changes (the status does, or the flow is new); g/ holds the summary, as
// PendingGates reads only it.
//
// # Schema 1 and its migration
//
// Schema 1 put the same keys directly below "/PREFIX/", so a nested prefix's
// keys lay in its parent's ranges ("/team/d/…" in team's tombstone range
// d/, "/team/e/…" in its event log e/): gc on team deleted team/d's flows,
// store info on team could not decode team/e's keys. Open migrates a
// schema 1 prefix in place (migrate.go): under an etcd lock
// (meta/migrating below the new root) it copies the prefix's own keys — a
// key is the prefix's when what follows "/PREFIX/" starts with one of the
// names above (meta/, f/, s/, …) and it lies in no nested prefix, schema 1
// (its meta/format found below "/PREFIX/") or 2 (a NUL after a slash) — at
// one revision, in batches (runner lease keys stay on their etcd lease),
// commits by writing meta/format and meta/schema_version 2 below the root,
// sets the old "/PREFIX/meta/schema_version" to 2 (a schema 1 stratum then
// refuses the prefix rather than write where no one reads), and deletes the
// copied keys. Older stratum processes must be stopped first: what they
// write during the migration is lost. An interrupted migration is redone
// from the start at the next Open (the copy overwrites).
//
// # The event log
//
// No key the appending transactions compare is shared (since schema 3;
// schema 2 compared meta/seq in every one, so writers of different flows
// conflicted and retried; meta/last_append, which every append replaces,
// is compared by none): a transaction conflicts only on the keys it read,
// in practice the flows it touches. Append writes the events of a flow to a key
// p/<id>‖NUL‖<token><pos>, which no writer reads (the events it appends to
// one flow one after the other share it): the token is unique to the
// transaction attempt (a random 64-bit id of the Store and a counter), pos
// is the first event's position among the transaction's appends. An event's
// sequence number is the etcd revision R of the commit that wrote it,
// shifted: R<<16 | pos (so at most 65536 events per transaction; etcd's
// limit of 128 operations comes first). Revisions grow with every commit
// of the cluster, so numbers are strictly increasing in commit order and
// never reused; they are dense within one commit and leave gaps between
// commits. Append stamps them into the caller's events when the commit
// succeeds (the revision is known only then).
//
// The key is the events' place in the log for good (schema 7): nothing
// moves them, and they are deleted with their flow only. So a transition
// writes its events once, in its own commit: the flow (f/), its summary
// (s/), its events (p/) and meta/last_append, in one etcd transaction that
// compares the flow alone. (Schema 6 and before wrote them pending in p/
// and had an indexer move them into the ordered log e/<seq:16> and the
// flow's x/<id>‖NUL‖<seq:16>: a compare, a delete and two puts more per
// key. Those keys stay where that indexer left them and are read as they
// are: Events merges e/ with p/, FlowEvents x/<id> with p/<id>, and an
// event found in both, as a schema 6 process still running moved it, is
// kept once.)
//
// FlowEvents ranges over p/<id>‖NUL (the flow's keys, ordered by mod
// revision and position). The keys of p/ are ordered by flow, not by
// sequence number, so Events finds the events after a cursor by
// revision (logtail.go), at the snapshot revision S:
//
//   - From the Store's feed when it holds them (see Watching): no read.
//   - Else, for a cursor at most 4096 revisions behind S (replayMax), from
//     etcd's history: one etcd watch from the cursor's revision over
//     [meta/last_append, the end of p/) delivers the puts of p/ in commit
//     order, up to the put of meta/last_append at its mod revision at S
//     (the last appending commit up to S; every key of p/ is put by an
//     appending commit, and that put is its last operation). When a flow
//     was deleted since the cursor (meta/gen's mod revision is above it),
//     the keys found are read again at S and those gone left out. etcd
//     reads every key committed in those revisions to answer, so the cost
//     is what was committed since the cursor, whatever the history before
//     it; the watch waits for etcd's next sync of such watches (at most
//     100 ms).
//   - Else (a cursor further back, a compacted history, or inside an
//     Update, where the commit compares the range), from the keys of p/:
//     a range with no value, in pages of 1000, then the values of those
//     committed after the cursor (as many keys as the limit needs). Its
//     cost is the number of the log's keys.
//
// So a reader at S sees every event committed up to S and none after, with
// no range over p/ in the recent case. Events a transaction appends are
// invisible to its own reads before its commit (they have no number yet).
//
// LastSeq is the largest of meta/seq and the last event appended (read
// from meta/last_append: one key, not the log); before a prefix's first
// append of schema 4, the largest of meta/seq, the last key of e/ and the
// events of p/; it is 0 for a log that never held an event. Events
// written by schema 2 keep their dense numbers, all below the
// revision-based ones (every commit that appended them took a revision),
// so schema 2 becomes schema 3, and 3 becomes 4, at Open by writing the
// version only; a schema 2 process still running would number events
// below the new ones, one of schema 3 would append without writing
// meta/last_append (see Watching), hence the version: they refuse the
// prefix from then on (stop older processes before upgrading).
//
// A flow is deleted in the transaction of Delete. Its events go with it when
// they fit an etcd transaction (etcd refuses more than 128 operations by
// default); a flow with more events leaves a tombstone d/<id> holding the
// last sequence number at the deletion, every read of the log hides the
// flow's events up to it (its value is the snapshot revision<<16 | 0xffff,
// so it hides the flow's events in p/ as well as in e/ and x/), and the
// Store removes them in batches right after the commit, those of p/ first
// (read a page of keys at a time, with no value), then those of x/ and
// e/, then the tombstone (GC finishes what a process that died meanwhile
// left). Delete raises meta/seq to the largest number it deletes of the
// events it reads (the others were appended by commits that wrote
// meta/last_append, which keeps LastSeq above them), so LastSeq never
// goes down.
//
// # Watching
//
// Watch follows the Store's feed (feed.go): one etcd watch per Store,
// started by its first Watch and kept until Close, on the puts of p/ (every
// append, in any process on any machine), meta/last_append and meta/gen.
// The feed keeps the events it saw in memory (the last 4096 to 8192), so a
// watcher woken by a commit reads nothing from etcd: what it delivers comes
// in order from the feed, and nothing is skipped or repeated. What the feed
// does not hold — a cursor from before the feed started, a flow deleted
// since (a put of meta/gen: the feed starts again after it, as it cannot
// tell which events went) — is read from the log (at one snapshot, as
// Events reads it: recent, from etcd's history), and so is the first read of a watcher whose cursor lies
// behind. A read of the recent log in a View (Events, as the engine reads
// a gap between its own publications) is answered from the feed too, when
// it runs: the snapshot is pinned by reading meta/gen and meta/last_append
// (the revision of the last appending commit, which the feed must have
// reached; it waits up to 100 ms for it), else the log is read. No watcher
// and no read of the recent log ranges over p/ (with a few processes
// appending, a range over it on every commit made a transition's cost grow
// with the history: TestTransitionCost, BenchmarkHistory). A cursor is a
// sequence number: where etcd compacted the history after it, the log is
// read from the keys of p/, so compaction cannot make a cursor miss an
// event (no cursor is "too old"; only a deleted flow's events are gone, as
// the port says). A
// feed watch cancelled by compaction or by a member that lost the leader
// (the watch requires one) starts again where it was, or, when that
// revision was compacted, from the current one with nothing held, and its
// watchers read the log (TestWatchCompacted). A slow poll (watchPoll)
// covers a watch stream that stalls silently.
//
// A Service publishes its own commits to its watchers in-process and reads
// the log only when a publication does not follow the last event a
// watcher delivered (engine.Store's Follows). Numbers leave gaps between
// commits, so the Store says what follows (Follows, order.go): within a
// commit, the next position; the first event of a commit follows the last
// event of the appending commit before it. Every appending commit reads
// meta/last_append and replaces it with its own count inside its etcd
// transaction, after its compares and compared by no one, so it conflicts
// with nothing; what it read is its predecessor (the key's mod revision
// and count), which the Store remembers for its last 4096 commits. For any
// other commit it answers false, and the watcher reads the gap from the
// log: a real gap (another process committed between, a publication
// dropped) is always read.
//
// # Failures
//
// Every call is bounded by Options.Timeout (default DefaultTimeout). A
// cluster that does not answer (unreachable, no quorum), refused
// credentials or a compacted snapshot give an *Error: one line naming the
// endpoints and what to do. An Update whose timeout runs out after it lost
// at least one race (the cluster answered; other writers of the same keys
// kept winning) is a conflict instead: an *Error wrapping engine.ErrConflict
// that says so, never "no answer". Credentials are never part of an error or a key.
//
// # Runner leases
//
// The engine keeps a runner's lease in the flow state (FlowState.Owner: id,
// pid, host, ExpiresAt), renewed by the runner's heartbeat transitions
// (every TTL/3; TTL 30 s by default) and checked inside the same
// transaction as every write it guards (Claim, TakeOver, agent reports,
// commits, reverts: flow_owned). The engine's port has no lease operation,
// and the engine is the same for every store; this store backs each such
// lease with an etcd lease underneath the port, so whether a silent runner
// is dead is decided by etcd (the leader counts the TTL), not by the clock
// of the machine that looks:
//
//   - A Put of a state whose Owner is live (ExpiresAt after the store's
//     clock) marks the flow's records (f/, s/ and the copy in g/ begin
//     with {"etcdstore_lease":"<lease id>", …}) and makes sure, in the same
//     etcd transaction, that the key leases/<lease id>‖NUL‖<flow id> exists,
//     attached to an etcd lease. The Store that grants it (TTL: the
//     lease's remaining time, rounded up, at least minLeaseTTL, 5 s) keeps
//     it by runner lease id; a later Put of that owner whose ExpiresAt is
//     beyond what the etcd lease is known to last (the runner's heartbeat)
//     sends a KeepAliveOnce, or grants a new etcd lease when the old one
//     expired or is too short. So it is the runner's own heartbeats that
//     keep the etcd lease alive, wherever the runner runs: a process that
//     writes the flow elsewhere (a gate decided on another machine) leaves
//     the key as it is, on the runner's etcd lease, and never renews it.
//     There is one key per flow on one etcd lease per runner lease, because
//     a runner holds its flow and its child flows with one lease id and
//     releases them one at a time.
//   - A Put that clears the owner (Release), replaces it (Claim, TakeOver),
//     writes one already expired or ends the flow (a finished flow accepts
//     no reports: its owner stays in the state, unbacked and unmarked),
//     and a Delete, delete the flow's key in the same transaction; when the runner lease then owns no flow, the
//     Store that keeps its etcd lease revokes it at once.
//   - A read of a marked owner (Get; FlowSummary.Owner in the summaries of
//     List and PendingGates) looks at its key at the transaction's snapshot
//     revision. Gone (etcd expired or revoked the lease): the owner is
//     reported expired, with ExpiresAt set to ExpiredAt, the Unix epoch —
//     in the past for every clock (Heartbeat is kept: when the runner was
//     last heard). Present: the owner is reported live until at least the
//     reader's clock plus the etcd lease's remaining TTL (TimeToLive; the
//     later of that and the stored ExpiresAt). Inside an Update the key
//     joins the compare set, so a write decided on a live or an expired
//     owner commits only if it still is: a takeover cannot race an expiry
//     (TestTakeoverCannotRaceExpiry).
//
// What that gives:
//
//   - Who may write is decided by the etcd transaction, never by a clock:
//     every write compares f/<id> (and the lease key it judged) at the
//     revisions it read, so a takeover and the old holder's next heartbeat
//     or report cannot both commit; after the takeover the old holder's
//     writes are refused (ErrLeaseHeld, flow_owned).
//   - When a silent runner is dead is decided by etcd, the same for every
//     machine whatever its clock: a runner killed with kill -9 anywhere
//     loses its flows when its etcd lease expires, at most the TTL after
//     its last heartbeat; a machine whose clock is ahead never presumes a
//     live runner dead, and one whose clock is behind sees a dead one
//     expired as soon as etcd does (TestKilledRunnerLeaseFollowsEtcd,
//     TestRunnerLeaseIgnoresClockSkew). On the runner's own host, stratum
//     run --resume takes over at once when the lease's pid is gone.
//   - What an etcd lease does not change: a runner cut off from the
//     cluster for longer than the TTL loses its lease while it still runs;
//     it learns it at its next heartbeat (ErrLeaseHeld cancels its run) or
//     write (flow_owned), none of its writes after a takeover commits, but
//     the side effects of a step it was running (a command) are not
//     undone: no lease can fence a process that does not know yet that it
//     lost it. A runner's clock only sets its own etcd TTL (its ExpiresAt
//     minus its own now), and the store's clock (Options.Now) must be the
//     engine's, as it is in stratum.
//   - Records without the mark — an owner written by an older stratum, or
//     rewritten by one (it drops the mark) — keep the state-only lease: the
//     owner is live until its ExpiresAt by the reader's clock, as before,
//     so a team mixing versions is judged by the clocks (keep them in sync
//     with NTP until every machine runs this one).
//   - A read of a marked owner costs one more key read (a read-only
//     listing reads them all in one request) and one TimeToLive per etcd
//     lease; a heartbeat costs one KeepAliveOnce per flow it renews.
//   - A runner lease id is used by one process (stratum's are run-<uuid>,
//     one per process). The keys carry no credentials; an etcd user with
//     read/write on the prefix can grant, keep alive and revoke them.
package etcdstore
