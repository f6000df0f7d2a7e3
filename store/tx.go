package store

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"time"
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

// GatesDue returns the flows awaiting a gate whose deadline is at or before
// now, earliest deadline first, and the earliest deadline after now (nil:
// none). It walks idx_deadline from its start and stops at the first key
// after now, so it decodes only the summaries of the gates due.
func (t *tx) GatesDue(now time.Time) ([]state.FlowSummary, *time.Time, error) {
	var (
		out  []state.FlowSummary
		next *time.Time
	)
	err := t.do(false, func() error {
		idx, err := t.bucket(bucketDeadlines)
		if err != nil {
			return err
		}
		sums, err := t.bucket(bucketSummaries)
		if err != nil {
			return err
		}
		var ids [][]byte
		c := idx.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) <= 8 {
				return corruptError(t.s.path, fmt.Sprintf("idx_deadline: bad key %x", k), nil)
			}
			if at := keyTime(k); at.After(now) {
				next = &at
				break
			}
			ids = append(ids, k[8:])
		}
		out, err = t.summariesOf(sums, ids)
		return err
	})
	if _, damaged := engine.DamagedFlows(err); err != nil && !damaged {
		return nil, nil, err
	}
	return out, next, err
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

// CacheDelete removes key's entry; a missing key is no error.
func (t *tx) CacheDelete(key string) error {
	return t.do(true, func() error {
		cache, err := t.bucket(bucketCache)
		if err != nil {
			return err
		}
		return cache.Delete([]byte(key))
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
