package etcdstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	sjson "github.com/segmentio/encoding/json"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
)

// ---- the event log ----

// seqShift places a commit's etcd revision above the position of an event
// among the events of its commit: Seq = revision<<seqShift | position.
const seqShift = 16

// seqOf is the sequence number of the event at position idx of the commit
// at etcd revision rev.
func seqOf(rev int64, idx uint64) uint64 { return uint64(rev)<<seqShift | idx }

// pendingKey names the events a transaction appends to one flow, one after
// the other: p/<flow id>‖NUL‖<token:24>‖<position:4>, the position of the
// first. The token is unique to the attempt (see newToken), so no two
// writers share a key. The key is the events' place in the log for good
// (schema 7; before, an indexer moved them on to e/ and x/): it is deleted
// with its flow only.
func (t *tx) pendingKey(flowID string, idx uint64) string {
	if t.token == "" {
		t.token = t.s.newToken()
	}
	return t.s.key("p/", flowID, "\x00", t.token, fmt.Sprintf("%04x", idx))
}

// newToken is a key part unique to one transaction attempt: this Store's
// random id and a counter.
func (s *Store) newToken() string {
	return fmt.Sprintf("%016x%08x", s.tokenBase, s.tokens.Add(1))
}

// A key of the log (p/, e/, x/) holds the events one commit appended to one
// flow one after the other: one event's JSON, or several as a JSON array
// (schema 5; before, one event per key). Their sequence numbers are
// consecutive: the first's is the key's (p/: its mod revision and the
// position at its end; e/ and x/: the stamp in the JSON, as the key's).

// appendBatch adds the event JSON b to the value v of a log key.
func appendBatch(v, b []byte) []byte {
	var out []byte
	if len(v) > 0 && v[0] == '[' {
		out = append(append(v[:len(v)-1:len(v)-1], ','), b...)
	} else {
		out = append(append(append([]byte{'['}, v...), ','), b...)
	}
	return append(out, ']')
}

// encodeBatch is the value of a log key holding evs (stamped).
func encodeBatch(evs []engine.Event) ([]byte, error) {
	var out []byte
	for i := range evs {
		b, err := evs[i].AppendJSON(make([]byte, 0, 512))
		if err != nil {
			return nil, err
		}
		if i == 0 {
			out = b
		} else {
			out = appendBatch(out, b)
		}
	}
	return out, nil
}

// decodeEvents decodes the events a key of the log holds.
func decodeEvents(k kv) ([]engine.Event, error) {
	v := bytes.TrimSpace(k.val)
	if len(v) > 0 && v[0] == '[' {
		var evs []engine.Event
		if err := sjson.Unmarshal(bytes.Clone(v), &evs); err != nil || len(evs) == 0 {
			if err == nil {
				err = errors.New("no event")
			}
			return nil, fmt.Errorf("etcd store: cannot decode the events at %q: %w", k.key, err)
		}
		return evs, nil
	}
	e, err := decodeEvent(k)
	if err != nil {
		return nil, err
	}
	return []engine.Event{e}, nil
}

// pendingEvents decodes a key of p/ read from etcd: its events, stamped
// with the sequence numbers its commit revision and position give.
func pendingEvents(k kv) ([]engine.Event, error) {
	evs, err := decodeEvents(k)
	if err != nil {
		return nil, err
	}
	if len(k.key) < 4 {
		return nil, fmt.Errorf("etcd store: malformed pending event key %q", k.key)
	}
	idx, err := strconv.ParseUint(k.key[len(k.key)-4:], 16, 16)
	if err != nil || idx+uint64(len(evs)) > 1<<seqShift {
		return nil, fmt.Errorf("etcd store: malformed pending event key %q", k.key)
	}
	for i := range evs {
		evs[i].Seq = seqOf(k.mod, idx+uint64(i))
	}
	return evs, nil
}

// pending reads the events of p/ (below prefix p) committed at the
// snapshot, in sequence order; the transaction's own buffered appends have
// no sequence number yet and are left out.
func (t *tx) pending(p string) ([]engine.Event, error) {
	kvs, err := t.scan(p, prefixEnd(p), 0, false)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Event, 0, len(kvs))
	for _, k := range kvs {
		if k.mod == 0 {
			continue
		}
		evs, err := pendingEvents(k)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// highWater reads meta/seq: at least every sequence number of a deleted
// event (schema 2: the last one assigned).
func (t *tx) highWater() (uint64, error) {
	v, ok, err := t.get(t.s.key("meta/seq"))
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd store %s: unreadable meta/seq %q", t.s, v)
	}
	return n, nil
}

// raiseHighWater makes meta/seq at least n (Delete: the events it removes).
func (t *tx) raiseHighWater(n uint64) error {
	hw, err := t.highWater()
	if err != nil || n <= hw {
		return err
	}
	t.put(t.s.key("meta/seq"), []byte(strconv.FormatUint(n, 10)))
	return nil
}

