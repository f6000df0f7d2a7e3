package etcdstore

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
)

// stateRecordVersion is stamped into FlowState.SchemaVersion when a caller
// leaves it zero (as the bbolt store does).
const stateRecordVersion = 1

// maxFlowIDLen bounds flow ids (as the bbolt store does).
const maxFlowIDLen = 512

// inlineEvents is how many keys of a flow's events (each holds the events
// one commit appended to it) Delete removes in its own transaction (two
// operations each; etcd's default limit is 128 per transaction); a flow
// with more leaves a tombstone and is purged in batches after the commit.
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
	gen     bool // a flow was deleted: bump meta/gen
	// prior is what Put and Delete need of each flow this transaction
	// read or wrote (noteFlow), by flow id.
	prior map[string]priorFlow
	purge []string // flows tombstoned by this transaction
	// tasks are the task records of each flow this transaction read or
	// wrote (nil: kept in its state; tasks.go); tasksDropped the flows
	// whose task keys it deletes with one range deletion.
	tasks        map[string]*taskSet
	tasksDropped map[string]bool
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
	// token names this attempt's event keys (p/); stamps are the
	// caller's events it appended (stamped with their sequence numbers
	// when the commit succeeds), appended how many.
	token    string
	batchKey string // the key of the last events appended (Append)
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

// read is a Get at the transaction's snapshot. The first read is
// linearizable and pins the revision; a later one reads that revision from
// whichever member answers, without asking the leader (serializable: no
// round of the cluster), and a member that has not applied it yet refuses
// (ErrFutureRev), so the read is made linearizable instead. Either way it
// sees exactly the snapshot.
func (t *tx) read(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if t.rev == 0 {
		r, err := t.s.cli.Get(t.ctx, key, opts...)
		if err != nil {
			return nil, t.fail(err)
		}
		t.rev = r.Header.Revision
		return r, nil
	}
	at := append(opts, clientv3.WithRev(t.rev))
	r, err := t.s.cli.Get(t.ctx, key, append(at, clientv3.WithSerializable())...)
	if errors.Is(err, rpctypes.ErrFutureRev) {
		r, err = t.s.cli.Get(t.ctx, key, at...)
	}
	if err != nil {
		return nil, t.fail(err)
	}
	return r, nil
}

