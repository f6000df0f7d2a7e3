package etcdstore

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	sjson "github.com/segmentio/encoding/json"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine/state"
)

// minLeaseTTL is the shortest etcd lease granted for a runner lease (etcd
// itself refuses less than about 1.5 s, and a leader election must not
// expire a live runner).
const minLeaseTTL = 5

// ExpiredAt is the ExpiresAt a read reports for a runner lease whose etcd
// lease is gone (expired or revoked): the Unix epoch, in the past for
// every reader's clock.
var ExpiredAt = time.Unix(0, 0).UTC()

// markerField is the JSON member the store puts first in the records of a
// flow (f/, s/ and the copy in g/) whose owner is backed by an etcd lease:
// its value is the runner lease id. Decoders of state.FlowState and
// state.FlowSummary ignore it, so an older stratum reads the records as
// before (and drops the mark when it rewrites them: that owner is then
// judged by its ExpiresAt again).
const markerField = `{"etcdstore_lease":`

// heldLease is an etcd lease this Store granted for a runner lease, kept
// alive by the Puts that renew the runner lease.
type heldLease struct {
	id  clientv3.LeaseID
	ttl int64 // granted, seconds
	// until is when the etcd lease expires at the earliest, by this
	// Store's clock (the time of the grant or last keepalive plus ttl).
	until time.Time
}

// ownerIntent is a Put's backed owner of one flow, settled at commit.
type ownerIntent struct {
	lid     string
	expires time.Time
	key     string
	cur     clientv3.LeaseID // the etcd lease of key at the snapshot (0: absent)
}

// leaseKey is the key that exists while the runner lease lid owns flowID.
func (s *Store) leaseKey(lid, flowID string) string {
	return s.key("leases/", lid, "\x00", flowID)
}

// backable says whether an owner can be backed by an etcd lease.
func backable(o *state.Lease, now time.Time) bool {
	return o != nil && o.ID != "" && strings.IndexByte(o.ID, 0) < 0 && o.ExpiresAt.After(now)
}

// mark prefixes a JSON object with the marker member naming lid.
func mark(data []byte, lid string) ([]byte, error) {
	if lid == "" {
		return data, nil
	}
	v, err := sjson.Marshal(lid)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(markerField)+len(v)+len(data)+1)
	out = append(out, markerField...)
	out = append(out, v...)
	if rest := bytes.TrimSpace(data[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, data[1:]...), nil
}

// marker returns the runner lease id a record is marked with ("" when none).
func marker(data []byte) string {
	if !bytes.HasPrefix(data, []byte(markerField)) {
		return ""
	}
	b := data[len(markerField):]
	if len(b) == 0 || b[0] != '"' {
		return ""
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			var lid string
			if sjson.Unmarshal(b[:i+1], &lid) != nil {
				return ""
			}
			return lid
		}
	}
	return ""
}

// leaseState reports whether the lease key k existed at the snapshot, and
// its etcd lease. Inside an Update the key joins the compare set, so a
// commit that depended on it fails (and is retried) if etcd expired the
// lease, or another writer changed the key, after the snapshot.
func (t *tx) leaseState(k string) (bool, clientv3.LeaseID, error) {
	if !t.write && t.leaseKeys != nil {
		id, ok := t.leaseKeys[k]
		return ok, id, nil
	}
	_, ok, err := t.get(k)
	if err != nil {
		return false, 0, err
	}
	return ok, t.leaseOf[k], nil
}

// loadLeaseKeys reads every lease key at the snapshot in one request (a
// read-only transaction listing many flows).
func (t *tx) loadLeaseKeys() error {
	if t.write || t.leaseKeys != nil {
		return nil
	}
	p := t.s.key("leases/")
	// Not WithKeysOnly: it drops the keys' leases too.
	r, err := t.read(p, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	t.leaseKeys = make(map[string]clientv3.LeaseID, len(r.Kvs))
	for _, k := range r.Kvs {
		t.leaseKeys[string(k.Key)] = clientv3.LeaseID(k.Lease)
	}
	return nil
}

// remaining is the etcd lease's remaining TTL in seconds as the cluster
// counts it (0 when it expired after the snapshot).
func (t *tx) remaining(id clientv3.LeaseID) (int64, error) {
	if v, ok := t.ttls[id]; ok {
		return v, nil
	}
	r, err := t.s.cli.TimeToLive(t.ctx, id)
	var ttl int64
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
	case err != nil:
		return 0, t.fail(err)
	default:
		ttl = max(r.TTL, 0)
	}
	if t.ttls == nil {
		t.ttls = map[clientv3.LeaseID]int64{}
	}
	t.ttls[id] = ttl
	return ttl, nil
}

