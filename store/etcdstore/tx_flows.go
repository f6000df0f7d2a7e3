package etcdstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	sjson "github.com/segmentio/encoding/json"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// The port's flow operations over a transaction (tx.go holds its reads,
// buffered writes and commit): Get, Put with its indexes, Delete, the
// summary listings and the cache.

func validFlowID(id string) error {
	switch {
	case id == "":
		return errors.New("etcd store: empty flow id")
	case len(id) > maxFlowIDLen:
		return fmt.Errorf("etcd store: flow id longer than %d bytes", maxFlowIDLen)
	case strings.IndexByte(id, 0) >= 0:
		return errors.New("etcd store: flow id contains a NUL byte")
	}
	return nil
}

func (t *tx) Get(flowID string) (*state.FlowState, error) {
	fk := t.s.key("f/", flowID)
	_, own := t.writes[fk]
	v, ok, err := t.get(fk)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("flow %q: %w", flowID, engine.ErrNotFound)
	}
	st := new(state.FlowState)
	if j, err := unpackState(v); err != nil {
		return nil, &engine.DamagedError{FlowID: flowID, Err: fmt.Errorf("etcd store %s: cannot read its state: %w", t.s, err)}
	} else if len(j) > 0 && len(v) > 0 && &j[0] == &v[0] {
		v = bytes.Clone(j) // the decoder may keep parts of its input
	} else {
		v = j
	}
	if err := sjson.Unmarshal(v, st); err != nil {
		return nil, &engine.DamagedError{FlowID: flowID, Err: fmt.Errorf("etcd store %s: cannot decode its state: %w", t.s, err)}
	}
	var rev int64 // the mod revision of the f/ read (0: written by this transaction)
	if !own {
		rev = t.reads[fk]
	}
	n := tasksOf(v)
	if n > 0 {
		if err := t.readTasks(st, n, rev); err != nil {
			return nil, err
		}
	}
	t.noteFlow(st, marker(v), n, rev)
	if err := t.judge(flowID, marker(v), st.Owner); err != nil {
		return nil, err
	}
	return st, nil
}

// priorFlow is what Put and Delete need of the flow they replace: whether
// it is stored, its version, the runner lease its records are marked with
// (lid) and what names its index keys.
type priorFlow struct {
	exists  bool
	version int64
	lid     string
	status  state.FlowStatus
	created time.Time
	gated   bool // its summary is in g/ (awaiting a gate)
	// tasks counts its task keys (0: records in its state; tasks.go);
	// rev is the mod revision of its f/ and s/ as read (0: written by
	// this transaction).
	tasks int
	rev   int64
}

// noteFlow remembers what Put and Delete need of a flow this transaction
// read (Get) or wrote, so they need not read its summary s/<id>: f/<id>
// and s/<id> are only ever written together, and the commit compares
// f/<id>, which Get read.
// A flow awaiting a gate counts as gated (its g/ entry deleted when it
// moves on, whether or not it had one).
func (t *tx) noteFlow(st *state.FlowState, lid string, tasks int, rev int64) {
	t.setPrior(st.FlowID, priorFlow{exists: true, version: st.Version, lid: lid, status: st.Status,
		created: st.CreatedAt, gated: st.Status == state.StatusAwaitingGate, tasks: tasks, rev: rev})
}

func (t *tx) setPrior(flowID string, p priorFlow) {
	if t.prior == nil {
		t.prior = map[string]priorFlow{}
	}
	t.prior[flowID] = p
}

// priorOf is the stored flow Put or Delete replaces: what Get or an
// earlier write of this transaction noted, else read from its summary.
func (t *tx) priorOf(flowID string) (priorFlow, error) {
	if p, ok := t.prior[flowID]; ok {
		return p, nil
	}
	sk := t.s.key("s/", flowID)
	_, own := t.writes[sk]
	v, ok, err := t.get(sk)
	if err != nil || !ok {
		return priorFlow{}, err
	}
	sum, err := t.decodeSummary(flowID, v)
	if err != nil {
		return priorFlow{}, err
	}
	var rev int64
	if !own {
		rev = t.reads[sk]
	}
	return priorFlow{exists: true, version: sum.Version, lid: marker(v), status: sum.Status, created: sum.CreatedAt,
		gated: sum.Status == state.StatusAwaitingGate, tasks: tasksOf(v), rev: rev}, nil
}

// summary returns a flow's summary as stored (its owner not judged).
func (t *tx) summary(flowID string) (*state.FlowSummary, error) {
	sum, _, err := t.summaryRec(flowID)
	return sum, err
}

