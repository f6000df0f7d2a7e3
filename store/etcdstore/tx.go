package etcdstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	sjson "github.com/segmentio/encoding/json"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
)

// stateRecordVersion is stamped into FlowState.SchemaVersion when a caller
// leaves it zero (as the bbolt store does).
const stateRecordVersion = 1

// maxFlowIDLen bounds flow ids (as the bbolt store does).
const maxFlowIDLen = 512

// inlineEvents is how many events of a flow Delete removes in its own
// transaction (two operations each; etcd's default limit is 128 per
// transaction); a flow with more leaves a tombstone and is purged in
// batches after the commit.
const inlineEvents = 40

// ErrReadOnlyTx is returned by writes inside View.
var ErrReadOnlyTx = errors.New("etcd store: write in a read-only transaction")

// kv is one key as a transaction sees it.
type kv struct {
	key string
	val []byte
	mod int64 // etcd mod revision; 0 for a buffered write
}

// krange is a range read inside an Update: [start, end).
type krange struct{ start, end string }

type tx struct {
	s     *Store
	ctx   context.Context
	write bool
	// rev is the snapshot revision, pinned by the first read (0 until then).
	rev int64
	// reads are the keys read from etcd and their mod revisions (0: absent).
	reads  map[string]int64
	ranges []krange
	// writes are buffered: a nil value deletes.
	writes  map[string][]byte
	deleted map[string]bool
	gen     bool     // a flow was deleted: bump meta/gen
	purge   []string // flows tombstoned by this transaction
	// leaseOf is the etcd lease of each key read that has one.
	leaseOf map[string]clientv3.LeaseID
	// leaseKeys are every lease key at the snapshot, with their etcd
	// leases (read-only transactions, read once when first needed).
	leaseKeys map[string]clientv3.LeaseID
	// ttls are the remaining TTLs asked of etcd, by etcd lease.
	ttls map[clientv3.LeaseID]int64
	// owners are the backed owners of the flows put, by flow id; leased
	// are the lease keys to write with their etcd lease (set at commit);
	// dropped are the runner leases whose key of a flow this transaction
	// deletes (their etcd lease is revoked after the commit when it owns
	// nothing any more).
	owners  map[string]ownerIntent
	leased  map[string]clientv3.LeaseID
	dropped map[string]bool
	// token names this attempt's pending event keys; stamps are the
	// caller's events it appended (stamped with their sequence numbers
	// when the commit succeeds), appended how many.
	token    string
	stamps   []*engine.Event
	appended uint64
	// etcdErr is the last error of the cluster, so Update/View can tell it
	// from fn's own errors.
	etcdErr error
}

func newTx(s *Store, ctx context.Context, write bool) *tx {
	return &tx{s: s, ctx: ctx, write: write, reads: map[string]int64{}, writes: map[string][]byte{}, deleted: map[string]bool{}}
}

var _ engine.Tx = (*tx)(nil)

func (t *tx) fail(err error) error {
	t.etcdErr = err
	return err
}

func (t *tx) snapshot() []clientv3.OpOption {
	if t.rev == 0 {
		return nil
	}
	return []clientv3.OpOption{clientv3.WithRev(t.rev)}
}

// get reads one key (the transaction's own writes first).
func (t *tx) get(key string) ([]byte, bool, error) {
	if v, ok := t.writes[key]; ok {
		return v, true, nil
	}
	if t.deleted[key] {
		return nil, false, nil
	}
	r, err := t.s.cli.Get(t.ctx, key, t.snapshot()...)
	if err != nil {
		return nil, false, t.fail(err)
	}
	if t.rev == 0 {
		t.rev = r.Header.Revision
	}
	if len(r.Kvs) == 0 {
		if _, seen := t.reads[key]; !seen {
			t.reads[key] = 0
		}
		return nil, false, nil
	}
	if _, seen := t.reads[key]; !seen {
		t.reads[key] = r.Kvs[0].ModRevision
	}
	if id := r.Kvs[0].Lease; id != 0 {
		if t.leaseOf == nil {
			t.leaseOf = map[string]clientv3.LeaseID{}
		}
		t.leaseOf[key] = clientv3.LeaseID(id)
	}
	return r.Kvs[0].Value, true, nil
}

