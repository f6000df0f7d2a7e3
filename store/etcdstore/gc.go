package etcdstore

import (
	"context"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// GC deletes the flows engine.PrunableLine allows at olderThan before the
// store's clock, with their events, one etcd transaction per flow: each
// re-reads the flow's summary and its ancestors' and is retried like any
// Update, so a flow another writer changed meanwhile is judged afresh. It
// also finishes the purges of deleted flows that a process left behind.
func (s *Store) GC(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("etcd store: negative GC age %v", olderThan)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	cutoff := s.now().Add(-olderThan)
	var candidates []string
	if err := s.View(ctx, func(etx engine.Tx) error {
		t := etx.(*tx)
		sums, err := t.List(engine.ListFilter{})
		if err != nil {
			return err
		}
		for i := range sums {
			if ok, err := engine.PrunableLine(&sums[i], cutoff, t.lookup); err != nil {
				return err
			} else if ok {
				candidates = append(candidates, sums[i].FlowID)
			}
		}
		return nil
	}); err != nil {
		return 0, err
	}
	n := 0
	for _, id := range candidates {
		deleted := false
		err := s.Update(ctx, func(etx engine.Tx) error {
			t := etx.(*tx)
			deleted = false
			sum, err := t.summary(id)
			if err != nil || sum == nil {
				return err
			}
			if ok, err := engine.PrunableLine(sum, cutoff, t.lookup); err != nil || !ok {
				return err
			}
			deleted = true
			return t.Delete(id)
		})
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	if err := s.purgeAll(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// lookup is PrunableLine's view of an ancestor's summary.
func (t *tx) lookup(id string) (*state.FlowSummary, error) {
	sum, err := t.summary(id)
	if err != nil {
		return nil, err
	}
	if sum == nil {
		return nil, fmt.Errorf("flow %q: %w", id, engine.ErrNotFound)
	}
	return sum, nil
}