// summaryRec is summary with the runner lease id its record is marked with.
func (t *tx) summaryRec(flowID string) (*state.FlowSummary, string, error) {
	v, ok, err := t.get(t.s.key("s/", flowID))
	if err != nil || !ok {
		return nil, "", err
	}
	sum, err := t.decodeSummary(flowID, v)
	if err != nil {
		return nil, "", err
	}
	return sum, marker(v), nil
}

// decodeSummary decodes a flow's summary record v.
func (t *tx) decodeSummary(flowID string, v []byte) (*state.FlowSummary, error) {
	sum := new(state.FlowSummary)
	if err := sjson.Unmarshal(bytes.Clone(v), sum); err != nil {
		return nil, &engine.DamagedError{FlowID: flowID, Err: fmt.Errorf("etcd store %s: cannot decode its summary: %w", t.s, err)}
	}
	return sum, nil
}

func hex16(n uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return fmt.Sprintf("%x", b[:])
}

func createdKey(sum *state.FlowSummary) string {
	return hex16(uint64(sum.CreatedAt.UnixNano()) ^ (1 << 63))
}

// indexKeys are the index keys of a flow: its entry in the newest-first
// listing, in its status's, and in the pending gates (gated; else "").
func (t *tx) indexKeys(flowID string, p priorFlow) (created, status, gate string) {
	c := createdKey(&state.FlowSummary{CreatedAt: p.created})
	created = t.s.key("c/", c, "\x00", flowID)
	status = t.s.key("t/", string(p.status), "\x00", c, "\x00", flowID)
	if p.gated {
		gate = t.s.key("g/", flowID)
	}
	return
}

// Put buffers the flow and its summary if the flow is at version expect
// (engine.NotStored: absent) in this transaction's snapshot, else it fails
// with an *engine.VersionError. The stored version is read from the
// summary's key, which the commit compares by mod revision, so a writer
// that changes the flow after the snapshot fails the commit and Update
// runs fn again on a new snapshot: the comparison and the write are
// atomic. st is stored as given but for a zero SchemaVersion; the summary
// with st's stamps.
func (t *tx) Put(st *state.FlowState, sum state.FlowSummary, expect int64) error {
	if err := t.writable(); err != nil {
		return err
	}
	if st == nil {
		return errors.New("etcd store: nil flow state")
	}
	if err := validFlowID(st.FlowID); err != nil {
		return err
	}
	if strings.IndexByte(string(st.Status), 0) >= 0 {
		return errors.New("etcd store: status contains a NUL byte")
	}
	if sum.FlowID != st.FlowID || sum.Status != st.Status {
		return fmt.Errorf("etcd store: flow %q put with the summary of %q (status %q, the state's %q)",
			st.FlowID, sum.FlowID, sum.Status, st.Status)
	}
	if expect < engine.NotStored || st.Version <= expect {
		return fmt.Errorf("etcd store: flow %q put at version %d over version %d: a write moves the version on (state.FlowState.Stamp)",
			st.FlowID, st.Version, expect)
	}
	old, err := t.priorOf(st.FlowID)
	if err != nil {
		return err
	}
	at := engine.NotStored
	if old.exists {
		at = old.version
	}
	if at != expect {
		return &engine.VersionError{FlowID: st.FlowID, Expected: expect, Stored: at}
	}
	prevRecord := st.SchemaVersion
	if st.SchemaVersion == 0 {
		st.SchemaVersion = stateRecordVersion
	}
	// A live owner is backed by an etcd lease: the records are marked with
	// its id, and its lease key is written at commit (see lease.go). A
	// finished flow accepts no reports, so nothing needs its owner alive:
	// the flow's lease key goes with the end transition, and the etcd
	// lease with it once it backs nothing else (trimmed at the end).
	var lid string
	if backable(st.Owner, st.UpdatedAt) && !st.Status.Finished() {
		lid = st.Owner.ID
	}
	tasks, err := t.writeTasks(st, old)
	if err != nil {
		st.SchemaVersion = prevRecord
		return err
	}
	stored := st
	if tasks > 0 {
		cp := *st // shallow: the records are in their own keys
		cp.ParallelTasks = nil
		stored = &cp
	}
	data, err := sjson.Marshal(stored)
	if err == nil {
		data, err = mark(withTasks(data, tasks), lid)
	}
	if err != nil {
		st.SchemaVersion = prevRecord
		return fmt.Errorf("etcd store: encode flow %s: %w", st.FlowID, err)
	}
	sum.CreatedAt, sum.UpdatedAt, sum.Version = st.CreatedAt, st.UpdatedAt, st.Version
	sumData, err := sjson.Marshal(&sum)
	if err == nil {
		sumData, err = mark(withTasks(sumData, tasks), lid)
	}
	if err != nil {
		return fmt.Errorf("etcd store: encode summary of flow %s: %w", st.FlowID, err)
	}
	if err := t.setOwner(st.FlowID, old.lid, lid, st.Owner); err != nil {
		return err
	}
	t.put(t.s.key("f/", st.FlowID), packState(data))
	t.put(t.s.key("s/", st.FlowID), sumData)
	now := priorFlow{exists: true, version: st.Version, lid: lid, status: st.Status, created: st.CreatedAt,
		gated: sum.Status == state.StatusAwaitingGate && sum.Gate != nil, tasks: tasks}
	t.reindex(st.FlowID, old, now, sumData)
	t.setPrior(st.FlowID, now)
	return nil
}

