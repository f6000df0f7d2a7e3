package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// Nothing expensive under the lock (DESIGN.md §5). A transition is computed
// on a snapshot, outside any write transaction: the flows it reads are read
// in short Store.Views (each a private copy, its Version noted), the spec is
// parsed (through the cache) and every expression is evaluated without the
// store's lock. The write transaction then re-reads each flow the
// transition read and applies the transition's result only if none
// changed; otherwise the transition is computed again from a fresh
// snapshot, at most maxTransitionAttempts times. Transitions are pure
// functions of what they read, so the result is the one the transition
// would have computed inside the transaction.

// maxTransitionAttempts bounds how often a transition is computed again
// because another writer changed a flow it read before it could commit.
const maxTransitionAttempts = 5

// snapshot is what one attempt of a transition read: the ChildLoader of its
// transitionEnv, and the main flow's read too. Each Get is one short
// Store.View, or a copy of the state this Service committed last (own,
// owncommits.go).
type snapshot struct {
	ctx   context.Context
	store Store
	// own, when set, holds the states this Service committed last; fromOwn:
	// a Get answered from it (no read confirmed that state).
	own     *ownCommits
	fromOwn bool
	// ownCreated is the creation time of each flow a Get answered from
	// own; with bySummary (the audit's snapshots) the check of such a flow
	// reads its summary only (storedAt), otherwise its state, which also
	// finds a record damaged since.
	ownCreated map[string]time.Time
	bySummary  bool
	// fresh are states a check of the previous attempt read (stillCurrent):
	// a Get takes its flow from there, once, instead of reading it again.
	fresh map[string]*state.FlowState
	// read is the Version of every flow read (NotStored: not found).
	read map[string]int64
	// unstable: a flow read twice had changed in between.
	unstable bool
	// err is the first read that failed for another reason than
	// ErrNotFound: the transition cannot be trusted and is not committed.
	err error
}

var _ childLoader = (*snapshot)(nil)

func newSnapshot(ctx context.Context, st Store) *snapshot {
	return &snapshot{ctx: ctx, store: st, read: map[string]int64{}}
}

// Get reads a flow in its own View, or copies the state this Service
// committed last (sn.own), and notes its version.
func (sn *snapshot) Get(flowID string) (*state.FlowState, error) {
	if st := sn.fresh[flowID]; st != nil {
		delete(sn.fresh, flowID)
		sn.note(flowID, st.Version)
		return st, nil
	}
	if st := sn.own.get(flowID, !sn.bySummary); st != nil {
		sn.fromOwn = true
		if sn.ownCreated == nil {
			sn.ownCreated = map[string]time.Time{}
		}
		sn.ownCreated[flowID] = st.CreatedAt
		sn.note(flowID, st.Version)
		return st, nil
	}
	var st *state.FlowState
	err := sn.store.View(sn.ctx, func(tx Tx) (err error) {
		st, err = tx.Get(flowID)
		return err
	})
	switch {
	case errors.Is(err, ErrNotFound):
		sn.note(flowID, NotStored)
		return nil, err
	case err != nil:
		if sn.err == nil {
			sn.err = err
		}
		return nil, err
	}
	sn.note(flowID, st.Version)
	return st, nil
}

func (sn *snapshot) note(flowID string, v int64) {
	if old, ok := sn.read[flowID]; ok && old != v {
		sn.unstable = true
	}
	sn.read[flowID] = v
}

// current reports whether every flow the snapshot read is, in tx, as it was
// read; found receives the states it read. With bySummary, a flow copied
// from this Service's own commit is checked by its summary (storedAt) and
// read whole only if that finds it changed.
func (sn *snapshot) current(tx Tx, found map[string]*state.FlowState) (bool, error) {
	for id, v := range sn.read {
		if created, ok := sn.ownCreated[id]; ok && sn.bySummary && v != NotStored {
			if same, err := storedAt(tx, id, created, v); err == nil && same {
				continue
			}
		}
		st, err := tx.Get(id)
		if errors.Is(err, ErrNotFound) {
			if v != NotStored {
				return false, nil
			}
			continue
		}
		if err != nil {
			return false, err
		}
		found[id] = st
		if st.Version != v {
			return false, nil
		}
	}
	return true, nil
}

// hasVersion reports whether flow id is at version v in tx (NotStored:
// not there).
func hasVersion(tx Tx, id string, v int64) (bool, error) {
	st, err := tx.Get(id)
	if errors.Is(err, ErrNotFound) {
		return v == NotStored, nil
	}
	if err != nil {
		return false, err
	}
	return st.Version == v, nil
}

// storedAt reports whether flow id, created at created, is stored at
// version v, reading its summary alone (no state is decoded): the listing
// after a cursor at its creation time and an id just above its own (id
// followed by a NUL byte, which no flow id is) starts with the flow itself
// when it is stored. Versions only grow (Tx.Put), so the same flow at the
// same version is the same state.
func storedAt(tx Tx, id string, created time.Time, v int64) (bool, error) {
	sums, err := tx.List(ListFilter{Limit: 1, After: state.ListCursor{CreatedAt: created, FlowID: id + "\x00"}})
	if err != nil {
		return false, err
	}
	return len(sums) == 1 && sums[0].FlowID == id && sums[0].CreatedAt.Equal(created) && sums[0].Version == v, nil
}

