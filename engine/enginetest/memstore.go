package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// errReadOnly is returned by writes inside View.
var errReadOnly = errors.New("enginetest: write in a read-only transaction")

// Store is an in-memory engine.Store. The zero value is not usable; call New.
type Store struct {
	// Now is the store's clock: GC's cutoff and the time of events
	// appended without one (default time.Now). The stamps of states are
	// the writer's (state.FlowState.Stamp).
	Now func() time.Time

	mu sync.Mutex
	d  *data
	// changed is closed (and replaced) by every commit that appends events:
	// it wakes the watchers.
	changed chan struct{}
}

// data is the committed content. An Update works on a copy and swaps it in
// when fn succeeds, so a failed or panicking transaction leaves no trace.
type data struct {
	flows  map[string]record
	events []engine.Event // in sequence order
	seq    uint64         // last sequence number ever assigned
	cache  map[string][]byte
	guards map[string][]byte   // registrations
	ledger map[string][][]byte // guard ledgers
}

// record is one flow: its state as JSON (so every Get decodes a private
// copy) and the summary Put was given, with the state's stamps.
type record struct {
	state []byte
	sum   state.FlowSummary
}

func (d *data) clone() *data {
	return &data{flows: maps.Clone(d.flows), events: append([]engine.Event(nil), d.events...), seq: d.seq, cache: maps.Clone(d.cache),
		guards: maps.Clone(d.guards), ledger: maps.Clone(d.ledger)}
}

// New returns an empty store.
func New() *Store {
	return &Store{d: &data{flows: map[string]record{}, cache: map[string][]byte{}, guards: map[string][]byte{}, ledger: map[string][][]byte{}}, changed: make(chan struct{})}
}

var _ engine.Store = (*Store)(nil)

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().Round(0)
	}
	return time.Now().Round(0)
}

// Update runs fn in one write transaction; if fn fails (or panics) nothing
// is written.
func (s *Store) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &tx{s: s, d: s.d.clone(), write: true}
	if err := fn(t); err != nil {
		return err
	}
	if t.d.seq != s.d.seq {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.d = t.d
	return nil
}

// watchBatch bounds how many events one delivery of Watch carries.
const watchBatch = 1000

// Watch delivers the committed events after the sequence number after, in
// order, until ctx ends (then the channel is closed). It is woken by this
// store's own commits and reads the log from the last event it delivered,
// Follows is engine.Store's rule of sequence numbers: events are numbered
// consecutively.
func (s *Store) Follows(after, seq uint64) bool { return seq == after+1 }