// LastSeq is the largest of meta/seq and the last event appended
// (meta/last_append); before the first append of schema 4, of meta/seq,
// the last key of e/ and the pending events. Inside an Update it reads
// keys every append changes, so an Update that calls it conflicts with
// every concurrent append (the engine calls it only in Views).
func (t *tx) LastSeq() (uint64, error) {
	last, err := t.highWater()
	if err != nil {
		return 0, err
	}
	if v, ok, err := t.get(t.s.key(lastAppendKey)); err != nil {
		return 0, err
	} else if n, perr := strconv.ParseUint(string(v), 10, 64); ok && perr == nil && n > 0 {
		return max(last, seqOf(t.reads[t.s.key(lastAppendKey)], n-1)), nil
	}
	p := t.s.key("e/")
	kvs, err := t.scan(p, prefixEnd(p), 1, true)
	if err != nil {
		return 0, err
	}
	if len(kvs) == 1 {
		n, err := strconv.ParseUint(strings.TrimPrefix(kvs[0].key, p), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("etcd store: malformed event key %q", kvs[0].key)
		}
		last = max(last, n)
	}
	pend, err := t.pending(t.s.key("p/"))
	if err != nil {
		return 0, err
	}
	if len(pend) > 0 {
		last = max(last, pend[len(pend)-1].Seq)
	}
	return last, nil
}

// Append writes the events to keys of p/ (those of one flow one after the
// other share one), read by nothing a writer reads, so appends conflict
// with nothing; they stay there (schema 7). The sequence numbers come from
// the commit's etcd revision: they are stamped into the caller's events
// when the commit succeeds (see commit).
func (t *tx) Append(events ...engine.Event) error {
	if err := t.writable(); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	if t.appended+uint64(len(events)) > 1<<seqShift {
		return fmt.Errorf("etcd store: more than %d events in one transaction", 1<<seqShift)
	}
	for i := range events {
		e := &events[i]
		e.Seq = 0
		if e.Time.IsZero() {
			e.Time = t.s.now()
		}
		if err := validFlowID(e.FlowID); err != nil && e.FlowID != "" {
			return err
		}
		b, err := e.AppendJSON(make([]byte, 0, 512))
		if err != nil {
			return fmt.Errorf("etcd store: encode event: %w", err)
		}
		// The events of one flow appended one after the other share a key.
		k := t.batchKey
		if prev, ok := t.writes[k]; ok && len(t.stamps) > 0 && t.stamps[len(t.stamps)-1].FlowID == e.FlowID {
			t.put(k, appendBatch(prev, b))
		} else {
			k = t.pendingKey(e.FlowID, t.appended)
			t.batchKey = k
			t.put(k, b)
		}
		t.stamps = append(t.stamps, e)
		t.appended++
	}
	return nil
}

// stamp gives the events appended by a transaction committed at revision
// rev their sequence numbers.
func (t *tx) stamp(rev int64) {
	for i, e := range t.stamps {
		e.Seq = seqOf(rev, uint64(i))
	}
}

// tombstones reads d/: deleted flows whose events are hidden up to a seq.
func (t *tx) tombstones() (map[string]uint64, error) {
	p := t.s.key("d/")
	kvs, err := t.scan(p, prefixEnd(p), 0, false)
	if err != nil || len(kvs) == 0 {
		return nil, err
	}
	out := map[string]uint64{}
	for _, k := range kvs {
		n, _ := strconv.ParseUint(string(k.val), 10, 64)
		out[strings.TrimPrefix(k.key, p)] = n
	}
	return out, nil
}

func decodeEvent(k kv) (engine.Event, error) {
	var e engine.Event
	if err := e.UnmarshalJSON(bytes.Clone(k.val)); err != nil {
		return e, fmt.Errorf("etcd store: cannot decode the event at %q: %w", k.key, err)
	}
	return e, nil
}

// Events is read from the Store's feed when it holds them (feed.go: a
// Watch runs in this process), else from the log (logEvents).
func (t *tx) Events(after uint64, limit int) ([]engine.Event, error) {
	if evs, ok, err := t.eventsFromFeed(after, limit); err != nil || ok {
		return evs, err
	}
	return t.logEvents(after, limit)
}

