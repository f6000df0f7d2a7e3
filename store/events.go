package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"
)

// Events returns up to limit events with a sequence number greater than
// afterSeq, in sequence order; limit <= 0 means no limit. A tailer keeps the
// last Seq it saw and passes it back as afterSeq. Sequence numbers are never
// reused, though GC and Delete leave gaps.
func (s *Store) Events(ctx context.Context, afterSeq uint64, limit int) ([]engine.Event, error) {
	var out []engine.Event
	err := s.run(ctx, modeRead, func(btx *bolt.Tx) error {
		return s.guard(func() error {
			log := btx.Bucket(bucketEvents)
			if log == nil {
				return corruptError(s.path, "bucket \"events\" is missing", nil)
			}
			if afterSeq == ^uint64(0) {
				return nil
			}
			c := log.Cursor()
			for k, v := c.Seek(u64(afterSeq + 1)); k != nil; k, v = c.Next() {
				ev, err := s.decodeEvent(k, v)
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
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FlowEvents returns every event of one flow in sequence order (empty if
// the flow has none or does not exist).
func (s *Store) FlowEvents(ctx context.Context, flowID string) ([]engine.Event, error) {
	if err := validFlowID(flowID); err != nil {
		return nil, err
	}
	var out []engine.Event
	err := s.run(ctx, modeRead, func(btx *bolt.Tx) error {
		return s.guard(func() error {
			log, idx := btx.Bucket(bucketEvents), btx.Bucket(bucketFlowEvents)
			if log == nil || idx == nil {
				return corruptError(s.path, "event buckets are missing", nil)
			}
			prefix := flowEventPrefix(flowID)
			c := idx.Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				seqKey := k[len(prefix):]
				v := log.Get(seqKey)
				if v == nil {
					return corruptError(s.path, fmt.Sprintf("event index of flow %q names missing event %x", flowID, seqKey), nil)
				}
				ev, err := s.decodeEvent(seqKey, v)
				if err != nil {
					return err
				}
				out = append(out, ev)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LastSeq returns the last sequence number ever assigned (0 for an empty
// log). It never decreases, even when events are pruned.
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	var seq uint64
	err := s.run(ctx, modeRead, func(btx *bolt.Tx) error {
		return s.guard(func() error {
			log := btx.Bucket(bucketEvents)
			if log == nil {
				return corruptError(s.path, "bucket \"events\" is missing", nil)
			}
			seq = log.Sequence()
			return nil
		})
	})
	return seq, err
}

func (s *Store) decodeEvent(k, v []byte) (engine.Event, error) {
	var ev engine.Event
	if len(k) != 8 {
		return ev, corruptError(s.path, fmt.Sprintf("bad event key %x", k), nil)
	}
	if err := json.Unmarshal(bytes.Clone(v), &ev); err != nil {
		return ev, corruptError(s.path, fmt.Sprintf("cannot decode event %d", binary.BigEndian.Uint64(k)), err)
	}
	return ev, nil
}
