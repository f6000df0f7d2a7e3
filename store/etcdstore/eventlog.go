package etcdstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	sjson "github.com/segmentio/encoding/json"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
)

// ---- the event log ----

func (t *tx) LastSeq() (uint64, error) {
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

func (t *tx) Append(events ...engine.Event) error {
	if err := t.writable(); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	seq, err := t.LastSeq()
	if err != nil {
		return err
	}
	for i := range events {
		e := &events[i]
		seq++
		e.Seq = seq
		if e.Time.IsZero() {
			e.Time = t.s.now()
		}
		b, err := e.AppendJSON(make([]byte, 0, 512))
		if err != nil {
			return fmt.Errorf("etcd store: encode event: %w", err)
		}
		if err := validFlowID(e.FlowID); err != nil && e.FlowID != "" {
			return err
		}
		t.put(t.s.key("e/", hex16(seq)), b)
		t.put(t.s.key("x/", e.FlowID, "\x00", hex16(seq)), b)
	}
	t.put(t.s.key("meta/seq"), []byte(strconv.FormatUint(seq, 10)))
	return nil
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
	if err := sjson.Unmarshal(bytes.Clone(k.val), &e); err != nil {
		return e, fmt.Errorf("etcd store: cannot decode the event at %q: %w", k.key, err)
	}
	return e, nil
}

func (t *tx) Events(after uint64, limit int) ([]engine.Event, error) {
	dead, err := t.tombstones()
	if err != nil {
		return nil, err
	}
	p := t.s.key("e/")
	end := prefixEnd(p)
	var out []engine.Event
	for {
		batch := 0
		if limit > 0 {
			batch = limit - len(out)
		}
		kvs, err := t.scan(p+hex16(after+1), end, batch, false)
		if err != nil {
			return nil, err
		}
		for _, k := range kvs {
			e, err := decodeEvent(k)
			if err != nil {
				return nil, err
			}
			after = e.Seq
			if d, ok := dead[e.FlowID]; ok && e.Seq <= d {
				continue
			}
			out = append(out, e)
		}
		if batch == 0 || len(kvs) < batch || len(out) >= limit || after == ^uint64(0) {
			return out, nil
		}
	}
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
	out := make([]engine.Event, 0, len(kvs))
	for _, k := range kvs {
		e, err := decodeEvent(k)
		if err != nil {
			return nil, err
		}
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