// scan reads the keys in [start, end) in key order (descending when desc),
// at most limit of them (0: all), the transaction's writes merged in.
func (t *tx) scan(start, end string, limit int, desc bool) ([]kv, error) {
	overlay := false
	for k := range t.writes {
		if k >= start && k < end {
			overlay = true
			break
		}
	}
	if !overlay {
		for k := range t.deleted {
			if k >= start && k < end {
				overlay = true
				break
			}
		}
	}
	if t.write {
		t.ranges = append(t.ranges, krange{start, end})
		if _, _, err := t.get(t.s.key("meta/gen")); err != nil {
			return nil, err
		}
	}
	opts := append(t.snapshot(), clientv3.WithRange(end))
	if desc {
		opts = append(opts, clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	}
	if limit > 0 && !overlay {
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	r, err := t.s.cli.Get(t.ctx, start, opts...)
	if err != nil {
		return nil, t.fail(err)
	}
	if t.rev == 0 {
		t.rev = r.Header.Revision
	}
	out := make([]kv, 0, len(r.Kvs))
	for _, k := range r.Kvs {
		out = append(out, kv{key: string(k.Key), val: k.Value, mod: k.ModRevision})
	}
	if overlay {
		byKey := map[string]int{}
		for i, k := range out {
			byKey[k.key] = i
		}
		var merged []kv
		for _, k := range out {
			if t.deleted[k.key] {
				continue
			}
			if v, ok := t.writes[k.key]; ok {
				k.val = v
			}
			merged = append(merged, k)
		}
		for k, v := range t.writes {
			if _, ok := byKey[k]; !ok && k >= start && k < end {
				merged = append(merged, kv{key: k, val: v})
			}
		}
		sort.Slice(merged, func(i, j int) bool {
			if desc {
				return merged[i].key > merged[j].key
			}
			return merged[i].key < merged[j].key
		})
		out = merged
		if limit > 0 && len(out) > limit {
			out = out[:limit]
		}
	}
	return out, nil
}

func prefixEnd(p string) string { return clientv3.GetPrefixRangeEnd(p) }

func (t *tx) put(key string, val []byte) {
	delete(t.deleted, key)
	t.writes[key] = val
}

func (t *tx) del(key string) {
	delete(t.writes, key)
	t.deleted[key] = true
}

func (t *tx) writable() error {
	if !t.write {
		return ErrReadOnlyTx
	}
	return nil
}

// commit sends the buffered writes in one etcd transaction guarded by what
// was read; false means another writer changed it first. The etcd leases
// of the owners put are made sure of first (granted or kept alive), and the
// leases of runners that own nothing any more are revoked after it.
func (t *tx) commit() (bool, error) {
	if len(t.writes) == 0 && len(t.deleted) == 0 {
		return true, nil
	}
	if len(t.owners) > 0 || len(t.dropped) > 0 {
		// leaseMu covers the etcd leases held and, when this commit writes
		// a lease key or may revoke, the commit and the revocation: a key
		// written on a lease must not land between the count of a
		// released runner's keys and the revocation of its lease.
		t.s.leaseMu.Lock()
		locked := true
		defer func() {
			if locked {
				t.s.leaseMu.Unlock()
			}
		}()
		for flowID, in := range t.owners {
			h := t.s.leases[in.lid]
			if h == nil && in.cur != 0 {
				// Another process holds this runner's etcd lease (the
				// runner's own): the key stays attached to it, and the
				// compare on it fails if it expired meanwhile.
				continue
			}
			id, err := t.s.ensureLease(t.ctx, in.lid, in.expires)
			if err != nil {
				return false, err
			}
			if id != in.cur {
				if t.leased == nil {
					t.leased = map[string]clientv3.LeaseID{}
				}
				t.leased[in.key] = id
				t.put(in.key, []byte(flowID))
			}
		}
		if len(t.leased) == 0 && len(t.dropped) == 0 {
			t.s.leaseMu.Unlock()
			locked = false
		} else {
			defer func() {
				if len(t.dropped) > 0 {
					t.s.revokeUnused(t.ctx, t.dropped)
				}
			}()
		}
	}
	if t.gen {
		t.put(t.s.key("meta/gen"), []byte(engine.NewUUID()))
	}
	cmps := make([]clientv3.Cmp, 0, len(t.reads)+len(t.ranges))
	for k, mod := range t.reads {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", mod))
	}
	for _, r := range t.ranges {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(r.start), "<", t.rev+1).WithRange(r.end))
	}
	ops := make([]clientv3.Op, 0, len(t.writes)+len(t.deleted))
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range t.writes {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		if id, ok := t.leased[k]; ok {
			ops = append(ops, clientv3.OpPut(k, string(t.writes[k]), clientv3.WithLease(id)))
			continue
		}
		ops = append(ops, clientv3.OpPut(k, string(t.writes[k])))
	}
	for k := range t.deleted {
		ops = append(ops, clientv3.OpDelete(k))
	}
	resp, err := t.s.cli.Txn(t.ctx).If(cmps...).Then(ops...).Commit()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		// An etcd lease expired between its keepalive and the commit:
		// forget it, and let the retry grant a new one.
		for _, in := range t.owners {
			if h := t.s.leases[in.lid]; h != nil && h.id == t.leased[in.key] {
				delete(t.s.leases, in.lid)
			}
		}
		t.dropped = nil
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !resp.Succeeded {
		t.dropped = nil
	} else {
		t.stamp(resp.Header.Revision)
	}
	return resp.Succeeded, nil
}

