package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/store/etcdstore"
)

// Counts is what a store holds.
type Counts struct {
	Flows    int                      `json:"flows"`
	ByStatus map[state.FlowStatus]int `json:"by_status"`
	Gates    int                      `json:"pending_gates"`
	Events   int                      `json:"events"`
	LastSeq  uint64                   `json:"last_seq"`
	Cache    int                      `json:"cache_entries"`
	// Records are the keyed records (guarded resources and goals).
	Records int `json:"guard_records"`
}

// Count reads the counts of o.
func (o *Opened) Count(ctx context.Context) (Counts, error) {
	c := Counts{ByStatus: map[state.FlowStatus]int{}}
	err := o.View(ctx, func(tx engine.Tx) error {
		sums, err := tx.List(engine.ListFilter{})
		if err != nil {
			return err
		}
		c.Flows = len(sums)
		for _, s := range sums {
			c.ByStatus[s.Status]++
		}
		g, err := tx.PendingGates()
		if err != nil {
			return err
		}
		c.Gates = len(g)
		evs, err := tx.Events(0, 0)
		if err != nil {
			return err
		}
		c.Events = len(evs)
		if c.LastSeq, err = tx.LastSeq(); err != nil {
			return err
		}
		keys, err := tx.GuardKeys()
		c.Records = len(keys)
		return err
	})
	if err != nil {
		return c, err
	}
	keys, err := o.cacheKeys(ctx)
	c.Cache = len(keys)
	return c, err
}

// cacheKeys lists the cache (the port cannot: each backend can).
func (o *Opened) cacheKeys(ctx context.Context) ([]string, error) {
	if e, ok := o.Store.(*etcdstore.Store); ok {
		return e.CacheKeys(ctx)
	}
	// The bbolt file's cache bucket (store/doc.go, "Schema"), read-only
	// under bbolt's shared lock like any View of the store.
	db, err := bolt.Open(o.Location.Path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", o.Location.Path, err)
	}
	defer db.Close()
	var keys []string
	err = db.View(func(btx *bolt.Tx) error {
		b := btx.Bucket([]byte("cache"))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
	})
	return keys, err
}

// ErrNotEmpty is returned by Copy when the destination holds flows or
// events and force is not set.
var ErrNotEmpty = errors.New("the destination store is not empty")

// ErrSourceEmpty is returned by Copy when the source holds nothing at all:
// most often a mistyped path or etcd prefix, which would otherwise "copy"
// zero flows without a word.
var ErrSourceEmpty = errors.New("the source store is empty")

// eventsPerTx bounds the events copied in one transaction (an etcd
// transaction holds at most 128 operations by default; an event is two).
const eventsPerTx = 50

// Copy copies every flow (state, summary, stamps), the event log (in order;
// sequence numbers are assigned afresh by dst, densely) and the cache from
// src to dst. dst must be empty unless force: then every flow of src, and
// every flow with events in src, is first deleted from dst with its events,
// so copying again gives the same result (the copy is idempotent). Copied
// flows keep their stamps: Tx.Put stores them as given. Each flow and each batch of events
// is its own transaction: an interrupted copy is finished by running it
// again with force.
func Copy(ctx context.Context, src, dst *Opened, force bool) (Counts, error) {
	var n Counts
	if !force {
		if err := refuseNonEmpty(ctx, dst); err != nil {
			return n, err
		}
	}
	var sums []state.FlowSummary
	var evs []engine.Event
	if err := src.View(ctx, func(tx engine.Tx) error {
		var err error
		if sums, err = tx.List(engine.ListFilter{}); err != nil {
			return err
		}
		evs, err = tx.Events(0, 0)
		return err
	}); err != nil {
		return n, err
	}
	if len(sums) == 0 && len(evs) == 0 {
		if keys, err := src.cacheKeys(ctx); err != nil || len(keys) == 0 {
			return n, fmt.Errorf("%w: %s holds no flow, event or cache entry; check its path or etcd prefix (nothing was copied)", ErrSourceEmpty, src.Name())
		}
	}
	if force {
		ids := map[string]bool{}
		for _, s := range sums {
			ids[s.FlowID] = true
		}
		for _, e := range evs {
			ids[e.FlowID] = true
		}
		for _, id := range slices.Sorted(func(y func(string) bool) {
			for id := range ids {
				if !y(id) {
					return
				}
			}
		}) {
			if err := dst.Update(ctx, func(tx engine.Tx) error { return tx.Delete(id) }); err != nil {
				return n, err
			}
		}
	}
	// Oldest first, so a listing of the copy is in the same order.
	slices.Reverse(sums)
	for _, sum := range sums {
		var st *state.FlowState
		if err := src.View(ctx, func(tx engine.Tx) error {
			var err error
			st, err = tx.Get(sum.FlowID)
			return err
		}); errors.Is(err, engine.ErrNotFound) {
			continue // deleted meanwhile
		} else if err != nil {
			return n, err
		}
		// Stored as it is, stamps included; dst has no such flow (it was
		// empty, or force deleted it).
		err := dst.Update(ctx, func(tx engine.Tx) error { return tx.Put(st, sum, engine.NotStored) })
		if err != nil {
			return n, fmt.Errorf("copying flow %s: %w", sum.FlowID, err)
		}
		n.Flows++
	}
	for i := 0; i < len(evs); i += eventsPerTx {
		batch := evs[i:min(i+eventsPerTx, len(evs))]
		if err := dst.Update(ctx, func(tx engine.Tx) error {
			c := slices.Clone(batch)
			for j := range c {
				c[j].Seq = 0
			}
			return tx.Append(c...)
		}); err != nil {
			return n, fmt.Errorf("copying events: %w", err)
		}
		n.Events += len(batch)
	}
	cached, err := copyCache(ctx, src, dst)
	n.Cache = cached
	if err != nil {
		return n, err
	}
	n.Records, err = copyRecords(ctx, src, dst)
	return n, err
}