// so a slow consumer loses nothing.
func (s *Store) Watch(ctx context.Context, after uint64) (<-chan []engine.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make(chan []engine.Event)
	go func() {
		defer close(out)
		for {
			s.mu.Lock()
			evs, _ := (&tx{s: s, d: s.d}).Events(after, watchBatch)
			changed := s.changed
			s.mu.Unlock()
			if len(evs) > 0 {
				select {
				case out <- evs:
					after = evs[len(evs)-1].Seq
					continue
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// View runs fn in one read-only transaction.
func (s *Store) View(ctx context.Context, fn func(tx engine.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(&tx{s: s, d: s.d})
}

// GC deletes the flows engine.PrunableLine allows at olderThan before now
// (finished, unchanged since, no unfinished ancestor), with their events, in
// one transaction.
func (s *Store) GC(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("enginetest: negative GC age %v", olderThan)
	}
	n := 0
	err := s.Update(ctx, func(etx engine.Tx) error {
		t := etx.(*tx)
		cutoff := s.now().Add(-olderThan)
		n = 0
		lookup := func(id string) (*state.FlowSummary, error) {
			if r, ok := t.d.flows[id]; ok {
				return &r.sum, nil
			}
			return nil, engine.ErrNotFound
		}
		prunable := func(sum *state.FlowSummary) bool {
			ok, _ := engine.PrunableLine(sum, cutoff, lookup) // lookup never fails
			return ok
		}
		for _, sum := range t.summaries(prunable) {
			if err := t.Delete(sum.FlowID); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// Len returns the number of stored flows.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.d.flows)
}

// tx is one transaction over d: the committed data in a View, a private
// copy of it in an Update.
type tx struct {
	s     *Store
	d     *data
	write bool
}

func (t *tx) Get(flowID string) (*state.FlowState, error) {
	r, ok := t.d.flows[flowID]
	if !ok {
		return nil, fmt.Errorf("flow %q: %w", flowID, engine.ErrNotFound)
	}
	var st state.FlowState
	if err := json.Unmarshal(r.state, &st); err != nil {
		return nil, fmt.Errorf("flow %q: decoding: %w", flowID, err)
	}
	return &st, nil
}

// Put stores st and its summary if the flow is stored at version expect
// (engine.NotStored: absent), else fails with an *engine.VersionError.
func (t *tx) Put(st *state.FlowState, sum state.FlowSummary, expect int64) error {
	if !t.write {
		return errReadOnly
	}
	if st == nil || st.FlowID == "" {
		return errors.New("enginetest: Put of a flow without id")
	}
	if sum.FlowID != st.FlowID || sum.Status != st.Status {
		return fmt.Errorf("enginetest: Put of flow %q with the summary of %q (status %q, state's %q)",
			st.FlowID, sum.FlowID, sum.Status, st.Status)
	}
	if expect < engine.NotStored || st.Version <= expect {
		return fmt.Errorf("enginetest: Put of flow %q at version %d over version %d: a write moves the version on (FlowState.Stamp)", st.FlowID, st.Version, expect)
	}
	stored := engine.NotStored
	if old, ok := t.d.flows[st.FlowID]; ok {
		stored = old.sum.Version
	}
	if stored != expect {
		return &engine.VersionError{FlowID: st.FlowID, Expected: expect, Stored: stored}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("flow %q: encoding: %w", st.FlowID, err)
	}
	sum.CreatedAt, sum.UpdatedAt, sum.Version = st.CreatedAt, st.UpdatedAt, st.Version
	t.d.flows[st.FlowID] = record{state: b, sum: cloneSummary(sum)}
	return nil
}

// cloneSummary copies what sum points to, so no caller shares it.
func cloneSummary(sum state.FlowSummary) state.FlowSummary {
	if g := sum.Gate; g != nil {
		c := *g
		if g.Deadline != nil {
			d := *g.Deadline
			c.Deadline = &d
		}
		sum.Gate = &c
	}
	if o := sum.Owner; o != nil {
		c := *o
		sum.Owner = &c
	}
	if r := sum.Review; r != nil {
		c := *r
		sum.Review = &c
	}
	return sum
}

func (t *tx) Delete(flowID string) error {
	if !t.write {
		return errReadOnly
	}
	delete(t.d.flows, flowID)
	kept := t.d.events[:0]
	for _, e := range t.d.events {
		if e.FlowID != flowID {
			kept = append(kept, e)
		}
	}
	t.d.events = kept
	return nil
}

// summaries returns copies of the stored summaries that keep says, in the
// listing order: newest first, ties by flow id descending.
func (t *tx) summaries(keep func(*state.FlowSummary) bool) []state.FlowSummary {
	var out []state.FlowSummary
	for _, r := range t.d.flows {
		if keep(&r.sum) {
			out = append(out, cloneSummary(r.sum))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].FlowID > out[j].FlowID
	})
	return out
}

func (t *tx) List(f engine.ListFilter) ([]state.FlowSummary, error) {
	out := t.summaries(func(s *state.FlowSummary) bool {
		return (f.Status == "" || s.Status == f.Status) && f.After.Precedes(s.CreatedAt, s.FlowID)
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func (t *tx) Count(f engine.ListFilter) (int, error) {
	n := 0
	for _, r := range t.d.flows {
		if s := &r.sum; (f.Status == "" || s.Status == f.Status) && f.After.Precedes(s.CreatedAt, s.FlowID) {
			n++
		}
	}
	return n, nil
}

func (t *tx) PendingGates() ([]state.FlowSummary, error) {
	return t.summaries(func(s *state.FlowSummary) bool {
		return s.Status == state.StatusAwaitingGate && s.Gate != nil
	}), nil
}

// GatesDue is state.GatesDue of PendingGates: correct, not faster (the
// memory store keeps no deadline index).
func (t *tx) GatesDue(now time.Time) ([]state.FlowSummary, *time.Time, error) {
	pending, err := t.PendingGates()
	if _, damaged := engine.DamagedFlows(err); err != nil && !damaged {
		return nil, nil, err
	}
	due, next := state.GatesDue(pending, now)
	return due, next, err // err: the damaged flows, left out
}

func (t *tx) Append(events ...engine.Event) error {
	if !t.write {
		return errReadOnly
	}
	for i := range events {
		e := &events[i]
		t.d.seq++
		e.Seq = t.d.seq
		if e.Time.IsZero() {
			e.Time = t.s.now()
		}
		t.d.events = append(t.d.events, *e)
	}
	return nil
}

// Events returns up to limit events after the sequence number after.
func (t *tx) Events(after uint64, limit int) ([]engine.Event, error) {
	evs := t.d.events
	i := sort.Search(len(evs), func(i int) bool { return evs[i].Seq > after })
	evs = evs[i:]
	if limit > 0 && len(evs) > limit {
		evs = evs[:limit]
	}
	return append([]engine.Event(nil), evs...), nil
}

// FlowEvents returns one flow's events, in order.
func (t *tx) FlowEvents(flowID string) ([]engine.Event, error) {
	var out []engine.Event
	for _, e := range t.d.events {
		if e.FlowID == flowID {
			out = append(out, e)
		}
	}
	return out, nil
}

// LastSeq is the highest sequence number ever assigned (0 for a new store).
func (t *tx) LastSeq() (uint64, error) { return t.d.seq, nil }

func (t *tx) CacheGet(key string) ([]byte, bool, error) {
	v, ok := t.d.cache[key]
	if !ok {
		return nil, false, nil
	}
	return append([]byte(nil), v...), true, nil
}

func (t *tx) CachePut(key string, value []byte) error {
	if !t.write {
		return errReadOnly
	}
	t.d.cache[key] = append([]byte(nil), value...)
	return nil
}

func (t *tx) CacheDelete(key string) error {
	if !t.write {
		return errReadOnly
	}
	delete(t.d.cache, key)
	return nil
}

func (t *tx) GuardGet(key string) ([]byte, bool, error) {
	v, ok := t.d.guards[key]
	if !ok {
		return nil, false, nil
	}
	return append([]byte(nil), v...), true, nil
}

func (t *tx) GuardPut(key string, reg []byte) error {
	if !t.write {
		return errReadOnly
	}
	t.d.guards[key] = append([]byte(nil), reg...)
	return nil
}

func (t *tx) GuardEntries(key string) ([][]byte, error) {
	var out [][]byte
	for _, e := range t.d.ledger[key] {
		out = append(out, append([]byte(nil), e...))
	}
	return out, nil
}

func (t *tx) GuardAppend(key string, seq int, entry []byte) error {
	if !t.write {
		return errReadOnly
	}
	cur := t.d.ledger[key]
	if seq != len(cur) {
		return fmt.Errorf("guard %s: entry %d: %w (the ledger has %d)", key, seq, engine.ErrConflict, len(cur))
	}
	t.d.ledger[key] = append(slices.Clone(cur), append([]byte(nil), entry...))
	return nil
}

func (t *tx) GuardKeys() ([]string, error) {
	keys := make([]string, 0, len(t.d.guards))
	for k := range t.d.guards {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, nil
}
