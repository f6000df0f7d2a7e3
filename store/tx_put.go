package store

import (
	"bytes"
	"fmt"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// Put creates or replaces the flow with its summary if it is stored at
// version expect (engine.NotStored: absent), else it fails with an
// *engine.VersionError and writes nothing; bbolt's one writer at a time
// makes the comparison and the write atomic. The stored version is read
// from the flow's summary, which Put reads anyway to move its index
// entries, so the state is not decoded. st is stored as given (its stamps
// are the writer's; a zero SchemaVersion becomes the current record
// version), the summary with st's CreatedAt, UpdatedAt and Version and
// otherwise as given (its FlowID and Status must be st's). The summary and
// the indexes (newest-first, by status, pending gates, gate deadlines) are
// updated in the same transaction.
func (t *tx) Put(st *state.FlowState, sum state.FlowSummary, expect int64) error {
	if err := validPut(st, sum, expect); err != nil {
		return err
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
		return t.writeFlow(st, flowWrite{data: data, sumData: sumData, ref: ref, known: known, haveKnown: haveKnown, split: split, old: old, sum: &sum})
	})
}

// validPut is Put's check of its arguments (ErrInvalid).
func validPut(st *state.FlowState, sum state.FlowSummary, expect int64) error {
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
	return nil
}

// flowWrite is what Put encoded and learnt before its write: the state's
// and the summary's bytes, its spec reference and the one stored before
// (known, unless haveKnown is false), whether the step maps are kept one
// key per step, and the stored and the new summary.
type flowWrite struct {
	data, sumData    []byte
	ref, known       specRef
	haveKnown, split bool
	old, sum         *state.FlowSummary
}

// writeFlow writes a flow Put has checked and encoded: its state, spec
// reference counts, log and step entries, summary and index entries.
func (t *tx) writeFlow(st *state.FlowState, w flowWrite) error {
	id := []byte(st.FlowID)
	flows, err := t.bucket(bucketFlows)
	if err != nil {
		return err
	}
	sums, err := t.bucket(bucketSummaries)
	if err != nil {
		return err
	}
	if !w.haveKnown {
		// From the flow's log meta entry, else (a state stored
		// before it had one) from the state itself.
		m, ok, err := t.storedLogMeta(st.FlowID)
		switch {
		case err != nil:
			return err
		case ok:
			w.known = m.specRef()
		default:
			if v := flows.Get(id); v != nil {
				if w.known, err = t.storedSpecRef(st.FlowID, v); err != nil {
					return err
				}
			}
		}
	}
	if w.known.ok != w.ref.ok || w.known.hash != w.ref.hash {
		specs, err := t.bucket(bucketSpecs)
		if err != nil {
			return err
		}
		if err := adjustSpec(specs, w.ref, 1); err != nil {
			return err
		}
		if err := adjustSpec(specs, w.known, -1); err != nil {
			return err
		}
	}
	if err := flows.Put(id, w.data); err != nil {
		return err
	}
	if err := t.writeLog(st, w.ref); err != nil {
		return err
	}
	if w.split {
		if err := t.writeSteps(st); err != nil {
			return err
		}
	}
	t.rememberSpec(st.FlowID, w.ref)
	if err := sums.Put(id, w.sumData); err != nil {
		return err
	}
	return t.reindex(w.old, w.sum)
}

// reindex moves the secondary-index entries of a flow from its old summary
// (nil for a new flow) to sum. The entries are keys only, so an entry whose
// key is the same before and after is left alone: a transition that changes
// neither the status nor whether the flow awaits a gate (most of them)
// touches no index page, and one that does rewrites only the indexes whose
// key changed (a completion: by_status, gates and deadline, not
// by_created).
func (t *tx) reindex(old, sum *state.FlowSummary) error {
	var before [4]indexEntry
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
func indexEntries(sum *state.FlowSummary) [4]indexEntry {
	ref := indexRef{id: sum.FlowID, status: sum.Status, created: sum.CreatedAt}
	return [4]indexEntry{
		{bucketByCreated, createdKey(ref), true},
		{bucketByStatus, statusKey(ref), true},
		{bucketGates, []byte(sum.FlowID), pendingGate(sum)},
		{bucketDeadlines, deadlineKey(sum), pendingGate(sum) && sum.Gate.Deadline != nil},
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
