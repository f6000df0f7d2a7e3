package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// Errors the Store reports; adapters map their own errors onto these.
var (
	// ErrNotFound: no flow (or cache entry) with that id.
	ErrNotFound = errors.New("not found")
	// ErrLocked: the store stayed locked by other processes past the timeout.
	ErrLocked = errors.New("store is locked by another process")
	// ErrConflict: the write lost a race it must not win: Tx.Put found the
	// flow at another version than the one it expected (a *VersionError),
	// or a store gave up on a transaction that kept losing races.
	ErrConflict = errors.New("conflict")
	// ErrDamaged: one flow's stored record (its state or its summary)
	// cannot be decoded, while the rest of the store is readable. Stores
	// return it as a *DamagedError naming the flow.
	ErrDamaged = errors.New("damaged flow record")
	// ErrBudgetExhausted is returned (wrapped) by an executor that refuses
	// to start a call because the remaining budget (req.Budget) does not
	// allow it (exec.go). The runner maps it to the budget_exhausted flow
	// status; it spends no attempt.
	ErrBudgetExhausted = errors.New("budget exhausted")
	// ErrParallelRunHeld is returned by ClaimParallelRun when another live
	// lease runs the step's fan-out (fanout_run.go).
	ErrParallelRunHeld = errors.New("the fan-out is run by another live server")
	// ErrLeaseHeld is returned by Claim and TakeOver when another live
	// lease owns the flow (lease.go).
	ErrLeaseHeld = errors.New("flow is owned by another live lease")
	// ErrNewerStore: a newer stratum migrated the store to a schema this
	// binary does not know, while this process had it open; the store
	// refuses every read and write from here on. Front ends say so and
	// ask for a restart with the newer stratum (an MCP tool answers the
	// store_upgraded error, the TUI says it in its header).
	ErrNewerStore = errors.New("store was written by a newer stratum")
)

// NotStored is the version Tx.Put expects of a flow that must not exist
// yet (a flow the write creates). Stored flows are at version 1 or more.
const NotStored int64 = 0

// VersionError is Tx.Put's refusal of a write that expected the flow at
// another version than the stored one (errors.Is(err, ErrConflict)):
// another writer changed, created or deleted the flow since it was read.
// Stored is NotStored when the flow does not exist.
type VersionError struct {
	FlowID           string
	Expected, Stored int64
}

func (e *VersionError) Error() string {
	version := func(v int64) string {
		if v == NotStored {
			return "not stored"
		}
		return fmt.Sprintf("version %d", v)
	}
	return fmt.Sprintf("flow %s: the write expected it %s, it is %s: %v", e.FlowID, version(e.Expected), version(e.Stored), ErrConflict)
}

// Unwrap exposes ErrConflict.
func (e *VersionError) Unwrap() error { return ErrConflict }

// DamagedError is a flow whose stored state or summary cannot be decoded
// (errors.Is(err, ErrDamaged)). Err is the store's own error (for the bbolt
// file, one wrapping store.ErrCorrupt). The Service skips such flows in
// sweeps and listings and reports each once (Service.OnDamaged).
type DamagedError struct {
	FlowID string
	Err    error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("flow %s: %v: %v", e.FlowID, ErrDamaged, e.Err)
}

// Unwrap exposes ErrDamaged and the store's error.
func (e *DamagedError) Unwrap() []error { return []error{ErrDamaged, e.Err} }

// DamagedFlows returns the *DamagedError values err is made of — one, or
// several joined (errors.Join), possibly wrapped — and ok false when err
// holds anything else (or is nil).
func DamagedFlows(err error) (flows []*DamagedError, ok bool) {
	switch e := err.(type) {
	case nil:
		return nil, false
	case *DamagedError:
		return []*DamagedError{e}, true
	case interface{ Unwrap() []error }:
		for _, sub := range e.Unwrap() {
			d, ok := DamagedFlows(sub)
			if !ok {
				return nil, false
			}
			flows = append(flows, d...)
		}
		return flows, len(flows) > 0
	}
	return DamagedFlows(errors.Unwrap(err))
}

