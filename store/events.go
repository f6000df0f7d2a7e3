package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"
)

// Append adds events to the log, stamping each (in the caller's slice) with
// the next global sequence number (strictly increasing across all
// processes) and, when zero, the store's clock as Time. Events with a
// FlowID are indexed under that flow and deleted with it.
func (t *tx) Append(events ...engine.Event) error {
	for i := range events {
		if events[i].FlowID != "" {
			if err := validFlowID(events[i].FlowID); err != nil {
				return err
			}
		}
	}
	err := t.do(true, func() error {
		log, idx, err := t.eventBuckets()
		if err != nil {
			return err
		}
		now := t.s.now()
		for i := range events {
			ev := &events[i]
			seq, err := log.NextSequence()
			if err != nil {
				return err
			}
			ev.Seq = seq
			if ev.Time.IsZero() {
				ev.Time = now
			}
			data, err := encodeEvent(ev)
			if err != nil {
				return fmt.Errorf("store: encode %s event of flow %s: %w", ev.Type, ev.FlowID, err)
			}
			if err := log.Put(u64(seq), data); err != nil {
				return err
			}
			if ev.FlowID != "" {
				if err := idx.Put(flowEventKey(ev.FlowID, seq), nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil {
		t.appended = append(t.appended, events...)
	}
	return err
}

// Events returns up to limit events with a sequence number greater than
// after, in sequence order; limit <= 0 means no limit. Sequence numbers are
// never reused, though GC and Delete leave gaps.
func (t *tx) Events(after uint64, limit int) ([]engine.Event, error) {
	var out []engine.Event
	err := t.do(false, func() error {
		log, err := t.bucket(bucketEvents)
		if err != nil {
			return err
		}
		if after == ^uint64(0) {
			return nil
		}
		c := log.Cursor()
		for k, v := c.Seek(u64(after + 1)); k != nil && isSeqKey(k); k, v = c.Next() {
			ev, err := t.decodeEvent(k, v)
			if err != nil {
				return err
			}
			out = append(out, ev)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FlowEvents returns every event of one flow in sequence order (empty if
// the flow has none or does not exist).
func (t *tx) FlowEvents(flowID string) ([]engine.Event, error) {
	if err := validFlowID(flowID); err != nil {
		return nil, err
	}
	var out []engine.Event
	err := t.do(false, func() error {
		log, idx, err := t.eventBuckets()
		if err != nil {
			return err
		}
		prefix := flowEventPrefix(flowID)
		c := idx.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			seqKey := k[len(prefix):]
			v := log.Get(seqKey)
			if v == nil {
				return corruptError(t.s.path, fmt.Sprintf("event index of flow %q names missing event %x", flowID, seqKey), nil)
			}
			ev, err := t.decodeEvent(seqKey, v)
			if err != nil {
				return err
			}
			out = append(out, ev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LastSeq returns the last sequence number ever assigned (0 for an empty
// log). It never decreases, even when events are pruned.
func (t *tx) LastSeq() (uint64, error) {
	var seq uint64
	err := t.do(false, func() error {
		log, err := t.bucket(bucketEvents)
		if err != nil {
			return err
		}
		seq = log.Sequence()
		return nil
	})
	return seq, err
}

// eventBuckets returns the log and its per-flow index: one bucket since
// schema 3, so an Append dirties one B-tree path less.
func (t *tx) eventBuckets() (log, idx *bolt.Bucket, err error) {
	if log, err = t.bucket(bucketEvents); err != nil {
		return nil, nil, err
	}
	return log, log, nil
}

// isSeqKey tells the log's keys (8-byte sequence numbers) from its per-flow
// index keys (flow id ‖ 0x00 ‖ sequence, at least 10 bytes).
func isSeqKey(k []byte) bool { return len(k) == 8 }

func (t *tx) decodeEvent(k, v []byte) (engine.Event, error) {
	var ev engine.Event
	if len(k) != 8 {
		return ev, corruptError(t.s.path, fmt.Sprintf("bad event key %x", k), nil)
	}
	if err := ev.UnmarshalJSON(bytes.Clone(v)); err != nil {
		return ev, corruptError(t.s.path, fmt.Sprintf("cannot decode event %d", binary.BigEndian.Uint64(k)), err)
	}
	return ev, nil
}

// Follows is engine.Store's rule of sequence numbers: this store numbers
// its events consecutively (Append), so seq follows after when it is the
// next number.
func (s *Store) Follows(after, seq uint64) bool { return seq == after+1 }