// errStale aborts a write transaction whose snapshot is out of date.
var errStale = errors.New("stale snapshot")

// conflictError is the error of a transition that found its flows changed
// by other writers at each of its attempts (over the time given, when the
// transition retried with patience: retry.go).
func conflictError(what string, attempts int, over time.Duration) error {
	during := ""
	if over >= time.Second {
		during = " over " + over.Round(time.Second).String()
	}
	return fmt.Errorf("%s: the flow was changed by another writer before each of %d attempts%s could be written; nothing was written, try again: %w",
		what, attempts, during, ErrConflict)
}

// cancelledError is the error of a transition whose request ended (SIGINT,
// SIGTERM, a client's cancellation) before it was written.
func cancelledError(what string, ctx context.Context) error {
	return fmt.Errorf("%s: cancelled before it was written, nothing changed: %w", what, context.Cause(ctx))
}

// write is one flow state a transition writes, stamped, with its summary
// (both computed outside the write transaction) and the version Tx.Put must
// find stored: the one the transition read (NotStored for a flow it
// creates).
type write struct {
	st     *state.FlowState
	sum    state.FlowSummary
	expect int64
}

// put writes w if the flow is still at the version the transition read,
// else fails with errStale (and the transaction writes nothing). The
// conditional Tx.Put compares the stored version, so the flow is not
// decoded again under the lock.
func (w write) put(tx Tx) error {
	err := tx.Put(w.st, w.sum, w.expect)
	if errors.Is(err, ErrConflict) {
		return errStale
	}
	return err
}

// computed is what one attempt of a transition produced.
type computed struct {
	st  *state.FlowState // the flow to write (nil: none)
	sp  *specs.Spec      // the spec the transition ran on (nil: none)
	res transitionResult
}

// optimistic runs a transition: compute on a snapshot outside any
// transaction (a panic is the internal_error envelope), then, unless it
// changed nothing, one Store.Update that checks the snapshot is current
// and commits the result; on a stale snapshot everything is done again.
// what names the transition in errors. A *Error from compute (or the
// result's Err) is the answer; any other error is a store failure.
func (s *Service) optimistic(ctx context.Context, what string, compute func(sn *snapshot, now time.Time) (computed, error)) (Outcome, error) {
	return s.optimisticOn(ctx, what, ownChecked, compute)
}

// ownUse says whether a snapshot may start from the states this Service
// committed last (owncommits.go), and how an answer computed on one is
// checked before it is given.
type ownUse int

const (
	ownChecked   ownUse = iota // yes, checked by reading the state (stillCurrent)
	ownBySummary               // yes, checked by the flow's summary (storedAt): the audit
	ownNone                    // no: from the store
)

// optimisticOn is optimistic; own says whether the snapshot may start from
// the states this Service committed last instead of reading them. An answer
// that writes nothing computed on such a state is computed again from a
// fresh snapshot unless the check finds it current.
func (s *Service) optimisticOn(ctx context.Context, what string, own ownUse, compute func(sn *snapshot, now time.Time) (computed, error)) (Outcome, error) {
	return s.optimisticWith(ctx, what, own, retryAtOnce, compute)
}

// optimisticWith is optimisticOn with a retry policy (retry.go): how a
// transition that keeps finding its flows changed is tried again.
func (s *Service) optimisticWith(ctx context.Context, what string, own ownUse, retry retryPolicy, compute func(sn *snapshot, now time.Time) (computed, error)) (Outcome, error) {
	var fresh map[string]*state.FlowState // read by the last attempt's check
	start := time.Now()
	attempt := 0
	for ; attempt < maxTransitionAttempts || retry.again(ctx, attempt, start); attempt++ {
		sn := newSnapshot(ctx, s.Store)
		if own != ownNone {
			sn.own = &s.own
			sn.bySummary = own == ownBySummary
		}
		sn.fresh, fresh = fresh, nil
		c, err := s.computeSafely(sn, compute)
		if sn.err != nil {
			return nil, sn.err
		}
		if ctx.Err() != nil {
			return nil, cancelledError(what, ctx)
		}
		if sn.unstable {
			continue
		}
		if err != nil && AsError(err) == nil {
			return nil, err
		}
		if err != nil || c.res.Unchanged {
			// An answer that writes nothing. One flow read is one
			// consistent read; several (a flow and its children) are one
			// only if none changed meanwhile, and a copy of this Service's
			// own commit (sn.fromOwn) only if no other writer changed it
			// since: otherwise it is computed again from the store (not
			// counted as an attempt: own is off from then on).
			if len(sn.read) > 1 || sn.fromOwn {
				var ok bool
				var verr error
				ok, fresh, verr = s.stillCurrent(ctx, sn)
				if verr != nil {
					return nil, verr
				}
				if !ok && sn.fromOwn {
					s.own.forget(sn.read)
					own = ownNone
					attempt--
				}
				if !ok {
					continue
				}
			}
			if err != nil {
				return nil, err
			}
			if c.res.Err != nil {
				return nil, c.res.Err
			}
			return c.res.Outcome, nil
		}
		out, err := s.commit(ctx, sn, c)
		if err != nil && AsError(err) == nil {
			// Stale, or a store failure: what this Service committed last
			// may no longer be the stored state.
			s.own.forget(sn.read)
		}
		if errors.Is(err, errStale) {
			continue
		}
		return out, err
	}
	if ctx.Err() != nil {
		return nil, cancelledError(what, ctx)
	}
	return nil, conflictError(what, attempt, time.Since(start))
}