// Store is the persistence the engine needs, defined here by its consumer:
// everything main.go, the TUI and the engine use goes through it, so a new
// backend is one package that passes store/storetest. Every transition is
// computed on a snapshot read in Views and committed in one Update that
// re-checks the versions it read (doc.go, "The Service"), so concurrent
// processes cannot lose each other's updates.
type Store interface {
	// Update runs fn in one write transaction. If fn returns an error nothing
	// is written. Implementations may retry fn when they lose a lock race, so
	// fn must be safe to call more than once.
	Update(ctx context.Context, fn func(tx Tx) error) error
	// View runs fn in one read-only transaction.
	View(ctx context.Context, fn func(tx Tx) error) error
	// Watch delivers, in order, every batch of committed events with a
	// sequence number above after, each event once and none skipped (but
	// those deleted before they were delivered), until ctx ends; then it
	// closes the channel. Commits by other handles and other processes are
	// included. A slow consumer loses nothing: what it has not taken yet is
	// read from the log when it is ready, so batches may merge. Watch fails
	// only when it cannot start (ctx already done).
	Watch(ctx context.Context, after uint64) (<-chan []Event, error)
	// Follows is the rule of the store's sequence numbers: whether no event
	// was committed between the events numbered after and seq (after <
	// seq); false when the store cannot tell. A store that numbers its
	// events consecutively answers seq == after+1; the etcd store numbers an
	// event by its commit's revision, so its numbers leave gaps between
	// commits and it remembers which commit followed which. Watch uses it to
	// tell a publication that follows what it delivered from a gap it must
	// read from the log.
	Follows(after, seq uint64) bool
	// GC deletes the flows PrunableLine allows at now−olderThan (by the
	// store's clock: finished, unchanged since, and no unfinished ancestor),
	// with their events, and returns how many it deleted; every other flow
	// is kept. A flow changed meanwhile by another writer is re-checked
	// before it is deleted. A negative age is an error.
	GC(ctx context.Context, olderThan time.Duration) (int, error)
}

// Tx is the view of the store inside one transaction. States returned by Get
// are private copies: mutate them and Put them back.
//
// A damaged flow record — a state or summary the store holds but cannot
// decode, the rest of the store being readable — is reported as a
// *DamagedError naming the flow (errors.Is ErrDamaged): by Get for the
// state; by List, PendingGates and GatesDue for summaries, which then return the
// summaries they could decode together with an error joining
// (errors.Join) one *DamagedError per flow left out. Every other error
// comes with no result.
type Tx interface {
	// Get returns the flow, or an error wrapping ErrNotFound.
	Get(flowID string) (*state.FlowState, error)
	// Put creates or replaces a flow together with its list summary, which
	// the caller computes (the Service uses Summarize); sum.FlowID and
	// sum.Status must be st's, else Put fails. It is a conditional put: it
	// writes only if the flow is stored at version expect — NotStored: it
	// must not exist — as this transaction sees it (a flow put earlier in
	// the same transaction is at the version that Put gave it), else it
	// fails with a *VersionError (errors.Is ErrConflict) and writes
	// nothing. The comparison and the write are atomic against every
	// other writer, in this process or another. st.Version must be above
	// expect: versions only grow.
	//
	// Put stores st as given. The stamps (UpdatedAt, CreatedAt, Version)
	// are the writer's, set before Put (FlowState.Stamp; the Service
	// stamps every flow it writes once, before its write transaction);
	// stores set none of them, only SchemaVersion when it is zero. The
	// summary is stored with st's three stamps and every other field
	// exactly as given. The listing and pending-gate indexes follow the
	// stored summary (PendingGates: status awaiting_gate and Gate set).
	//
	// The recorded values st holds (a step's output, a fan-out task's
	// record in ParallelTasks, a trace entry) are handed over: the caller
	// never writes into one of them after Put, it replaces it (the
	// engine's rule, engine/doc.go; checked by its tests and by the
	// stratum_owncheck build). So a store may keep a value it was handed
	// and, when a later Put hands it the very same value (the same map or
	// array: state.SameValue), take it as unchanged without comparing
	// (the etcd store does for task records). What Get returns is a copy
	// the caller owns and may change.
	//
	// A version belongs to a stored record: a flow deleted and created
	// again under the same id starts over at version 1, so a writer still
	// holding a version of the deleted one may match the new one. The
	// engine never reuses a flow id (random UUIDs).
	Put(st *state.FlowState, sum state.FlowSummary, expect int64) error
	// Delete removes a flow and its events.
	Delete(flowID string) error
	// List returns summaries of flows matching the filter in the listing
	// order: newest CreatedAt first, ties by FlowID descending (byte
	// order). The order never changes as flows progress, so f.After pages
	// through it.
	List(f ListFilter) ([]state.FlowSummary, error)
	// Count returns how many flows List(f) returns without f.Limit (by
	// status, after a cursor), from the listing indexes: no summary is
	// decoded, and a damaged one is counted.
	Count(f ListFilter) (int, error)
	// PendingGates returns every flow waiting at a gate.
	PendingGates() ([]state.FlowSummary, error)
	// GatesDue returns the flows waiting at a gate whose deadline is at or
	// before now (in no particular order), and the earliest deadline of a
	// pending gate after now (nil: none). A gate without a deadline is in
	// neither. A damaged summary is reported as PendingGates reports it
	// (the others returned, with one *DamagedError per flow left out). It
	// is what every opening sweep of expired deadlines reads, so a store
	// should answer it without decoding the summaries of gates not yet due
	// (the bbolt store keeps a deadline index); state.GatesDue derives it
	// from PendingGates for one that cannot.
	GatesDue(now time.Time) (due []state.FlowSummary, next *time.Time, err error)
	// Append adds events to the event log. It stamps each event, in place
	// (the caller's slice holds the stored events afterwards), with the
	// next sequence number — strictly increasing across the whole log and
	// never reused, even after deletions — and, when Time is zero, the
	// store's clock.
	Append(events ...Event) error
	// Events returns up to limit events with a sequence number above after,
	// in sequence order (limit <= 0: no limit). A reader that keeps the last
	// Seq it saw and passes it back misses nothing but what was deleted.
	Events(after uint64, limit int) ([]Event, error)
	// FlowEvents returns every event of one flow in sequence order (none for
	// an unknown flow).
	FlowEvents(flowID string) ([]Event, error)
	// LastSeq returns the last sequence number ever assigned (0 for an empty
	// log); deleting events never lowers it.
	LastSeq() (uint64, error)
	// CacheGet / CachePut / CacheDelete are the persistent result cache
	// (cache: global): opaque values by key. Deleting a missing key is no
	// error. The engine bounds the cache (CacheRead, CacheWrite); a store
	// keeps what it is given.
	CacheGet(key string) ([]byte, bool, error)
	CachePut(key string, value []byte) error
	CacheDelete(key string) error
	// Keyed records — engine/guard's resources and engine/goal's goals —
	// by key (a digest; no NUL or slash):
	// GuardGet returns the registration (ok false: none) and GuardPut
	// creates or replaces it; GuardEntries returns the resource's ledger,
	// its entries in order; GuardAppend adds entry number seq (0-based),
	// which must be the next one: when seq is not the ledger's length as
	// this transaction sees it, it fails with ErrConflict and writes
	// nothing. Entries are never changed or removed. Values are opaque.
	GuardGet(key string) ([]byte, bool, error)
	GuardPut(key string, reg []byte) error
	GuardEntries(key string) ([][]byte, error)
	GuardAppend(key string, seq int, entry []byte) error
	// GuardKeys returns the keys that have a registration, in key order.
	GuardKeys() ([]string, error)
}

