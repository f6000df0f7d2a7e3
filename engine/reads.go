package engine

import (
	"context"
	"errors"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// read runs one read in a Store.View and returns its result.
func read[T any](ctx context.Context, s *Service, fn func(tx Tx) (T, error)) (T, error) {
	var out T
	err := s.Store.View(ctx, func(tx Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

// Get returns a flow's state (an error wrapping ErrNotFound when unknown).
// A damaged flow's error is reported (OnDamaged) and returned.
func (q Query) Get(ctx context.Context, flowID string) (*state.FlowState, error) {
	st, err := read(ctx, q.s, func(tx Tx) (*state.FlowState, error) { return tx.Get(flowID) })
	if err != nil {
		q.s.noteDamagedErr(err)
	}
	return st, err
}

// List returns summaries of the flows matching f, newest first, leaving
// out damaged flows (reported: OnDamaged).
func (q Query) List(ctx context.Context, f ListFilter) ([]state.FlowSummary, error) {
	return q.s.listing(read(ctx, q.s, func(tx Tx) ([]state.FlowSummary, error) { return tx.List(f) }))
}

// Count returns how many flows List(f) returns without f.Limit, from the
// store's listing indexes (Tx.Count: no summary is read). A flow this
// Service found damaged, which List leaves out, is left out of the total
// too while its stored state still fails to read; a count by status, or a
// flow whose summary alone is damaged, may include it (a header's count
// can then be one above the rows listed).
func (q Query) Count(ctx context.Context, f ListFilter) (int, error) {
	damaged := q.DamagedFlowIDs()
	return read(ctx, q.s, func(tx Tx) (int, error) {
		n, err := tx.Count(f)
		if err != nil || f.Status != "" {
			return n, err
		}
		for _, id := range damaged {
			if _, err := tx.Get(id); err != nil && !errors.Is(err, ErrNotFound) {
				n-- // still stored, still damaged
			}
		}
		return max(n, 0), nil
	})
}

// PendingGates returns every flow waiting at a gate, leaving out damaged
// flows (reported: OnDamaged).
func (q Query) PendingGates(ctx context.Context) ([]state.FlowSummary, error) {
	return q.s.listing(read(ctx, q.s, Tx.PendingGates))
}

// listing is a List or PendingGates answer without the damaged flows.
func (s *Service) listing(sums []state.FlowSummary, err error) ([]state.FlowSummary, error) {
	if err = s.skipDamaged(err); err != nil {
		return nil, err
	}
	return s.withoutDamaged(sums), nil
}

// Events returns up to limit events with a sequence number above after, in
// order (limit <= 0: no limit).
func (q Query) Events(ctx context.Context, after uint64, limit int) ([]Event, error) {
	return read(ctx, q.s, func(tx Tx) ([]Event, error) { return tx.Events(after, limit) })
}

// FlowEvents returns every event of one flow, in order.
func (q Query) FlowEvents(ctx context.Context, flowID string) ([]Event, error) {
	return read(ctx, q.s, func(tx Tx) ([]Event, error) { return tx.FlowEvents(flowID) })
}

// LastSeq is the last sequence number assigned (0 for an empty log).
func (q Query) LastSeq(ctx context.Context) (uint64, error) {
	return read(ctx, q.s, Tx.LastSeq)
}

// GC deletes the flows that finished more than olderThan ago, with their
// events (Store.GC), and returns how many.
func (s *Service) GC(ctx context.Context, olderThan time.Duration) (int, error) {
	return s.Store.GC(ctx, olderThan)
}

// Query is the read side of a Service: flows, summaries, events, pending
// gates and reviews, as the store holds them. It shares its Service's
// record of damaged flows (OnDamaged, once per flow) and its cache of
// parsed specs. Get one with Service.Query.
type Query struct{ s *Service }

// Query returns the read side of s.
func (s *Service) Query() Query { return Query{s: s} }