// reindex moves a flow's index entries from what old named to what now
// names. The entries of c/ and t/ hold nothing (a listing reads the
// summaries from s/), so an entry whose key is unchanged is not written
// again: a transition that keeps the status writes none. g/ holds the
// summary (PendingGates reads only it), rewritten with every write while
// the flow awaits a gate.
func (t *tx) reindex(flowID string, old, now priorFlow, sumData []byte) {
	var oc, os, og string
	if old.exists {
		oc, os, og = t.indexKeys(flowID, old)
	}
	nc, ns, ng := t.indexKeys(flowID, now)
	if oc != nc {
		if oc != "" {
			t.del(oc)
		}
		t.put(nc, []byte{})
	}
	if os != ns {
		if os != "" {
			t.del(os)
		}
		t.put(ns, []byte{})
	}
	if og != "" && ng == "" {
		t.del(og)
	}
	if ng != "" {
		t.put(ng, sumData)
	}
}

func (t *tx) Delete(flowID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	old, err := t.priorOf(flowID)
	if err != nil {
		return err
	}
	if err := t.setOwner(flowID, old.lid, "", nil); err != nil {
		return err
	}
	if old.exists {
		c, s, g := t.indexKeys(flowID, old)
		t.del(c)
		t.del(s)
		if g != "" {
			t.del(g)
		}
	}
	t.del(t.s.key("f/", flowID))
	t.del(t.s.key("s/", flowID))
	if old.tasks > 0 || t.tasks[flowID] != nil {
		t.dropTasks(flowID)
	}
	t.setPrior(flowID, priorFlow{})
	t.gen = true
	xp := t.s.key("x/", flowID, "\x00")
	evs, err := t.scan(xp, prefixEnd(xp), inlineEvents+1, false)
	if err != nil {
		return err
	}
	// The flow's events of p/ (schema 7: all its events since).
	pp := t.s.key("p/", flowID, "\x00")
	pend, err := t.scan(pp, prefixEnd(pp), inlineEvents+1, false)
	if err != nil {
		return err
	}
	// last: the largest sequence number deleted, kept by meta/seq so
	// that LastSeq never goes down. (An event of p/ was appended by a
	// commit that wrote meta/last_append, which keeps LastSeq at least
	// its number; meta/seq matters for the events of schema 3 and before.)
	var last uint64
	for _, k := range pend {
		if k.mod == 0 {
			continue // appended by this transaction
		}
		if evs, err := pendingEvents(k); err == nil {
			last = max(last, evs[len(evs)-1].Seq)
		}
	}
	if len(evs)+len(pend) <= inlineEvents {
		for _, k := range evs {
			t.del(k.key)
			t.del(t.s.key("e/", strings.TrimPrefix(k.key, xp)))
			if es, err := decodeEvents(k); err == nil {
				last = max(last, es[len(es)-1].Seq)
			}
		}
		for _, k := range pend {
			t.del(k.key)
		}
		return t.raiseHighWater(last)
	}
	lastX, err := t.scan(xp, prefixEnd(xp), 1, true)
	if err != nil {
		return err
	}
	if len(lastX) == 1 {
		if es, err := decodeEvents(lastX[0]); err == nil {
			last = max(last, es[len(es)-1].Seq)
		}
	}
	// The tombstone hides every event of the flow committed up to the
	// snapshot, pending or indexed: their revisions are not above it.
	hide := seqOf(t.rev, 1<<seqShift-1)
	t.put(t.s.key("d/", flowID), []byte(strconv.FormatUint(hide, 10)))
	t.purge = append(t.purge, flowID)
	return t.raiseHighWater(last)
}