// ListFilter selects flows for Tx.List. Zero values select everything.
type ListFilter struct {
	Status state.FlowStatus // exact status
	Limit  int
	// After resumes a listing: only the flows that come after this
	// position in the listing order (the zero state.ListCursor: from the
	// first). Pass the Cursor of the last summary of a page to read the next one;
	// flows created meanwhile (newer, so before it) do not shift the pages.
	After state.ListCursor
}

// maxFlowDepth bounds the walks up and down a flow's line of parents and
// children (a corrupt store could hold a cycle).
const maxFlowDepth = 64

// PrunableLine is the GC rule every store applies: the flow summarised by
// sum is Prunable at cutoff and none of its ancestors — parent_flow_id,
// followed up through lookup — is unfinished. A finished child of a parent
// still running (or waiting at a gate) is kept, or the parent would run the
// child's work again on resume. The walk stops at an ancestor lookup does
// not find (nil, or an error wrapping ErrNotFound: a parent already pruned
// or deleted); any other lookup error is returned.
func PrunableLine(sum *state.FlowSummary, cutoff time.Time, lookup func(flowID string) (*state.FlowSummary, error)) (bool, error) {
	if sum == nil || !sum.Prunable(cutoff) {
		return false, nil
	}
	seen := map[string]bool{sum.FlowID: true}
	for parent := sum.ParentFlowID; parent != "" && !seen[parent] && len(seen) <= maxFlowDepth; {
		seen[parent] = true
		p, err := lookup(parent)
		if errors.Is(err, ErrNotFound) || err == nil && p == nil {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if !p.Status.Finished() {
			return false, nil
		}
		parent = p.ParentFlowID
	}
	return true, nil
}

// EventType names what happened.
type EventType string

const (
	EventFlowCreated     EventType = "flow_created"
	EventStepDispatched  EventType = "step_dispatched"
	EventStepDone        EventType = "step_done"
	EventStepFailed      EventType = "step_failed" // a failed attempt (ensure/schema/guardrail), or retries exhausted
	EventStepSkipped     EventType = "step_skipped"
	EventGateOpened      EventType = "gate_opened"
	EventGateResolved    EventType = "gate_resolved"
	EventCheckpoint      EventType = "checkpoint" // commit or revert
	EventIterationReport EventType = "iteration_report"
	EventFlowFinished    EventType = "flow_finished"
	EventTrace           EventType = "trace" // an in-process trace record (attempt, cost)
	// EventParallelTask is a task of a parallel_dispatch step changing
	// state (ours; fanout.go). Its payload is ParallelTask.
	EventParallelTask EventType = "parallel_task"
	// EventJudgeVerdict is a judge turn recorded on a judge step
	// (Service.RecordJudge; ours). Its payload is JudgeVerdict: the
	// turn's verdict with each predicate's evidence.
	EventJudgeVerdict EventType = "judge_verdict"
)

// Event is one entry of the append-only event log. Seq is assigned by the
// store and is strictly increasing across the whole log.
type Event struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	FlowID string    `json:"flow_id"`
	Type   EventType `json:"type"`
	StepID string    `json:"step_id,omitempty"`
	Data   Payload   `json:"data,omitempty"` // nil, or the payload of Type (payload.go)
}
