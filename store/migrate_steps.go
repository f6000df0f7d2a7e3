package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// addReviewToSummaries (3→4) rewrites every summary in codec v3, giving
// each flow waiting at a gate its gate's review as the engine derives it
// (engine.Summarize of the state with its flow in its stored spec, each
// distinct spec parsed once, with Options.ParseSpec). Without it,
// or for a flow whose state or spec cannot be read, the summary keeps no
// review (the engine then reads that gate's state, as
// it reads a codec-v2 summary). The bump also keeps schema-3 binaries,
// which cannot decode v3, out of the file.
func addReviewToSummaries(s *Store, btx *bolt.Tx) error {
	flows := btx.Bucket(bucketFlows)
	if flows == nil {
		return corruptError(s.path, "bucket \"flows\" is missing", nil)
	}
	t := &tx{s: s, btx: btx}
	parsed := map[[32]byte]*specs.Spec{}
	return s.rewriteSummaries(btx, func(id []byte, sum *state.FlowSummary) error {
		if sum.Review != nil || !pendingGate(sum) || s.opts.ParseSpec == nil {
			return nil
		}
		v := flows.Get(id)
		if v == nil {
			return nil
		}
		var st state.FlowState
		if err := unmarshalJSON(bytes.Clone(v), &st); err != nil {
			return nil // the damaged flow stays as it is (quarantined by gc --damaged)
		}
		ref, err := t.resolveSpec(&st)
		if err != nil {
			return nil
		}
		sp, ok := parsed[ref.hash]
		if !ok {
			var ds specs.Diagnostics
			if sp, ds = s.opts.ParseSpec(st.SpecFile, []byte(st.RawSpec)); ds.HasErrors() {
				sp = nil
			}
			parsed[ref.hash] = sp
		}
		if sp != nil {
			sum.Review = engine.Summarize(&st, sp.Flows[st.FlowName]).Review
		}
		return nil
	})
}

// splitFlowLogs (4→5) moves each flow state's records and trace into
// bucket flowlog, one key per entry (flowlog.go), and rewrites the state
// without them. A state that does not decode is left as it was (it is
// still reported damaged, and can be quarantined); one that already has
// its entries there is skipped.
func splitFlowLogs(s *Store, btx *bolt.Tx) error {
	logb, err := btx.CreateBucketIfNotExists(bucketFlowLog)
	if err != nil {
		return err
	}
	return s.rewriteStates(btx, func(t *tx, id []byte, st *state.FlowState) (bool, error) {
		if logb.Get(logMetaKey(string(id))) != nil {
			return false, nil
		}
		ref, err := parseSpecRef(st.RawSpec)
		if err != nil {
			ref = specRef{} // inline (or damaged): nothing is counted for it
		}
		if err := t.writeLog(st, ref); err != nil {
			return false, err
		}
		st.Records, st.Trace = nil, nil
		return true, nil
	})
}

// splitFlowSteps (5→6) moves the step outputs and attempts of each flow
// state that has more than stepsInline steps into bucket flowlog, one key
// per step (flowsteps.go), and rewrites the state without them. A state
// that does not decode is left as it was (it is still reported damaged,
// and can be quarantined); one that already has its entries there is
// skipped.
func splitFlowSteps(s *Store, btx *bolt.Tx) error {
	b := btx.Bucket(bucketFlowLog)
	if b == nil {
		return corruptError(s.path, "bucket \"flowlog\" is missing", nil)
	}
	return s.rewriteStates(btx, func(t *tx, id []byte, st *state.FlowState) (bool, error) {
		if b.Get(stepsMetaKey(string(id))) != nil {
			return false, nil
		}
		if split, err := t.splitSteps(st); err != nil || !split {
			return false, nil // a short flow keeps them in its state
		}
		if err := t.writeSteps(st); err != nil {
			return false, err
		}
		st.StepOutputs, st.Attempts = nil, nil
		return true, nil
	})
}

