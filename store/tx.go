package store

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// stateRecordVersion is stamped into FlowState.SchemaVersion when a caller
// leaves it zero.
const stateRecordVersion = 1

// tx implements engine.Tx over one bbolt transaction. Every value it returns
// is decoded from a copy, never from the memory-mapped file.
type tx struct {
	s    *Store
	btx  *bolt.Tx
	done bool
	// wrote is set by every successful write; an Update that wrote nothing
	// is rolled back instead of committed, saving bbolt's two fsyncs.
	wrote bool
	// specs is the spec reference each flow read (Get) or written (Put) in
	// this transaction has in the file, so Put knows without decoding the
	// stored state again whether the spec changed (specs.go).
	specs map[string]specRef
	// logs are the flowlog entries read or written in this transaction,
	// for the Store's cache once it has committed (flowlog.go).
	logs map[string]*cachedLog
	// appended are the events Append stamped, for this process's watchers
	// once the transaction commits (watch_own.go).
	appended []engine.Event
}

var _ engine.Tx = (*tx)(nil)

// bucket returns a top-level bucket, or a corrupt error if it is missing.
func (t *tx) bucket(name []byte) (*bolt.Bucket, error) {
	b := t.btx.Bucket(name)
	if b == nil {
		return nil, corruptError(t.s.path, fmt.Sprintf("bucket %q is missing", name), nil)
	}
	return b, nil
}

// do runs op under the fault guard after checking the transaction is live
// (and writable, when write is set).
func (t *tx) do(write bool, op func() error) error {
	if t.done {
		return ErrTxDone
	}
	if write && !t.btx.Writable() {
		return ErrReadOnlyTx
	}
	err := t.s.guard(op)
	if write && err == nil {
		t.wrote = true
	}
	return mapTxErr(err)
}

func (t *tx) decodeErr(what string, err error) error {
	return corruptError(t.s.path, "cannot decode "+what, err)
}