// logEvents merges the log of schema 6 and before, e/ (from after, at most
// limit), with the log of p/ after the cursor (logTail), all read at the
// snapshot revision. An event a stratum of schema 6 still running moved
// from p/ to e/ meanwhile is found in one of them at the snapshot, or in
// both when the tail came from etcd's history: it is kept once.
func (t *tx) logEvents(after uint64, limit int) ([]engine.Event, error) {
	dead, err := t.tombstones()
	if err != nil {
		return nil, err
	}
	p := t.s.key("e/")
	end := prefixEnd(p)
	var out []engine.Event
	// A key holds the events of one commit from its key's number on:
	// the first that may hold one after `after` is its commit's first.
	from := p + hex16(after&^(1<<seqShift-1))
	for {
		batch := 0
		if limit > 0 {
			batch = limit - len(out)
		}
		kvs, err := t.scan(from, end, batch, false)
		if err != nil {
			return nil, err
		}
		for _, k := range kvs {
			evs, err := decodeEvents(k)
			if err != nil {
				return nil, err
			}
			from = k.key + "\x00"
			for _, e := range evs {
				if d, ok := dead[e.FlowID]; e.Seq <= after || (ok && e.Seq <= d) {
					continue
				}
				out = append(out, e)
			}
		}
		if batch == 0 || len(kvs) < batch || len(out) >= limit {
			break
		}
	}
	tail, err := t.logTail(after, limit, dead)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return tail, nil
	}
	out = append(out, tail...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	out = slices.CompactFunc(out, func(a, b engine.Event) bool { return a.Seq == b.Seq })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (t *tx) FlowEvents(flowID string) ([]engine.Event, error) {
	var hide uint64
	if v, ok, err := t.get(t.s.key("d/", flowID)); err != nil {
		return nil, err
	} else if ok {
		hide, _ = strconv.ParseUint(string(v), 10, 64)
	}
	p := t.s.key("x/", flowID, "\x00")
	kvs, err := t.scan(p, prefixEnd(p), 0, false)
	if err != nil {
		return nil, err
	}
	pend, err := t.pending(t.s.key("p/", flowID, "\x00"))
	if err != nil {
		return nil, err
	}
	out := make([]engine.Event, 0, len(kvs)+len(pend))
	for _, k := range kvs {
		evs, err := decodeEvents(k)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			if e.Seq > hide {
				out = append(out, e)
			}
		}
	}
	for _, e := range pend {
		if e.Seq > hide {
			out = append(out, e)
		}
	}
	return out, nil
}

// ---- purging tombstoned flows ----

// purgeFlow removes the events a tombstone d/<id> hides, in batches, then
// the tombstone (unless the flow was deleted again meanwhile).
func (s *Store) purgeFlow(ctx context.Context, flowID string) error {
	s.purging.Lock()
	defer s.purging.Unlock()
	c, cancel := context.WithTimeout(ctx, 10*s.timeout)
	defer cancel()
	dk := s.key("d/", flowID)
	r, err := s.cli.Get(c, dk)
	if err != nil || len(r.Kvs) == 0 {
		return err
	}
	upTo, _ := strconv.ParseUint(string(r.Kvs[0].Value), 10, 64)
	dmod := r.Kvs[0].ModRevision
	// The events of p/ (a page of keys at a time, no value; those put
	// after the tombstone belong to a flow created again with the id).
	pp := s.key("p/", flowID, "\x00")
	for start := pp; ; {
		pr, err := s.cli.Get(c, start, clientv3.WithRange(prefixEnd(pp)), clientv3.WithLimit(inlineEvents), clientv3.WithKeysOnly())
		if err != nil {
			return err
		}
		var ops []clientv3.Op
		for _, k := range pr.Kvs {
			if uint64(k.ModRevision) <= upTo>>seqShift {
				ops = append(ops, clientv3.OpDelete(string(k.Key)))
			}
		}
		if len(ops) > 0 {
			if _, err := s.cli.Txn(c).Then(ops...).Commit(); err != nil {
				return err
			}
		}
		if !pr.More || len(pr.Kvs) == 0 {
			break
		}
		start = string(pr.Kvs[len(pr.Kvs)-1].Key) + "\x00"
	}
	xp := s.key("x/", flowID, "\x00")
	for {
		rr, err := s.cli.Get(c, xp, clientv3.WithRange(xp+hex16(upTo+1)), clientv3.WithLimit(inlineEvents), clientv3.WithKeysOnly())
		if err != nil {
			return err
		}
		if len(rr.Kvs) == 0 {
			break
		}
		ops := make([]clientv3.Op, 0, 2*len(rr.Kvs))
		for _, k := range rr.Kvs {
			ops = append(ops, clientv3.OpDelete(string(k.Key)), clientv3.OpDelete(s.key("e/", strings.TrimPrefix(string(k.Key), xp))))
		}
		if _, err := s.cli.Txn(c).Then(ops...).Commit(); err != nil {
			return err
		}
	}
	_, err = s.cli.Txn(c).If(clientv3.Compare(clientv3.ModRevision(dk), "=", dmod)).Then(clientv3.OpDelete(dk)).Commit()
	return err
}

// purgeAll finishes every pending purge (a process that tombstoned a flow
// may have died before purging it).
func (s *Store) purgeAll(ctx context.Context) error {
	c, cancel := context.WithTimeout(ctx, s.timeout)
	p := s.key("d/")
	r, err := s.cli.Get(c, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	cancel()
	if err != nil {
		return s.wrap("gc", err)
	}
	for _, k := range r.Kvs {
		if err := s.purgeFlow(ctx, strings.TrimPrefix(string(k.Key), p)); err != nil {
			return s.wrap("gc", err)
		}
	}
	return nil
}
