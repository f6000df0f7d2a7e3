package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine/state"
)

// bucketQuarantine holds the raw records QuarantineDamaged took out of the
// store: <flow id> ‖ 0x00 ‖ "state" and <flow id> ‖ 0x00 ‖ "summary", the
// bytes exactly as they were. It is created by the first quarantine; no
// other code reads it, so it needs no schema version of its own.
var bucketQuarantine = []byte("quarantine")

// Quarantined is one flow QuarantineDamaged took out of the store.
type Quarantined struct {
	FlowID string `json:"flow_id"`
	// Records are what was moved to the quarantine bucket: "state",
	// "summary" (the ones present).
	Records []string `json:"records"`
	// Reason is why the flow was damaged (the first decoding error).
	Reason string `json:"reason"`
}

// QuarantineDamaged finds every flow whose state or summary cannot be
// decoded (engine.ErrDamaged) and, in one write transaction, moves both raw
// records into bucket quarantine and removes the flow like Delete does —
// its index entries and events — so sweeps, listings and GC no longer meet
// it. The reference counts of the stored specs are recounted from the
// flows that remain (a damaged state's reference cannot be read), a spec
// no flow refers to any more is deleted. Returns the flows quarantined, by
// id; none is not an error.
func (s *Store) QuarantineDamaged(ctx context.Context) ([]Quarantined, error) {
	var out []Quarantined
	err := s.run(ctx, modeWrite, func(btx *bolt.Tx) error {
		out = nil
		t := &tx{s: s, btx: btx}
		defer func() { t.done = true }()
		return s.guard(func() error {
			var err error
			out, err = t.quarantineDamaged()
			if err == nil && len(out) == 0 {
				return errNothingWritten
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (t *tx) quarantineDamaged() ([]Quarantined, error) {
	b := map[string]*bolt.Bucket{}
	for _, name := range [][]byte{bucketFlows, bucketSummaries, bucketByCreated, bucketByStatus, bucketGates, bucketDeadlines, bucketSpecs} {
		bk, err := t.bucket(name)
		if err != nil {
			return nil, err
		}
		b[string(name)] = bk
	}
	flows, sums := b[string(bucketFlows)], b[string(bucketSummaries)]
	found, err := t.findDamaged(flows, sums)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, nil
	}
	quarantine, err := t.btx.CreateBucketIfNotExists(bucketQuarantine)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]Quarantined, 0, len(ids))
	for _, id := range ids {
		q := found[id]
		for _, r := range []struct {
			name   string
			bucket *bolt.Bucket
		}{{"state", flows}, {"summary", sums}} {
			v := r.bucket.Get([]byte(id))
			if v == nil {
				continue
			}
			if err := quarantine.Put(append([]byte(id+"\x00"), r.name...), bytes.Clone(v)); err != nil {
				return nil, err
			}
			if err := r.bucket.Delete([]byte(id)); err != nil {
				return nil, err
			}
			q.Records = append(q.Records, r.name)
		}
		if err := b[string(bucketGates)].Delete([]byte(id)); err != nil {
			return nil, err
		}
		if err := t.deleteEvents(id); err != nil {
			return nil, err
		}
		if err := t.deleteLog(id); err != nil {
			return nil, err
		}
		t.note(id, nil)
		out = append(out, *q)
	}
	// The listing and deadline indexes are keyed by the summary's status,
	// CreatedAt and gate deadline, which a damaged summary no longer tells: their entries are found by
	// the flow id that ends each key.
	if err := deleteIndexEntries(b[string(bucketByCreated)], found, func(k []byte) []byte { return k[min(8, len(k)):] }); err != nil {
		return nil, err
	}
	if err := deleteIndexEntries(b[string(bucketDeadlines)], found, func(k []byte) []byte { return k[min(8, len(k)):] }); err != nil {
		return nil, err
	}
	if err := deleteIndexEntries(b[string(bucketByStatus)], found, func(k []byte) []byte {
		if i := bytes.IndexByte(k, 0); i >= 0 && len(k) >= i+9 {
			return k[i+9:]
		}
		return nil
	}); err != nil {
		return nil, err
	}
	t.wrote = true
	return out, t.recountSpecs(flows, b[string(bucketSpecs)])
}

// findDamaged is every flow whose state (with its records, trace, step
// outputs and attempts) or summary does not decode, with why.
func (t *tx) findDamaged(flows, sums *bolt.Bucket) (map[string]*Quarantined, error) {
	found := map[string]*Quarantined{}
	note := func(id []byte, record string, err error) {
		q := found[string(id)]
		if q == nil {
			q = &Quarantined{FlowID: string(id), Reason: fmt.Sprintf("cannot decode its %s: %v", record, err)}
			found[string(id)] = q
		}
	}
	if err := flows.ForEach(func(k, v []byte) error {
		var st state.FlowState
		err := unmarshalJSON(bytes.Clone(v), &st)
		if err == nil && st.FlowID != string(k) {
			err = fmt.Errorf("it names flow %q", st.FlowID)
		}
		if err == nil && isSpecRef(st.RawSpec) {
			_, err = parseSpecRef(st.RawSpec)
		}
		if err == nil {
			// Its records and trace (flowlog.go) are part of the state.
			err = t.readLog(&st)
		}
		if err == nil {
			// So are its step outputs and attempts (flowsteps.go).
			err = t.readSteps(&st)
		}
		if err != nil {
			note(k, "state", err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := sums.ForEach(func(k, v []byte) error {
		if _, err := decodeSummary(v); err != nil {
			note(k, "summary", err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return found, nil
}

// deleteIndexEntries deletes the keys of idx whose flow id (idOf) is in ids.
func deleteIndexEntries(idx *bolt.Bucket, ids map[string]*Quarantined, idOf func(k []byte) []byte) error {
	var keys [][]byte
	_ = idx.ForEach(func(k, _ []byte) error {
		if _, ok := ids[string(idOf(k))]; ok {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	})
	for _, k := range keys {
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// recountSpecs sets every stored spec's reference count to the number of
// flows referring to it, deleting the specs none refers to.
func (t *tx) recountSpecs(flows, specs *bolt.Bucket) error {
	refs := map[[32]byte]uint64{}
	if err := flows.ForEach(func(k, v []byte) error {
		r, err := t.storedSpecRef(string(k), v)
		if err != nil {
			return err
		}
		if r.ok {
			refs[r.hash]++
		}
		return nil
	}); err != nil {
		return err
	}
	type fix struct {
		key []byte
		n   uint64
		val []byte
	}
	var fixes []fix
	_ = specs.ForEach(func(k, v []byte) error {
		var h [32]byte
		if len(k) != len(h) || len(v) < 8 {
			return nil
		}
		copy(h[:], k)
		if n := refs[h]; n != binary.BigEndian.Uint64(v) {
			fixes = append(fixes, fix{bytes.Clone(k), n, bytes.Clone(v)})
		}
		return nil
	})
	for _, f := range fixes {
		if f.n == 0 {
			if err := specs.Delete(f.key); err != nil {
				return err
			}
			continue
		}
		binary.BigEndian.PutUint64(f.val, f.n)
		if err := specs.Put(f.key, f.val); err != nil {
			return err
		}
	}
	return nil
}