// get reads one key (the transaction's own writes first).
func (t *tx) get(key string) ([]byte, bool, error) {
	if v, ok := t.writes[key]; ok {
		return v, true, nil
	}
	if t.deleted[key] {
		return nil, false, nil
	}
	r, err := t.read(key)
	if err != nil {
		return nil, false, err
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

// getManyBatch is how many keys getMany reads in one etcd request (etcd
// accepts 128 operations per transaction by default).
const getManyBatch = 100

// getMany reads keys (the transaction's own writes first) at the
// snapshot, in as few requests as etcd accepts; an absent key's value is
// nil. Inside an Update the commit compares each key read, as get does,
// unless cover is set: the caller has the commit compare a range that
// holds them all (etcd refuses more than 128 compares).
func (t *tx) getMany(keys []string, cover *krange) ([][]byte, error) {
	if cover != nil && t.write {
		t.ranges = append(t.ranges, *cover)
	}
	out := make([][]byte, len(keys))
	var need []int
	for i, k := range keys {
		if v, ok := t.writes[k]; ok {
			out[i] = v
		} else if !t.deleted[k] {
			need = append(need, i)
		}
	}
	if len(need) > 0 && t.rev == 0 {
		v, _, err := t.get(keys[need[0]]) // pins the snapshot
		if err != nil {
			return nil, err
		}
		out[need[0]], need = v, need[1:]
	}
	for len(need) > 0 {
		batch := need[:min(len(need), getManyBatch)]
		need = need[len(batch):]
		resp, err := t.readMany(keys, batch)
		if err != nil {
			return nil, t.fail(err)
		}
		for j, r := range resp.Responses {
			k := keys[batch[j]]
			kvs := r.GetResponseRange().Kvs
			mod := int64(0)
			if len(kvs) == 1 {
				out[batch[j]], mod = kvs[0].Value, kvs[0].ModRevision
				if id := kvs[0].Lease; id != 0 {
					if t.leaseOf == nil {
						t.leaseOf = map[string]clientv3.LeaseID{}
					}
					t.leaseOf[k] = clientv3.LeaseID(id)
				}
			}
			if _, seen := t.reads[k]; !seen && cover == nil {
				t.reads[k] = mod
			}
		}
	}
	return out, nil
}

// readMany gets keys[i] for each i of which at the snapshot revision, in
// one etcd transaction: served by the member asked (serializable), or,
// when it has not applied the snapshot yet, linearizably (as read).
func (t *tx) readMany(keys []string, which []int) (*clientv3.TxnResponse, error) {
	ops := make([]clientv3.Op, len(which))
	for j, i := range which {
		ops[j] = clientv3.OpGet(keys[i], clientv3.WithRev(t.rev), clientv3.WithSerializable())
	}
	resp, err := t.s.cli.Txn(t.ctx).Then(ops...).Commit()
	if errors.Is(err, rpctypes.ErrFutureRev) {
		for j, i := range which {
			ops[j] = clientv3.OpGet(keys[i], clientv3.WithRev(t.rev))
		}
		resp, err = t.s.cli.Txn(t.ctx).Then(ops...).Commit()
	}
	return resp, err
}

// overlaps reports whether this transaction wrote or deleted a key in
// [start, end).
func (t *tx) overlaps(start, end string) bool {
	for k := range t.writes {
		if k >= start && k < end {
			return true
		}
	}
	for k := range t.deleted {
		if k >= start && k < end {
			return true
		}
	}
	return false
}

// scan reads the keys in [start, end) in key order (descending when desc),
// at most limit of them (0: all), the transaction's writes merged in.
func (t *tx) scan(start, end string, limit int, desc bool) ([]kv, error) {
	overlay := t.overlaps(start, end)
	if t.write {
		t.ranges = append(t.ranges, krange{start, end})
		if _, _, err := t.get(t.s.key("meta/gen")); err != nil {
			return nil, err
		}
	}
	opts := []clientv3.OpOption{clientv3.WithRange(end)}
	if desc {
		opts = append(opts, clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	}
	if limit > 0 && !overlay {
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	r, err := t.read(start, opts...)
	if err != nil {
		return nil, err
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
		if err := t.leaseOwners(); err != nil {
			return false, err
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
	cmps, ops := t.request()
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
		t.cacheTasks(resp.Header.Revision)
		if t.appended > 0 {
			t.s.notePrev(resp.Header.Revision, resp.Responses[0].GetResponseRange())
		}
	}
	return resp.Succeeded, nil
}

// leaseOwners makes sure of the etcd lease of each owner the commit puts
// (granted or kept alive), under leaseMu, and re-puts an owner's lease key
// on a lease that changed (leased).
func (t *tx) leaseOwners() error {
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
			return err
		}
		if id != in.cur {
			if t.leased == nil {
				t.leased = map[string]clientv3.LeaseID{}
			}
			t.leased[in.key] = id
			t.put(in.key, []byte(flowID))
		}
	}
	return nil
}

// request is the etcd transaction of the commit: the compares of what was
// read (keys by mod revision, ranges by the snapshot) and the buffered
// writes, with meta/last_append read and replaced when it appends.
func (t *tx) request() ([]clientv3.Cmp, []clientv3.Op) {
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
	ops = append(ops, t.taskOps()...)
	if t.appended > 0 {
		// The previous appending commit (its revision and count), read
		// and replaced in the commit itself: compared by no one, so it
		// makes no transaction conflict (see Follows).
		la := t.s.key(lastAppendKey)
		ops = append([]clientv3.Op{clientv3.OpGet(la)}, ops...)
		ops = append(ops, clientv3.OpPut(la, strconv.FormatUint(t.appended, 10)))
	}
	return cmps, ops
}

// afterCommit purges the events of flows the transaction tombstoned.
func (t *tx) afterCommit(ctx context.Context) {
	for _, id := range t.purge {
		_ = t.s.purgeFlow(ctx, id)
	}
}

// ---- flows ----
