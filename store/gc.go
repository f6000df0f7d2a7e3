package store

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// gcBatch bounds how many flows one GC write transaction deletes, so other
// processes are not kept waiting for the lock by a large prune.
const gcBatch = 256

// GC deletes the flows whose summary is Prunable at olderThan before now (by
// the store's clock) — finished and unchanged since — with their events and
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
					return corruptError(s.path, "cannot decode summary of flow "+string(k), err)
				}
				if sum.Prunable(cutoff) {
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
					if sum == nil || !sum.Prunable(cutoff) {
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