// computeSafely runs compute; a panic is the internal_error envelope.
func (s *Service) computeSafely(sn *snapshot, compute func(sn *snapshot, now time.Time) (computed, error)) (c computed, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = computed{}, internalError()
		}
	}()
	return compute(sn, s.now())
}

// stillCurrent checks, in one View, that nothing sn read has changed, and
// returns the states it read (for the next attempt, when something did).
func (s *Service) stillCurrent(ctx context.Context, sn *snapshot) (bool, map[string]*state.FlowState, error) {
	var ok bool
	var found map[string]*state.FlowState
	err := s.Store.View(ctx, func(tx Tx) (err error) {
		found = map[string]*state.FlowState{}
		ok, err = sn.current(tx, found)
		return err
	})
	return ok, found, err
}

// commit writes a computed transition in one Store.Update if every flow
// the snapshot read is unchanged and every flow it creates is still new
// (errStale otherwise), then publishes its events. Stamps and summaries are
// computed before the transaction (stampWrites); inside it there are only
// the version checks and the writes (applyCommit).
func (s *Service) commit(ctx context.Context, sn *snapshot, c computed) (Outcome, error) {
	res := c.res
	// The cache entries are written at the time the flows are stamped with
	// (one read of the clock per commit: a fake clock that ticks per read
	// gives the same stamps as before the cache kept times).
	writes, written, nPut, now := s.stampWrites(sn, c)
	var internal bool
	err := s.Store.Update(ctx, func(tx Tx) (err error) {
		defer func() {
			if r := recover(); r != nil {
				internal = true
				err = errNoWrite
			}
		}()
		return applyCommit(tx, sn, &res, writes, written, nPut, now)
	})
	if internal {
		return nil, internalError()
	}
	if err != nil {
		return nil, err
	}
	states := make([]*state.FlowState, len(writes))
	for i, w := range writes {
		states[i] = w.st
	}
	s.own.put(states, res.Delete)
	s.events.publish(res.Events) // stamped with their sequence numbers by Append
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Outcome, nil
}

// stampWrites stamps the flows a transition writes (its other flows, Put,
// then its flow), once per flow, expecting the version the snapshot read,
// with their summaries, at now. written indexes writes by flow id; the
// first nPut are Put's.
func (s *Service) stampWrites(sn *snapshot, c computed) (writes []write, written map[string]int, nPut int, now time.Time) {
	now = s.now()
	written = map[string]int{}
	add := func(st *state.FlowState) {
		// Stamped once per flow and transaction, expecting the version read.
		expect := st.Version
		if v, ok := sn.read[st.FlowID]; ok {
			expect = v
		}
		if i, ok := written[st.FlowID]; ok {
			// Written twice by one transition: one write, of the last state.
			expect = writes[i].expect
			st.Version = expect
			st.Stamp(now)
			writes[i].st, writes[i].sum = st, s.summary(st, c.sp)
			return
		}
		st.Version = expect
		st.Stamp(now)
		written[st.FlowID] = len(writes)
		writes = append(writes, write{st: st, sum: s.summary(st, c.sp), expect: expect})
	}
	for _, p := range c.res.Put {
		add(p)
	}
	nPut = len(writes)
	if c.st != nil {
		add(c.st)
	}
	return writes, written, nPut, now
}

// applyCommit is commit's write transaction: the flows read and not
// written re-checked (those written are checked by their conditional Put
// without decoding them again), then the writes as the transition left
// them — other flows, deletions, the flow — its events and cache entries
// (written at now, ResultCache.Write).
func applyCommit(tx Tx, sn *snapshot, res *transitionResult, writes []write, written map[string]int, nPut int, now time.Time) error {
	for id, v := range sn.read {
		if _, ok := written[id]; ok {
			continue
		}
		if ok, err := hasVersion(tx, id, v); err != nil || !ok {
			if err == nil {
				err = errStale
			}
			return err
		}
	}
	put := func(ws []write) error {
		for _, w := range ws {
			if err := w.put(tx); err != nil {
				return err
			}
		}
		return nil
	}
	if err := put(writes[:nPut]); err != nil {
		return err
	}
	for _, id := range res.Delete {
		if err := tx.Delete(id); err != nil {
			return err
		}
	}
	if err := put(writes[nPut:]); err != nil {
		return err
	}
	if len(res.Events) > 0 {
		if err := tx.Append(res.Events...); err != nil {
			return err
		}
	}
	for _, c := range res.Cache {
		if err := ResultCache.Write(tx, c.Key, c.Value, now); err != nil {
			return err
		}
	}
	return nil
}
