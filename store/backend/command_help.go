package backend

// The help of `stratum store` and of the subcommands this package is the
// body of (cobra's Long and Example): info (Describe), check (Check),
// copy (CopyStores) and compact (Compact); and of `stratum gc`, the store's garbage.

// StoreHelp is the long help of `stratum store`.
const StoreHelp = `The store holds every flow, the event log and the result cache: the bbolt file
$STRATUM_HOME/stratum.db, or an etcd cluster when STRATUM_STORE (or store: in config.yaml) is
etcd://HOST:PORT[,HOST:PORT…]/PREFIX. See README, "Team mode".`

// CheckHelp is the long help of `stratum store check`.
const CheckHelp = `Check reads the whole bbolt store file and reports damaged pages (bbolt's own consistency
check, which every process also runs before its first write to a file it has not verified) and,
if the pages are sound, records that cannot be decoded and indexes that disagree with the flows.
Exit status: 0 clean, 1 damaged (or unreadable), 2 usage (an etcd store).`

// CheckExamples are the examples of `stratum store check`'s help.
const CheckExamples = "  stratum store check\n  stratum store check --json"

// InfoHelp is the long help of `stratum store info`.
const InfoHelp = `Info opens the store the settings select (STRATUM_STORE, store: in config.yaml, else
$STRATUM_HOME/stratum.db) and prints the backend, its path or endpoints and prefix, the schema
version, and how many flows (by status), pending gates, events, cache entries and guard records it holds; for
etcd, each member's database (file size, in use, quota), the alarms raised (NOSPACE: writes are
refused) and, when a file holds much free space, the advice to run stratum store compact
--defrag. Credentials are never printed.`

// InfoExamples are the examples of `stratum store info`'s help.
const InfoExamples = "  stratum store info\n  STRATUM_STORE=etcd://127.0.0.1:2379/team stratum store info --json"

// CompactHelp is the long help of `stratum store compact`.
const CompactHelp = `Compact (etcd only) compacts the cluster's history up to the current revision minus --keep
(default 1000): etcd keeps every version of every key until it compacts, and stratum needs none
but the last few (its transactions' snapshots). Compaction is the cluster's, not the prefix's:
it drops the old revisions of every program sharing the cluster. It frees pages inside each
member's database file without shrinking it; --defrag then defragments the members one at a
time (each blocks its clients while it runs, seconds for a few hundred MiB) and, when every
member is below 90 % of its quota, disarms the NOSPACE alarm etcd raised when a member reached
it (until then the cluster refuses every write). Prints the database of each member after it.
Exit status: 0 done, 1 failed, 2 usage (a bbolt file: it reuses the pages gc frees).`

// CompactExamples are the examples of `stratum store compact`'s help.
const CompactExamples = "  stratum store compact\n  stratum store compact --defrag\n  stratum store compact --keep 100000 --json"

// CopyHelp is the long help of `stratum store copy`.
const CopyHelp = `Copy copies every flow (with its summary, times and version), the event log (in order;
the destination numbers events afresh) and the result cache from SRC to DST. Each is a bbolt
file path or etcd://HOST:PORT[,HOST:PORT…]/PREFIX; TLS and credentials come from the same
settings as for every command (STRATUM_ETCD_*, etcd: in config.yaml). A destination that
holds flows or events is refused unless --force: then each flow of SRC is replaced in DST
(its events too), so copying again gives the same result. Stop the writers of SRC first:
flows changed during the copy may be copied as they were before.`

// CopyExamples are the examples of `stratum store copy`'s help.
const CopyExamples = `  stratum store copy --from ~/.stratum/stratum.db --to etcd://10.0.0.5:2379/team
  stratum store copy --from etcd://10.0.0.5:2379/team --to backup.db`

// GCHelp is the long help of `stratum gc`: the store's pruning of finished
// flows (engine.Store's GC, through the Service) and, with --damaged, the
// bbolt file's quarantine (QuarantineDamaged).
const GCHelp = `Gc prunes flows whose status is complete, killed, failed or budget_exhausted and that
have not changed for DURATION (e.g. 720h). Running flows and flows waiting at a gate are
never pruned, nor a finished child flow whose parent (or any ancestor) has not finished.
Prints {"deleted": N}.

--stalled --older-than DURATION prunes nothing: it ends, as stratum kill does, every flow
stalled for at least DURATION (its stratum run or Go program exited and its lease expired that
long ago), recorded as killed by "stratum gc" (channel policy). A flow at an approver: human
gate is not ended by a policy: it is listed in skipped. Prints {"killed": [ids], "skipped":
[{"flow_id", "code", "message"}]}.

--damaged (bbolt file only) moves every flow whose stored state or summary cannot be decoded
into the file's quarantine bucket (raw bytes kept) and removes its index entries and events.
Prints {"quarantined": [{"flow_id", "records", "reason"}]}.`

// GCExamples are the examples of `stratum gc`'s help.
const GCExamples = "  stratum gc --older-than 720h\n  stratum gc --stalled --older-than 24h\n  stratum gc --damaged"