// afterCommit indexes the events this transaction appended and purges the
// events of flows it tombstoned.
func (t *tx) afterCommit(ctx context.Context) {
	if t.appended > 0 {
		t.s.kickIndex()
	}
	for _, id := range t.purge {
		_ = t.s.purgeFlow(ctx, id)
	}
}

// ---- flows ----

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

func (t *tx) Get(flowID string) (*engine.FlowState, error) {
	v, ok, err := t.get(t.s.key("f/", flowID))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("flow %q: %w", flowID, engine.ErrNotFound)
	}
	st := new(engine.FlowState)
	if err := sjson.Unmarshal(bytes.Clone(v), st); err != nil {
		return nil, &engine.DamagedError{FlowID: flowID, Err: fmt.Errorf("etcd store %s: cannot decode its state: %w", t.s, err)}
	}
	if err := t.judge(flowID, marker(v), st.Owner); err != nil {
		return nil, err
	}
	return st, nil
}

// summary returns a flow's summary as stored (its owner not judged).
func (t *tx) summary(flowID string) (*engine.FlowSummary, error) {
	sum, _, err := t.summaryRec(flowID)
	return sum, err
}

// summaryRec is summary with the runner lease id its record is marked with.
func (t *tx) summaryRec(flowID string) (*engine.FlowSummary, string, error) {
	v, ok, err := t.get(t.s.key("s/", flowID))
	if err != nil || !ok {
		return nil, "", err
	}
	sum := new(engine.FlowSummary)
	if err := sjson.Unmarshal(bytes.Clone(v), sum); err != nil {
		return nil, "", &engine.DamagedError{FlowID: flowID, Err: fmt.Errorf("etcd store %s: cannot decode its summary: %w", t.s, err)}
	}
	return sum, marker(v), nil
}

func hex16(n uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return fmt.Sprintf("%x", b[:])
}

func createdKey(sum *engine.FlowSummary) string {
	return hex16(uint64(sum.CreatedAt.UnixNano()) ^ (1 << 63))
}