// judge sets the ExpiresAt of o, the owner of flowID marked lid, from etcd:
// ExpiredAt when its lease key is gone at the snapshot; otherwise at least
// the reader's clock plus the etcd lease's remaining TTL (one second when
// it expired after the snapshot: the key still existed then). An owner this
// transaction put is reported as put.
func (t *tx) judge(flowID, lid string, o *state.Lease) error {
	if o == nil || lid == "" || o.ID != lid {
		return nil
	}
	if in, ok := t.owners[flowID]; ok && in.lid == lid {
		return nil
	}
	ok, id, err := t.leaseState(t.s.leaseKey(lid, flowID))
	if err != nil {
		return err
	}
	if !ok {
		o.ExpiresAt = ExpiredAt
		return nil
	}
	if id == 0 {
		return nil
	}
	ttl, err := t.remaining(id)
	if err != nil {
		return err
	}
	if until := t.s.now().Add(time.Duration(max(ttl, 1)) * time.Second); until.After(o.ExpiresAt) {
		o.ExpiresAt = until
	}
	return nil
}

// ensureLease returns a live etcd lease for the runner lease lid that lasts
// at least until expires: the one this Store holds for it, kept alive
// (KeepAliveOnce) when expires is beyond what it was last known to last,
// or a new grant (none held, it expired, or its TTL is too short). The
// caller holds s.leaseMu.
func (s *Store) ensureLease(ctx context.Context, lid string, expires time.Time) (clientv3.LeaseID, error) {
	now := s.now()
	need := int64((expires.Sub(now) + time.Second - 1) / time.Second)
	need = max(need, minLeaseTTL)
	h := s.leases[lid]
	if h != nil && !expires.After(h.until) {
		return h.id, nil
	}
	if h != nil && need <= h.ttl {
		r, err := s.cli.KeepAliveOnce(ctx, h.id)
		switch {
		case err == nil && r.TTL > 0:
			h.until = now.Add(time.Duration(r.TTL) * time.Second)
			if !expires.After(h.until) {
				return h.id, nil
			}
		case err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound):
			return 0, err
		}
	}
	r, err := s.cli.Grant(ctx, need)
	if err != nil {
		return 0, err
	}
	if s.leases == nil {
		s.leases = map[string]*heldLease{}
	}
	s.leases[lid] = &heldLease{id: r.ID, ttl: r.TTL, until: now.Add(time.Duration(r.TTL) * time.Second)}
	return r.ID, nil
}

// revokeUnused revokes the etcd leases this Store holds for the runner
// leases in lids that no longer own any flow (their last flow was released,
// handed over or deleted). Best effort: an etcd lease left behind expires
// after its TTL, and the flows' keys were already deleted in the commit.
// The caller holds s.leaseMu.
func (s *Store) revokeUnused(ctx context.Context, lids map[string]bool) {
	for lid := range lids {
		h := s.leases[lid]
		if h == nil {
			continue
		}
		p := s.key("leases/", lid, "\x00")
		r, err := s.cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || r.Count > 0 {
			continue
		}
		if _, err := s.cli.Revoke(ctx, h.id); err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
			delete(s.leases, lid)
		}
	}
}

// setOwner records, in a Put or Delete of flowID, that its owner goes from
// the runner lease oldLID (the stored records' mark; "" when none) to lid
// ("" when none or not live). A lease key of an owner that leaves is
// deleted in the transaction; one of an owner that comes or stays is read
// (joining the compare set) and written at commit when it is missing or
// attached to another etcd lease than the one this Store keeps alive.
func (t *tx) setOwner(flowID, oldLID, lid string, o *state.Lease) error {
	delete(t.owners, flowID)
	if oldLID != "" && oldLID != lid {
		t.del(t.s.leaseKey(oldLID, flowID))
		if t.dropped == nil {
			t.dropped = map[string]bool{}
		}
		t.dropped[oldLID] = true
	}
	if lid == "" {
		return nil
	}
	k := t.s.leaseKey(lid, flowID)
	ok, id, err := t.leaseState(k)
	if err != nil {
		return err
	}
	if !ok {
		id = 0
	}
	if t.owners == nil {
		t.owners = map[string]ownerIntent{}
	}
	t.owners[flowID] = ownerIntent{lid: lid, expires: o.ExpiresAt, key: k, cur: id}
	return nil
}