// Get returns a private copy of the flow, or an error wrapping engine.ErrNotFound.
func (t *tx) Get(flowID string) (*state.FlowState, error) {
	var st *state.FlowState
	err := t.do(false, func() error {
		flows, err := t.bucket(bucketFlows)
		if err != nil {
			return err
		}
		v := flows.Get([]byte(flowID))
		if v == nil {
			return fmt.Errorf("flow %q: %w", flowID, engine.ErrNotFound)
		}
		st = new(state.FlowState)
		if err := unmarshalJSON(bytes.Clone(v), st); err != nil {
			return damagedRecord(t.s.path, flowID, "state", err)
		}
		if err := t.readLog(st); err != nil {
			return err
		}
		if err := t.readSteps(st); err != nil {
			return err
		}
		stored := isSpecRef(st.RawSpec)
		r, err := t.resolveSpec(st)
		if err != nil {
			return err
		}
		if !stored {
			r = specRef{} // inline: no reference is counted for it
		}
		t.rememberSpec(flowID, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// rememberSpec records the spec reference flowID has in the file.
func (t *tx) rememberSpec(flowID string, r specRef) {
	if t.specs == nil {
		t.specs = map[string]specRef{}
	}
	t.specs[flowID] = r
}

// getSummary reads the stored summary of flowID (nil if absent).
func (t *tx) getSummary(sums *bolt.Bucket, flowID []byte) (*state.FlowSummary, error) {
	v := sums.Get(flowID)
	if v == nil {
		return nil, nil
	}
	sum, err := decodeSummary(v)
	if err != nil {
		return nil, damagedRecord(t.s.path, string(flowID), "summary", err)
	}
	return sum, nil
}

// Put creates or replaces the flow with its summary if it is stored at
// version expect (engine.NotStored: absent), else it fails with an
// *engine.VersionError and writes nothing; bbolt's one writer at a time
// makes the comparison and the write atomic. The stored version is read
// from the flow's summary, which Put reads anyway to move its index
// entries, so the state is not decoded. st is stored as given (its stamps
// are the writer's; a zero SchemaVersion becomes the current record
// version), the summary with st's CreatedAt, UpdatedAt and Version and
// otherwise as given (its FlowID and Status must be st's). The summary and
// the indexes (newest-first, by status, pending gates) are updated in the
// same transaction.
func (t *tx) Put(st *state.FlowState, sum state.FlowSummary, expect int64) error {
	if st == nil {
		return fmt.Errorf("store: %w: nil flow state", ErrInvalid)
	}
	if err := validFlowID(st.FlowID); err != nil {
		return err
	}
	if bytes.IndexByte([]byte(st.Status), 0) >= 0 {
		return fmt.Errorf("store: %w: status contains a NUL byte", ErrInvalid)
	}
	if sum.FlowID != st.FlowID || sum.Status != st.Status {
		return fmt.Errorf("store: %w: flow %q put with the summary of %q (status %q, the state's %q)",
			ErrInvalid, st.FlowID, sum.FlowID, sum.Status, st.Status)
	}
	if expect < engine.NotStored || st.Version <= expect {
		return fmt.Errorf("store: %w: flow %q put at version %d over version %d: a write moves the version on (state.FlowState.Stamp)",
			ErrInvalid, st.FlowID, st.Version, expect)
	}
	if t.done {
		return ErrTxDone
	}
	if !t.btx.Writable() {
		return ErrReadOnlyTx
	}
	id := []byte(st.FlowID)
	var old *state.FlowSummary
	var split bool // step outputs and attempts kept one key per step (flowsteps.go)
	if err := t.do(false, func() error {
		sums, err := t.bucket(bucketSummaries)
		if err != nil {
			return err
		}
		if old, err = t.getSummary(sums, id); err != nil {
			return err
		}
		split, err = t.splitSteps(st)
		return err
	}); err != nil {
		return err
	}
	at := engine.NotStored
	if old != nil {
		at = old.Version
	}
	if at != expect {
		return &engine.VersionError{FlowID: st.FlowID, Expected: expect, Stored: at}
	}

	prevRecord := st.SchemaVersion
	if st.SchemaVersion == 0 {
		st.SchemaVersion = stateRecordVersion
	}
	known, haveKnown := t.specs[st.FlowID]
	ref := t.s.specHashes.refOf(st.RawSpec, known)
	stored := *st // shallow: RawSpec, Records, Trace, StepOutputs and Attempts differ
	stored.RawSpec = ref.String()
	stored.Records, stored.Trace = nil, nil // in bucket flowlog (flowlog.go)
	if split {
		stored.StepOutputs, stored.Attempts = nil, nil
	}
	data, err := marshalJSON(&stored)
	if err != nil {
		st.SchemaVersion = prevRecord
		return fmt.Errorf("store: encode flow %s: %w", st.FlowID, err)
	}
	sum.CreatedAt, sum.UpdatedAt, sum.Version = st.CreatedAt, st.UpdatedAt, st.Version
	sumData, err := encodeSummary(&sum, t.s.schema.summaryCodec())
	if err != nil {
		return fmt.Errorf("store: encode summary of flow %s: %w", st.FlowID, err)
	}

	return t.do(true, func() error {
		flows, err := t.bucket(bucketFlows)
		if err != nil {
			return err
		}
		sums, err := t.bucket(bucketSummaries)
		if err != nil {
			return err
		}
		if !haveKnown {
			// From the flow's log meta entry, else (a state stored
			// before it had one) from the state itself.
			m, ok, err := t.storedLogMeta(st.FlowID)
			switch {
			case err != nil:
				return err
			case ok:
				known = m.specRef()
			default:
				if v := flows.Get(id); v != nil {
					if known, err = t.storedSpecRef(st.FlowID, v); err != nil {
						return err
					}
				}
			}
		}
		if known.ok != ref.ok || known.hash != ref.hash {
			specs, err := t.bucket(bucketSpecs)
			if err != nil {
				return err
			}
			if err := adjustSpec(specs, ref, 1); err != nil {
				return err
			}
			if err := adjustSpec(specs, known, -1); err != nil {
				return err
			}
		}
		if err := flows.Put(id, data); err != nil {
			return err
		}
		if err := t.writeLog(st, ref); err != nil {
			return err
		}
		if split {
			if err := t.writeSteps(st); err != nil {
				return err
			}
		}
		t.rememberSpec(st.FlowID, ref)
		if err := sums.Put(id, sumData); err != nil {
			return err
		}
		return t.reindex(old, &sum)
	})
}

// reindex moves the secondary-index entries of a flow from its old summary
// (nil for a new flow) to sum. The entries are keys only, so an entry whose
// key is the same before and after is left alone: a transition that changes
// neither the status nor whether the flow awaits a gate (most of them)
// touches no index page, and one that does rewrites only the indexes whose
// key changed (a completion: by_status and gates, not by_created).
func (t *tx) reindex(old, sum *state.FlowSummary) error {
	var before [3]indexEntry
	if old != nil {
		before = indexEntries(old)
	}
	for i, e := range indexEntries(sum) {
		was := before[i]
		if old != nil && was.on == e.on && bytes.Equal(was.key, e.key) {
			continue
		}
		if old != nil { // even an entry that should be off: deleting an absent key dirties no page
			b, err := t.bucket(was.bucket)
			if err != nil {
				return err
			}
			if err := b.Delete(was.key); err != nil {
				return err
			}
		}
		if e.on {
			b, err := t.bucket(e.bucket)
			if err != nil {
				return err
			}
			if err := b.Put(e.key, []byte{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// indexEntry is one secondary-index entry of a summary: its key in bucket,
// present only when on.
type indexEntry struct {
	bucket []byte
	key    []byte
	on     bool
}

// indexEntries are the secondary-index entries of sum, one per index
// bucket, in the same order for every summary.
func indexEntries(sum *state.FlowSummary) [3]indexEntry {
	ref := indexRef{id: sum.FlowID, status: sum.Status, created: sum.CreatedAt}
	return [3]indexEntry{
		{bucketByCreated, createdKey(ref), true},
		{bucketByStatus, statusKey(ref), true},
		{bucketGates, []byte(sum.FlowID), pendingGate(sum)},
	}
}

// index adds the secondary-index entries of sum. They are keys only (empty
// values): List and PendingGates read the summaries from bucket summaries,
// so a transition rewrites one copy of the summary, not four.
func (t *tx) index(sum *state.FlowSummary) error { return t.reindex(nil, sum) }

// unindex removes the secondary-index entries of sum (all of them, whether
// on or not: a damaged or older file may hold one that should not be there).
func (t *tx) unindex(sum *state.FlowSummary) error {
	for _, e := range indexEntries(sum) {
		b, err := t.bucket(e.bucket)
		if err != nil {
			return err
		}
		if err := b.Delete(e.key); err != nil {
			return err
		}
	}
	return nil
}

func pendingGate(sum *state.FlowSummary) bool {
	return sum.Status == state.StatusAwaitingGate && sum.Gate != nil
}

// Delete removes the flow, its summary, its index entries and all its
// events. Deleting a flow that does not exist is not an error.
func (t *tx) Delete(flowID string) error {
	if err := validFlowID(flowID); err != nil {
		return err
	}
	return t.do(true, func() error { return t.deleteFlow(flowID) })
}

func (t *tx) deleteFlow(flowID string) error {
	flows, err := t.bucket(bucketFlows)
	if err != nil {
		return err
	}
	sums, err := t.bucket(bucketSummaries)
	if err != nil {
		return err
	}
	id := []byte(flowID)
	old, err := t.getSummary(sums, id)
	if err != nil {
		return err
	}
	if old != nil {
		if err := t.unindex(old); err != nil {
			return err
		}
	}
	ref, haveRef := t.specs[flowID]
	if v := flows.Get(id); v != nil && !haveRef {
		if ref, err = t.storedSpecRef(flowID, v); err != nil {
			return err
		}
	}
	specs, err := t.bucket(bucketSpecs)
	if err != nil {
		return err
	}
	if err := adjustSpec(specs, ref, -1); err != nil {
		return err
	}
	delete(t.specs, flowID)
	if err := flows.Delete(id); err != nil {
		return err
	}
	if err := sums.Delete(id); err != nil {
		return err
	}
	if err := t.deleteLog(flowID); err != nil {
		return err
	}
	t.note(flowID, nil)
	return t.deleteEvents(flowID)
}

// deleteEvents removes every event of flowID and its index entries.
func (t *tx) deleteEvents(flowID string) error {
	events, idx, err := t.eventBuckets()
	if err != nil {
		return err
	}
	prefix := flowEventPrefix(flowID)
	var keys [][]byte
	c := idx.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	// Collected first: deleting while a cursor iterates can skip keys.
	for _, k := range keys {
		if err := events.Delete(k[len(prefix):]); err != nil {
			return err
		}
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// List returns the summaries of flows matching f, newest (CreatedAt) first,
// ties broken by flow id descending; rows do not move as flows progress. It
// walks the keys of the newest-first or the by-status index backwards
// (listingKeys) and decodes the summary of each flow it returns from
// bucket summaries.
func (t *tx) List(f engine.ListFilter) ([]state.FlowSummary, error) {
	var out []state.FlowSummary
	err := t.do(false, func() error {
		sums, err := t.bucket(bucketSummaries)
		if err != nil {
			return err
		}
		var ids [][]byte
		if f.Limit > 0 {
			ids = make([][]byte, 0, min(f.Limit, 4096)) // a page: sized once
		}
		err = t.listingKeys(f, func(id []byte) bool {
			ids = append(ids, id)
			return f.Limit <= 0 || len(ids) < f.Limit
		})
		if err != nil {
			return err
		}
		out, err = t.summariesOf(sums, ids)
		return err
	})
	if _, damaged := engine.DamagedFlows(err); err != nil && !damaged {
		return nil, err
	}
	return out, err
}

// Count is the number of flows List(f) returns without f.Limit: the index
// keys it walks, with no summary read.
func (t *tx) Count(f engine.ListFilter) (int, error) {
	n := 0
	err := t.do(false, func() error {
		return t.listingKeys(f, func([]byte) bool { n++; return true })
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// listingKeys calls fn with the flow id of each index key f selects, in
// the listing order, until fn returns false: the keys of the newest-first
// index (or, with f.Status, the by-status index under the status's
// prefix) walked backwards, from the last key or from the one before
// f.After's. The ids point into the mapping: valid within the transaction.
func (t *tx) listingKeys(f engine.ListFilter, fn func(id []byte) bool) error {
	var (
		idx    *bolt.Bucket
		prefix []byte
		err    error
	)
	if f.Status != "" {
		if idx, err = t.bucket(bucketByStatus); err != nil {
			return err
		}
		prefix = statusPrefix(f.Status)
	} else if idx, err = t.bucket(bucketByCreated); err != nil {
		return err
	}
	c := idx.Cursor()
	last := func() (k, v []byte) {
		// The last key below end: seek to it, step back.
		var end []byte
		switch {
		case !f.After.IsZero():
			// f.After's key (with the prefix): the keys below it follow it.
			end = append(bytes.Clone(prefix), createdKey(indexRef{id: f.After.FlowID, created: f.After.CreatedAt})...)
		case prefix != nil:
			// Past the last key with the prefix.
			end = append(bytes.Clone(prefix[:len(prefix)-1]), 1)
		default:
			return c.Last()
		}
		if k, _ = c.Seek(end); k == nil {
			return c.Last()
		}
		return c.Prev()
	}
	skip := len(prefix) + 8 // the created-at key, then the flow id
	for k, _ := last(); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
		if len(k) <= skip {
			return corruptError(t.s.path, fmt.Sprintf("bad index key %q", k), nil)
		}
		if !fn(k[skip:]) {
			return nil
		}
	}
	return nil
}

// scanAbove is the number of flows above which summariesOf reads the whole
// summaries bucket in key order rather than looking each flow up: a lookup
// walks the B-tree from its root, a scan reads each page once.
const scanAbove = 512

// summariesOf decodes the summaries of the flows ids (which must be
// distinct), in that order. Few are looked up one by one; many are read by
// one pass over bucket summaries (ids are random UUIDs, unrelated to the
// order of the listing). The ids may point into the mapping: they are only
// used within the transaction.
func (t *tx) summariesOf(sums *bolt.Bucket, ids [][]byte) ([]state.FlowSummary, error) {
	out := make([]state.FlowSummary, len(ids))
	intern := map[string]string{}
	var damaged []error // one *engine.DamagedError per summary that does not decode
	bad := make([]bool, len(ids))
	decode := func(id, v []byte, i int) error {
		if v == nil {
			return corruptError(t.s.path, fmt.Sprintf("an index names flow %q, which has no summary", id), nil)
		}
		if err := decodeSummaryInto(v, &out[i], intern); err != nil {
			damaged = append(damaged, damagedRecord(t.s.path, string(id), "summary", err))
			bad[i] = true
		}
		return nil
	}
	// done leaves the damaged flows out (ports.go: the rest is returned
	// with an error joining theirs).
	done := func() ([]state.FlowSummary, error) {
		if len(damaged) == 0 {
			return out, nil
		}
		kept := out[:0]
		for i := range out {
			if !bad[i] {
				kept = append(kept, out[i])
			}
		}
		return kept, errors.Join(damaged...)
	}
	if len(ids) <= scanAbove {
		// One cursor for every lookup: its stack is reused (a Get each
		// would allocate one).
		c := sums.Cursor()
		for i, id := range ids {
			k, v := c.Seek(id)
			if !bytes.Equal(k, id) {
				v = nil
			}
			if err := decode(id, v, i); err != nil {
				return nil, err
			}
		}
		return done()
	}
	slot := make(map[string]int, len(ids))
	for i, id := range ids {
		// Not a copy: id stays valid (and unchanged) for the transaction,
		// and slot does not outlive this call.
		slot[unsafe.String(unsafe.SliceData(id), len(id))] = i
	}
	found := 0
	c := sums.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		i, ok := slot[string(k)]
		if !ok {
			continue
		}
		if err := decode(k, v, i); err != nil {
			return nil, err
		}
		found++
	}
	if found != len(ids) {
		for i, id := range ids {
			if sums.Get(id) == nil {
				return nil, decode(id, nil, i)
			}
		}
	}
	return done()
}

// PendingGates returns every flow awaiting a gate (status awaiting_gate with
// Gate set), oldest gate first (by Gate.DispatchedAt, then flow id).
func (t *tx) PendingGates() ([]state.FlowSummary, error) {
	var out []state.FlowSummary
	err := t.do(false, func() error {
		gates, err := t.bucket(bucketGates)
		if err != nil {
			return err
		}
		sums, err := t.bucket(bucketSummaries)
		if err != nil {
			return err
		}
		var ids [][]byte
		if err := gates.ForEach(func(k, _ []byte) error { ids = append(ids, k); return nil }); err != nil {
			return err
		}
		out, err = t.summariesOf(sums, ids)
		return err
	})
	if _, damaged := engine.DamagedFlows(err); err != nil && !damaged {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Gate.DispatchedAt, out[j].Gate.DispatchedAt
		if !a.Equal(b) {
			return a.Before(b)
		}
		return out[i].FlowID < out[j].FlowID
	})
	return out, err
}

// CacheGet returns a copy of the cached value for key.
func (t *tx) CacheGet(key string) ([]byte, bool, error) {
	var (
		out []byte
		ok  bool
	)
	err := t.do(false, func() error {
		cache, err := t.bucket(bucketCache)
		if err != nil {
			return err
		}
		if v := cache.Get([]byte(key)); v != nil {
			out, ok = bytes.Clone(v), true
			if out == nil {
				out = []byte{}
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, ok, nil
}

// CachePut stores a copy of value under key.
func (t *tx) CachePut(key string, value []byte) error {
	switch {
	case key == "":
		return fmt.Errorf("store: %w: empty cache key", ErrInvalid)
	case len(key) > maxCacheKeyLen:
		return fmt.Errorf("store: %w: cache key longer than %d bytes", ErrInvalid, maxCacheKeyLen)
	}
	return t.do(true, func() error {
		cache, err := t.bucket(bucketCache)
		if err != nil {
			return err
		}
		v := bytes.Clone(value)
		if v == nil {
			v = []byte{}
		}
		return cache.Put([]byte(key), v)
	})
}

// mapTxErr turns bbolt's argument errors into ErrInvalid; the store's and
// the engine's own errors pass through.
func mapTxErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrKeyTooLarge), errors.Is(err, berrors.ErrValueTooLarge),
		errors.Is(err, berrors.ErrKeyRequired):
		return fmt.Errorf("store: %w: %v", ErrInvalid, err)
	case errors.Is(err, berrors.ErrTxNotWritable), errors.Is(err, berrors.ErrDatabaseReadOnly):
		return ErrReadOnlyTx
	case errors.Is(err, berrors.ErrTxClosed):
		return ErrTxDone
	}
	return err
}