func (t *tx) indexKeys(sum *engine.FlowSummary) (created, status, gate string) {
	c := createdKey(sum)
	created = t.s.key("c/", c, "\x00", sum.FlowID)
	status = t.s.key("t/", string(sum.Status), "\x00", c, "\x00", sum.FlowID)
	if sum.Status == engine.StatusAwaitingGate && sum.Gate != nil {
		gate = t.s.key("g/", sum.FlowID)
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
func (t *tx) Put(st *engine.FlowState, sum engine.FlowSummary, expect int64) error {
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
		return fmt.Errorf("etcd store: flow %q put at version %d over version %d: a write moves the version on (engine.FlowState.Stamp)",
			st.FlowID, st.Version, expect)
	}
	old, oldLID, err := t.summaryRec(st.FlowID)
	if err != nil {
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
	// A live owner is backed by an etcd lease: the records are marked with
	// its id, and its lease key is written at commit (see lease.go).
	var lid string
	if backable(st.Owner, st.UpdatedAt) {
		lid = st.Owner.ID
	}
	data, err := sjson.Marshal(st)
	if err == nil {
		data, err = mark(data, lid)
	}
	if err != nil {
		st.SchemaVersion = prevRecord
		return fmt.Errorf("etcd store: encode flow %s: %w", st.FlowID, err)
	}
	sum.CreatedAt, sum.UpdatedAt, sum.Version = st.CreatedAt, st.UpdatedAt, st.Version
	sumData, err := sjson.Marshal(&sum)
	if err == nil {
		sumData, err = mark(sumData, lid)
	}
	if err != nil {
		return fmt.Errorf("etcd store: encode summary of flow %s: %w", st.FlowID, err)
	}
	if err := t.setOwner(st.FlowID, oldLID, lid, st.Owner); err != nil {
		return err
	}
	if old != nil {
		c, s, g := t.indexKeys(old)
		t.del(c)
		t.del(s)
		if g != "" {
			t.del(g)
		}
	}
	t.put(t.s.key("f/", st.FlowID), data)
	t.put(t.s.key("s/", st.FlowID), sumData)
	c, s, g := t.indexKeys(&sum)
	t.put(c, sumData)
	t.put(s, sumData)
	if g != "" {
		t.put(g, sumData)
	}
	return nil
}

func (t *tx) Delete(flowID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	old, oldLID, err := t.summaryRec(flowID)
	if err != nil {
		return err
	}
	if err := t.setOwner(flowID, oldLID, "", nil); err != nil {
		return err
	}
	if old != nil {
		c, s, g := t.indexKeys(old)
		t.del(c)
		t.del(s)
		if g != "" {
			t.del(g)
		}
	}
	t.del(t.s.key("f/", flowID))
	t.del(t.s.key("s/", flowID))
	t.gen = true
	xp := t.s.key("x/", flowID, "\x00")
	evs, err := t.scan(xp, prefixEnd(xp), inlineEvents+1, false)
	if err != nil {
		return err
	}
	// The flow's pending events (few: the indexer moves them on at once).
	pp := t.s.key("p/", flowID, "\x00")
	pend, err := t.scan(pp, prefixEnd(pp), 0, false)
	if err != nil {
		return err
	}
	// last: the largest sequence number deleted, kept by meta/seq so
	// that LastSeq never goes down.
	var last uint64
	for _, k := range pend {
		if k.mod == 0 {
			continue // appended by this transaction
		}
		if e, err := pendingEvent(k); err == nil {
			last = max(last, e.Seq)
		}
	}
	if len(evs)+len(pend) <= inlineEvents {
		for _, k := range evs {
			t.del(k.key)
			t.del(t.s.key("e/", strings.TrimPrefix(k.key, xp)))
			if n, err := strconv.ParseUint(strings.TrimPrefix(k.key, xp), 16, 64); err == nil {
				last = max(last, n)
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
		if n, err := strconv.ParseUint(strings.TrimPrefix(lastX[0].key, xp), 16, 64); err == nil {
			last = max(last, n)
		}
	}
	// The tombstone hides every event of the flow committed up to the
	// snapshot, pending or indexed: their revisions are not above it.
	hide := seqOf(t.rev, 1<<seqShift-1)
	t.put(t.s.key("d/", flowID), []byte(strconv.FormatUint(hide, 10)))
	t.purge = append(t.purge, flowID)
	return t.raiseHighWater(last)
}

// decodeSummaries decodes the summaries stored in index entries, their
// owners judged by etcd (see judge). One that does not decode is left out
// and reported as an *engine.DamagedError naming the flow (the id ends every
// index key, after its last NUL or its prefix p), joined with the others
// (engine.Tx's contract).
func (t *tx) decodeSummaries(p string, kvs []kv) ([]engine.FlowSummary, error) {
	out := make([]engine.FlowSummary, 0, len(kvs))
	var damaged []error
	for _, k := range kvs {
		var sum engine.FlowSummary
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

func (t *tx) List(f engine.ListFilter) ([]engine.FlowSummary, error) {
	p := t.s.key("c/")
	if f.Status != "" {
		p = t.s.key("t/", string(f.Status), "\x00")
	}
	kvs, err := t.scan(p, prefixEnd(p), max(f.Limit, 0), true)
	if err != nil {
		return nil, err
	}
	return t.decodeSummaries(p, kvs)
}

func (t *tx) PendingGates() ([]engine.FlowSummary, error) {
	p := t.s.key("g/")
	kvs, err := t.scan(p, prefixEnd(p), 0, false)
	if err != nil {
		return nil, err
	}
	return t.decodeSummaries(p, kvs)
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