// decodeSummaries decodes the summaries read from s/ or g/, their
// owners judged by etcd (see judge). One that does not decode is left out
// and reported as an *engine.DamagedError naming the flow (the id ends every
// index key, after its last NUL or its prefix p), joined with the others
// (engine.Tx's contract).
func (t *tx) decodeSummaries(p string, kvs []kv) ([]state.FlowSummary, error) {
	out := make([]state.FlowSummary, 0, len(kvs))
	var damaged []error
	for _, k := range kvs {
		var sum state.FlowSummary
		if err := sjson.Unmarshal(bytes.Clone(k.val), &sum); err != nil {
			id := strings.TrimPrefix(k.key, p)
			id = id[strings.LastIndexByte(id, 0)+1:]
			damaged = append(damaged, &engine.DamagedError{FlowID: id,
				Err: fmt.Errorf("etcd store: cannot decode the summary at %q: %w", k.key, err)})
			continue
		}
		if lid := marker(k.val); lid != "" && sum.Owner != nil && sum.Owner.ID == lid {
			if err := t.loadLeaseKeys(); err != nil {
				return nil, err
			}
			if err := t.judge(sum.FlowID, lid, sum.Owner); err != nil {
				return nil, err
			}
		}
		out = append(out, sum)
	}
	return out, errors.Join(damaged...)
}

// List scans the created or the by-status index backwards; f.After's key
// ends the range (the keys below it follow it in the listing).
// listingRange is the range of index keys f selects: prefix p (the
// newest-first index, or the status's) up to end (f.After's key).
func (t *tx) listingRange(f engine.ListFilter) (p, end string) {
	p = t.s.key("c/")
	if f.Status != "" {
		p = t.s.key("t/", string(f.Status), "\x00")
	}
	end = prefixEnd(p)
	if !f.After.IsZero() {
		end = p + createdKey(&state.FlowSummary{CreatedAt: f.After.CreatedAt}) + "\x00" + f.After.FlowID
	}
	return p, end
}

// listCompares is how many summaries a listing inside an Update has the
// commit compare one by one (beyond, the range of s/).
const listCompares = 32

// The entries name the flows; their summaries are read from s/ at the
// same snapshot (an entry of schema 4 holds a copy, which is not read: it
// is not rewritten while the entry's key stays).
func (t *tx) List(f engine.ListFilter) ([]state.FlowSummary, error) {
	p, end := t.listingRange(f)
	kvs, err := t.scan(p, end, max(f.Limit, 0), true)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(kvs))
	for i, k := range kvs {
		keys[i] = t.s.key("s/", k.key[strings.LastIndexByte(k.key, 0)+1:])
	}
	// Inside an Update, a long listing has the commit compare the range
	// of s/ (any flow written since the snapshot fails it) rather than
	// each summary.
	var cover *krange
	if len(keys) > listCompares {
		sp := t.s.key("s/")
		cover = &krange{sp, prefixEnd(sp)}
	}
	vals, err := t.getMany(keys, cover)
	if err != nil {
		return nil, err
	}
	sums := make([]kv, 0, len(keys))
	for i, v := range vals {
		if v != nil {
			sums = append(sums, kv{key: keys[i], val: v})
		}
	}
	return t.decodeSummaries(t.s.key("s/"), sums)
}

// Count counts the index keys List(f) would read: a count-only range,
// which transfers no key (in a write transaction, or over keys this one
// wrote, the scan List does, which sees them).
func (t *tx) Count(f engine.ListFilter) (int, error) {
	p, end := t.listingRange(f)
	if t.write || t.overlaps(p, end) {
		kvs, err := t.scan(p, end, 0, false)
		return len(kvs), err
	}
	r, err := t.read(p, clientv3.WithRange(end), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return int(r.Count), nil
}

func (t *tx) PendingGates() ([]state.FlowSummary, error) {
	p := t.s.key("g/")
	kvs, err := t.scan(p, prefixEnd(p), 0, false)
	if err != nil {
		return nil, err
	}
	return t.decodeSummaries(p, kvs)
}

// GatesDue is state.GatesDue of PendingGates: correct, not faster (the
// etcd store keeps no deadline index; it reads every pending gate).
func (t *tx) GatesDue(now time.Time) ([]state.FlowSummary, *time.Time, error) {
	pending, err := t.PendingGates()
	if _, damaged := engine.DamagedFlows(err); err != nil && !damaged {
		return nil, nil, err
	}
	due, next := state.GatesDue(pending, now)
	return due, next, err // err: the damaged flows, left out
}

// ---- cache ----

func (t *tx) CacheGet(key string) ([]byte, bool, error) {
	v, ok, err := t.get(t.s.key("k/", key))
	if err != nil || !ok {
		return nil, false, err
	}
	return append([]byte{}, v...), true, nil
}

func (t *tx) CachePut(key string, value []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	t.put(t.s.key("k/", key), append([]byte{}, value...))
	return nil
}

func (t *tx) CacheDelete(key string) error {
	if err := t.writable(); err != nil {
		return err
	}
	t.del(t.s.key("k/", key))
	return nil
}
