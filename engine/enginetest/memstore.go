package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// errReadOnly is returned by writes inside View.
var errReadOnly = errors.New("enginetest: write in a read-only transaction")

// Store is an in-memory engine.Store. The zero value is not usable; call New.
type Store struct {
	// Now is the store's clock for UpdatedAt/CreatedAt (default time.Now).
	Now func() time.Time

	mu     sync.Mutex
	flows  map[string][]byte
	events []engine.Event
	seq    uint64
	cache  map[string][]byte
}

// New returns an empty store.
func New() *Store {
	return &Store{flows: map[string][]byte{}, cache: map[string][]byte{}}
}

var _ engine.Store = (*Store)(nil)

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Update runs fn in one write transaction; if fn fails nothing is written.
func (s *Store) Update(ctx context.Context, fn func(tx engine.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &tx{s: s, write: true, flows: map[string][]byte{}, deleted: map[string]bool{}, cache: map[string][]byte{}, seq: s.seq}
	if err := fn(t); err != nil {
		return err
	}
	for id := range t.deleted {
		delete(s.flows, id)
		kept := s.events[:0]
		for _, e := range s.events {
			if e.FlowID != id {
				kept = append(kept, e)
			}
		}
		s.events = kept
	}
	for id, b := range t.flows {
		s.flows[id] = b
	}
	for k, v := range t.cache {
		s.cache[k] = v
	}
	s.events = append(s.events, t.events...)
	s.seq = t.seq
	return nil
}

// View runs fn in one read-only transaction.
func (s *Store) View(ctx context.Context, fn func(tx engine.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(&tx{s: s, flows: map[string][]byte{}, deleted: map[string]bool{}, cache: map[string][]byte{}, seq: s.seq})
}

// Events returns the committed events with a sequence number above
// afterSeq, oldest first, at most limit of them (0 = no limit).
func (s *Store) Events(ctx context.Context, afterSeq uint64, limit int) ([]engine.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []engine.Event{}
	for _, e := range s.events {
		if e.Seq <= afterSeq {
			continue
		}
		out = append(out, e)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// FlowEvents returns one flow's committed events, oldest first.
func (s *Store) FlowEvents(ctx context.Context, flowID string) ([]engine.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []engine.Event{}
	for _, e := range s.events {
		if e.FlowID == flowID {
			out = append(out, e)
		}
	}
	return out, nil
}

// LastSeq is the highest sequence number ever assigned (0 for a new store).
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq, nil
}

// Len returns the number of stored flows.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.flows)
}

// tx is one transaction: writes are buffered until Update commits.
type tx struct {
	s       *Store
	write   bool
	flows   map[string][]byte // written in this tx
	deleted map[string]bool
	cache   map[string][]byte
	events  []engine.Event
	seq     uint64
}

func (t *tx) raw(id string) ([]byte, bool) {
	if b, ok := t.flows[id]; ok {
		return b, true
	}
	if t.deleted[id] {
		return nil, false
	}
	b, ok := t.s.flows[id]
	return b, ok
}

func (t *tx) Get(flowID string) (*engine.FlowState, error) {
	b, ok := t.raw(flowID)
	if !ok {
		return nil, fmt.Errorf("flow %q: %w", flowID, engine.ErrNotFound)
	}
	var st engine.FlowState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("flow %q: decoding: %w", flowID, err)
	}
	return &st, nil
}

func (t *tx) Put(st *engine.FlowState) error {
	if !t.write {
		return errReadOnly
	}
	if st == nil || st.FlowID == "" {
		return errors.New("enginetest: Put of a flow without id")
	}
	now := t.s.now()
	st.UpdatedAt = now
	// Like the real store: the version moves forward from the stored one and
	// CreatedAt is kept, even when the argument was built from scratch.
	var prev struct {
		Version   int64     `json:"version"`
		CreatedAt time.Time `json:"created_at"`
	}
	if b, ok := t.raw(st.FlowID); ok && json.Unmarshal(b, &prev) == nil {
		st.Version = prev.Version + 1
		st.CreatedAt = prev.CreatedAt
	} else {
		st.Version++
	}
	if st.CreatedAt.IsZero() {
		st.CreatedAt = now
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("flow %q: encoding: %w", st.FlowID, err)
	}
	t.flows[st.FlowID] = b
	delete(t.deleted, st.FlowID)
	return nil
}

func (t *tx) Delete(flowID string) error {
	if !t.write {
		return errReadOnly
	}
	delete(t.flows, flowID)
	t.deleted[flowID] = true
	kept := t.events[:0]
	for _, e := range t.events {
		if e.FlowID != flowID {
			kept = append(kept, e)
		}
	}
	t.events = kept
	return nil
}

func (t *tx) all() ([]*engine.FlowState, error) {
	ids := map[string]bool{}
	for id := range t.s.flows {
		ids[id] = true
	}
	for id := range t.flows {
		ids[id] = true
	}
	var out []*engine.FlowState
	for id := range ids {
		if _, ok := t.raw(id); !ok {
			continue
		}
		st, err := t.Get(id)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].FlowID < out[j].FlowID
	})
	return out, nil
}

func summary(st *engine.FlowState) engine.FlowSummary {
	s := engine.FlowSummary{
		FlowID: st.FlowID, FlowName: st.FlowName, Status: st.Status, StepNumber: st.CurrentIdx + 1,
		Round: st.Round, Driver: st.Driver, Gate: st.Gate, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt,
		Version: st.Version,
	}
	if st.Gate != nil {
		s.CurrentStep = st.Gate.StepID
	}
	if st.ParentFlowID != nil {
		s.ParentFlowID = *st.ParentFlowID
	}
	return s
}

func (t *tx) List(f engine.ListFilter) ([]engine.FlowSummary, error) {
	all, err := t.all()
	if err != nil {
		return nil, err
	}
	var out []engine.FlowSummary
	for _, st := range all {
		if f.Status != "" && st.Status != f.Status {
			continue
		}
		out = append(out, summary(st))
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	return out, nil
}

func (t *tx) PendingGates() ([]engine.FlowSummary, error) {
	all, err := t.all()
	if err != nil {
		return nil, err
	}
	var out []engine.FlowSummary
	for _, st := range all {
		if st.Status == engine.StatusAwaitingGate && st.Gate != nil {
			out = append(out, summary(st))
		}
	}
	return out, nil
}

func (t *tx) Append(events ...engine.Event) error {
	if !t.write {
		return errReadOnly
	}
	for _, e := range events {
		t.seq++
		e.Seq = t.seq
		if e.Time.IsZero() {
			e.Time = t.s.now()
		}
		t.events = append(t.events, e)
	}
	return nil
}

func (t *tx) CacheGet(key string) ([]byte, bool, error) {
	if v, ok := t.cache[key]; ok {
		return append([]byte(nil), v...), true, nil
	}
	v, ok := t.s.cache[key]
	if !ok {
		return nil, false, nil
	}
	return append([]byte(nil), v...), true, nil
}

func (t *tx) CachePut(key string, value []byte) error {
	if !t.write {
		return errReadOnly
	}
	t.cache[key] = append([]byte(nil), value...)
	return nil
}