// copyRecords copies every keyed record (a guarded resource's or a goal's
// registration and ledger) into dst, one transaction each: entries dst
// already holds must be the source's first ones (a ledger only grows), the
// rest are appended.
func copyRecords(ctx context.Context, src, dst *Opened) (int, error) {
	var keys []string
	if err := src.View(ctx, func(tx engine.Tx) error {
		var err error
		keys, err = tx.GuardKeys()
		return err
	}); err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		var reg []byte
		var entries [][]byte
		if err := src.View(ctx, func(tx engine.Tx) error {
			var err error
			if reg, _, err = tx.GuardGet(k); err != nil {
				return err
			}
			entries, err = tx.GuardEntries(k)
			return err
		}); err != nil {
			return n, err
		}
		err := dst.Update(ctx, func(tx engine.Tx) error {
			have, err := tx.GuardEntries(k)
			if err != nil {
				return err
			}
			if len(have) > len(entries) {
				return fmt.Errorf("record %s: the destination's ledger is longer than the source's", k)
			}
			for i, e := range have {
				if !bytes.Equal(e, entries[i]) {
					return fmt.Errorf("record %s: entry %d differs in the destination; a ledger is append-only", k, i)
				}
			}
			for i := len(have); i < len(entries); i++ {
				if err := tx.GuardAppend(k, i, entries[i]); err != nil {
					return err
				}
			}
			return tx.GuardPut(k, reg)
		})
		if err != nil {
			return n, fmt.Errorf("copying keyed records: %w", err)
		}
		n++
	}
	return n, nil
}

// refuseNonEmpty is ErrNotEmpty when dst holds a flow or an event.
func refuseNonEmpty(ctx context.Context, dst *Opened) error {
	var nonEmpty bool
	if err := dst.View(ctx, func(tx engine.Tx) error {
		sums, err := tx.List(engine.ListFilter{Limit: 1})
		if err != nil {
			return err
		}
		last, err := tx.LastSeq()
		nonEmpty = len(sums) > 0 || last > 0
		return err
	}); err != nil {
		return err
	}
	if nonEmpty {
		return fmt.Errorf("%w (%s); pass --force to replace the flows it shares with the source", ErrNotEmpty, dst.Name())
	}
	return nil
}

// copyCache copies every result-cache entry of src into dst, one
// transaction each, and returns how many.
func copyCache(ctx context.Context, src, dst *Opened) (int, error) {
	n := 0
	keys, err := src.cacheKeys(ctx)
	if err != nil {
		return n, err
	}
	for _, k := range keys {
		var v []byte
		var ok bool
		if err := src.View(ctx, func(tx engine.Tx) error {
			var err error
			v, ok, err = tx.CacheGet(k)
			return err
		}); err != nil {
			return n, err
		}
		if !ok {
			continue
		}
		if err := dst.Update(ctx, func(tx engine.Tx) error { return tx.CachePut(k, v) }); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
