package store

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// gcBatch bounds how many flows one GC write transaction deletes, so other
// processes are not kept waiting for the lock by a large prune.
const gcBatch = 256

// GC deletes the flows engine.PrunableLine allows at olderThan before now
// (by the store's clock) — finished and unchanged since, and no ancestor
// unfinished (a finished child of a running parent is kept) — with their events and
// index entries, and returns how many it deleted. Running flows and flows
// awaiting a gate are never pruned. It scans the summaries in one read
// transaction, then deletes in write transactions of at most gcBatch flows,
// re-checking each candidate inside the transaction that deletes it, so a
// flow revived meanwhile by another process survives.
func (s *Store) GC(ctx context.Context, olderThan time.Duration) (deleted int, err error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("store: %w: negative GC age %v", ErrInvalid, olderThan)
	}
	cutoff := s.now().Add(-olderThan)
	var candidates []string
	err = s.run(ctx, modeRead, func(btx *bolt.Tx) error {
		return s.guard(func() error {
			sums := btx.Bucket(bucketSummaries)
			if sums == nil {
				return corruptError(s.path, "bucket \"summaries\" is missing", nil)
			}
			return sums.ForEach(func(k, v []byte) error {
				sum, err := decodeSummary(v)
				if err != nil {
					return nil // a damaged record: never pruned (QuarantineDamaged)
				}
				ok, err := engine.PrunableLine(sum, cutoff, func(id string) (*state.FlowSummary, error) {
					v := sums.Get([]byte(id))
					if v == nil {
						return nil, nil
					}
					p, err := decodeSummary(v)
					if err != nil {
						return nil, damagedRecord(s.path, id, "summary", err)
					}
					return p, nil
				})
				if _, damaged := engine.DamagedFlows(err); damaged {
					return nil // an ancestor is damaged: kept
				}
				if err != nil {
					return err
				}
				if ok {
					candidates = append(candidates, string(k))
				}
				return nil
			})
		})
	})
	if err != nil {
		return 0, err
	}
	for len(candidates) > 0 {
		n := min(gcBatch, len(candidates))
		batch := candidates[:n]
		candidates = candidates[n:]
		count := 0
		err := s.run(ctx, modeWrite, func(btx *bolt.Tx) error {
			t := &tx{s: s, btx: btx}
			defer func() { t.done = true }()
			count = 0
			return s.guard(func() error {
				sums, err := t.bucket(bucketSummaries)
				if err != nil {
					return err
				}
				for _, id := range batch {
					sum, err := t.getSummary(sums, []byte(id))
					if err != nil {
						return err
					}
					ok, err := engine.PrunableLine(sum, cutoff, func(id string) (*state.FlowSummary, error) {
						return t.getSummary(sums, []byte(id))
					})
					if _, damaged := engine.DamagedFlows(err); damaged {
						continue
					}
					if err != nil {
						return err
					}
					if !ok {
						continue
					}
					if err := t.deleteFlow(id); err != nil {
						return err
					}
					count++
				}
				return nil
			})
		})
		if err != nil {
			return deleted, err
		}
		deleted += count
	}
	return deleted, nil
}