// rewriteStates calls fix with each flow state that decodes (one that does
// not is left as it was: it is still reported damaged, and can be
// quarantined) and stores the state again when fix says it changed it.
func (s *Store) rewriteStates(btx *bolt.Tx, fix func(t *tx, id []byte, st *state.FlowState) (bool, error)) error {
	flows := btx.Bucket(bucketFlows)
	if flows == nil {
		return corruptError(s.path, "bucket \"flows\" is missing", nil)
	}
	var ids [][]byte
	if err := flows.ForEach(func(k, _ []byte) error { ids = append(ids, bytes.Clone(k)); return nil }); err != nil {
		return err
	}
	t := &tx{s: s, btx: btx}
	for _, id := range ids {
		var st state.FlowState
		if err := unmarshalJSON(bytes.Clone(flows.Get(id)), &st); err != nil || st.FlowID != string(id) {
			continue
		}
		changed, err := fix(t, id, &st)
		if err != nil {
			return err
		}
		if !changed {
			continue
		}
		data, err := marshalJSON(&st)
		if err != nil {
			return fmt.Errorf("encode flow %s: %w", id, err)
		}
		if err := flows.Put(id, data); err != nil {
			return err
		}
	}
	return nil
}

// mergeFlowEvents (2→3) moves the per-flow event index (idx_flow_events)
// into bucket events, beside the log, and drops idx_flow_events: an Append
// then dirties one B-tree path, not two.
func mergeFlowEvents(s *Store, btx *bolt.Tx) error {
	events := btx.Bucket(bucketEvents)
	if events == nil {
		return corruptError(s.path, "bucket \"events\" is missing", nil)
	}
	idx := btx.Bucket(bucketFlowEvents)
	if idx == nil {
		return nil // already in the schema-3 layout
	}
	if err := idx.ForEach(func(k, _ []byte) error {
		if isSeqKey(k) {
			return fmt.Errorf("idx_flow_events: bad key %q", k)
		}
		return events.Put(bytes.Clone(k), []byte{})
	}); err != nil {
		return err
	}
	return btx.DeleteBucket(bucketFlowEvents)
}

// storeSpecsOnce (2→3) moves every flow state's raw_spec into bucket specs
// (one entry per distinct text, counting the flows that refer to it) and
// leaves a reference in the state (specs.go).
func storeSpecsOnce(s *Store, btx *bolt.Tx) error {
	specs, err := btx.CreateBucketIfNotExists(bucketSpecs)
	if err != nil {
		return err
	}
	flows := btx.Bucket(bucketFlows)
	if flows == nil {
		return corruptError(s.path, "bucket \"flows\" is missing", nil)
	}
	var ids [][]byte
	if err := flows.ForEach(func(k, _ []byte) error { ids = append(ids, bytes.Clone(k)); return nil }); err != nil {
		return err
	}
	for _, id := range ids {
		var st state.FlowState
		if err := unmarshalJSON(bytes.Clone(flows.Get(id)), &st); err != nil {
			return corruptError(s.path, "cannot decode flow "+string(id), err)
		}
		if st.RawSpec == "" || isSpecRef(st.RawSpec) {
			continue
		}
		ref := refOfText(st.RawSpec, specRef{})
		if err := adjustSpec(specs, ref, 1); err != nil {
			return err
		}
		st.RawSpec = ref.String()
		data, err := marshalJSON(&st)
		if err != nil {
			return fmt.Errorf("encode flow %s: %w", id, err)
		}
		if err := flows.Put(id, data); err != nil {
			return err
		}
	}
	return nil
}

// emptyIndexValues (2→3) drops the copies of the summaries that schema 2
// kept as the values of idx_created, idx_status and idx_gates: the keys
// stay, their values become empty, and List and PendingGates read bucket
// summaries instead. A transition then rewrites one summary (and the
// indexes only when a flow is created, changes status or opens or closes a
// gate) instead of four.
func emptyIndexValues(s *Store, btx *bolt.Tx) error {
	for _, name := range [][]byte{bucketByCreated, bucketByStatus, bucketGates} {
		b := btx.Bucket(name)
		if b == nil {
			return corruptError(s.path, fmt.Sprintf("bucket %q is missing", name), nil)
		}
		var keys [][]byte
		if err := b.ForEach(func(k, v []byte) error {
			if len(v) != 0 {
				keys = append(keys, bytes.Clone(k))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			if err := b.Put(k, []byte{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// addLeaseToSummaries (1→2) re-encodes every summary in codec v2 with the
// flow state's runner lease (the state's "owner", copied as the engine's
// Summarize copies it). Index keys do not change, only their values.
func addLeaseToSummaries(s *Store, btx *bolt.Tx) error {
	flows := btx.Bucket(bucketFlows)
	if flows == nil {
		return corruptError(s.path, "bucket \"flows\" is missing", nil)
	}
	return s.rewriteSummaries(btx, func(id []byte, sum *state.FlowSummary) error {
		var st struct {
			Owner *state.Lease `json:"owner"`
		}
		if v := flows.Get(id); v != nil {
			if err := json.Unmarshal(v, &st); err != nil {
				return corruptError(s.path, "cannot decode flow "+string(id), err)
			}
		}
		sum.Owner = st.Owner
		return nil
	})
}

// rewriteSummaries decodes every stored summary (any codec version), lets
// fix change it (not its FlowID, Status or CreatedAt, which the index keys
// are made of), and writes it back in the schema's codec, with its index
// entries (keys only since schema 3; 1→2 wrote the summary as their value,
// which 2→3 then empties). Migrations that change what
// summaries hold use it: a store cannot recompute summaries, the engine
// does.
func (s *Store) rewriteSummaries(btx *bolt.Tx, fix func(id []byte, sum *state.FlowSummary) error) error {
	sums := btx.Bucket(bucketSummaries)
	if sums == nil {
		return corruptError(s.path, "bucket \"summaries\" is missing", nil)
	}
	// t.index writes every index bucket, idx_deadline (schema 7) too.
	if _, err := btx.CreateBucketIfNotExists(bucketDeadlines); err != nil {
		return err
	}
	var ids [][]byte
	if err := sums.ForEach(func(k, _ []byte) error { ids = append(ids, bytes.Clone(k)); return nil }); err != nil {
		return err
	}
	t := &tx{s: s, btx: btx}
	for _, id := range ids {
		sum, err := decodeSummary(sums.Get(id))
		if err != nil {
			return corruptError(s.path, "cannot decode summary of flow "+string(id), err)
		}
		key := indexRef{id: sum.FlowID, status: sum.Status, created: sum.CreatedAt}
		if err := fix(id, sum); err != nil {
			return err
		}
		if (indexRef{id: sum.FlowID, status: sum.Status, created: sum.CreatedAt}) != key {
			return fmt.Errorf("summary of flow %q: a rewrite may not change what it is indexed by", id)
		}
		enc, err := encodeSummary(sum, s.schema.summaryCodec())
		if err != nil {
			return err
		}
		if err := sums.Put(id, enc); err != nil {
			return err
		}
		if err := t.index(sum); err != nil {
			return err
		}
	}
	return nil
}

// indexDeadlines (6→7) creates idx_deadline and fills it from the
// summaries of the flows awaiting a gate (idx_gates), one key per gate
// with a deadline. A summary that does not decode gets no entry (it is
// reported damaged, and can be quarantined). Entries an earlier step of
// the same upgrade wrote (rewriteSummaries) are written again, unchanged.
func indexDeadlines(s *Store, btx *bolt.Tx) error {
	idx, err := btx.CreateBucketIfNotExists(bucketDeadlines)
	if err != nil {
		return err
	}
	gates, sums := btx.Bucket(bucketGates), btx.Bucket(bucketSummaries)
	if gates == nil || sums == nil {
		return corruptError(s.path, "bucket \"idx_gates\" or \"summaries\" is missing", nil)
	}
	var keys [][]byte
	if err := gates.ForEach(func(id, _ []byte) error {
		v := sums.Get(id)
		if v == nil {
			return nil
		}
		sum, err := decodeSummary(v)
		if err != nil {
			return nil
		}
		if e := indexEntries(sum)[3]; e.on {
			keys = append(keys, e.key)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := idx.Put(k, []byte{}); err != nil {
			return err
		}
	}
	return nil
}
