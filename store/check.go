package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// Check verifies the whole file: bbolt's page-level consistency check, then
// the store's own invariants (every flow has a matching summary and exactly
// its index entries, the gate index matches the summaries, every event index
// entry points at an event of that flow). It reads everything, so it is meant
// for tests and a `doctor`-style command, not for every open. Problems are
// reported together, wrapped in ErrCorrupt.
func (s *Store) Check(ctx context.Context) error {
	pageProblems, indexProblems, err := s.Problems(ctx)
	if err != nil {
		return err
	}
	problems := append(pageProblems, indexProblems...)
	if len(problems) == 0 {
		return nil
	}
	fe := corruptError(s.path, "consistency check failed: "+summarize(problems), errors.Join(problems...)).(*FileError)
	if len(pageProblems) == 0 {
		fe.Hint = "the pages are sound and only the derived indexes disagree with the flow states; " +
			"Reindex rebuilds them (back the file up first)"
	}
	return fe
}

// Problems runs what Check runs and returns what it found: the page
// problems bbolt's check reports, then (only if the pages are sound) the
// store's index problems. err is a failure to read the file at all.
func (s *Store) Problems(ctx context.Context) (pages, indexes []error, err error) {
	err = s.run(ctx, modeRead, func(btx *bolt.Tx) error {
		pages, indexes = nil, nil
		var err error
		if pages, err = s.pageProblems(btx); err != nil {
			return err
		}
		if len(pages) > 0 {
			return nil
		}
		return s.guard(func() error {
			indexes = s.checkIndexes(btx)
			return nil
		})
	})
	return pages, indexes, err
}

// Reindex rebuilds every summary and the listing, gate and deadline indexes from the
// flow states, in one write transaction. Summaries are the engine's, so the
// caller passes the derivation (engine.Summarize with each state's flow in
// its parsed spec). It repairs what Check reports as index problems; flow
// states and events are not touched.
func (s *Store) Reindex(ctx context.Context, summarize func(*state.FlowState) state.FlowSummary) error {
	return s.run(ctx, modeWrite, func(btx *bolt.Tx) error {
		return s.guard(func() error { return s.rebuildIndexes(btx, summarize) })
	})
}

func (s *Store) checkIndexes(btx *bolt.Tx) []error {
	var problems []error
	bad := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	b := map[string]*bolt.Bucket{}
	for _, name := range allBuckets {
		if b[string(name)] = btx.Bucket(name); b[string(name)] == nil {
			bad("bucket %q missing", name)
		}
	}
	if len(problems) > 0 {
		return problems
	}
	flows, sums := b[string(bucketFlows)], b[string(bucketSummaries)]
	// references to each spec, by hash
	specRefs := map[[32]byte]uint64{}
	// index keys expected (their values are empty)
	wantCreated, wantStatus, wantGates, wantDeadlines := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	_ = flows.ForEach(func(k, v []byte) error {
		var st state.FlowState
		if err := json.Unmarshal(v, &st); err != nil {
			bad("flow %q: %v", k, err)
			return nil
		}
		if st.FlowID != string(k) {
			bad("flow under key %q has flow_id %q", k, st.FlowID)
		}
		if isSpecRef(st.RawSpec) {
			if r, err := parseSpecRef(st.RawSpec); err != nil {
				bad("flow %q: %v", k, err)
			} else {
				specRefs[r.hash]++
			}
		}
		raw := sums.Get(k)
		if raw == nil {
			bad("flow %q has no summary", k)
			return nil
		}
		sum, err := decodeSummary(raw)
		if err != nil {
			bad("summary %q: %v", k, err)
			return nil
		}
		if sum.Status != st.Status || !sum.UpdatedAt.Equal(st.UpdatedAt) || sum.Version != st.Version {
			bad("summary of %q is stale: %s/%v/v%d vs state %s/%v/v%d", k,
				sum.Status, sum.UpdatedAt, sum.Version, st.Status, st.UpdatedAt, st.Version)
		}
		ref := indexRef{id: sum.FlowID, status: sum.Status, created: sum.CreatedAt}
		wantCreated[string(createdKey(ref))] = true
		wantStatus[string(statusKey(ref))] = true
		entries := indexEntries(sum)
		if gate, deadline := entries[2], entries[3]; gate.on {
			wantGates[string(gate.key)] = true
			if deadline.on {
				wantDeadlines[string(deadline.key)] = true
			}
		}
		return nil
	})
	_ = sums.ForEach(func(k, _ []byte) error {
		if flows.Get(k) == nil {
			bad("summary %q has no flow", k)
		}
		return nil
	})
	for _, idx := range []struct {
		name []byte
		want map[string]bool
	}{{bucketByCreated, wantCreated}, {bucketByStatus, wantStatus}, {bucketGates, wantGates}, {bucketDeadlines, wantDeadlines}} {
		_ = b[string(idx.name)].ForEach(func(k, v []byte) error {
			switch {
			case !idx.want[string(k)]:
				bad("%s has a stray entry %q", idx.name, k)
			case len(v) != 0:
				bad("%s entry %q has a value (index entries are keys only)", idx.name, k)
			}
			delete(idx.want, string(k))
			return nil
		})
		for k := range idx.want {
			bad("%s lacks the entry %q", idx.name, k)
		}
	}
	checkSpecs(b[string(bucketSpecs)], specRefs, bad)
	checkFlowEvents(b[string(bucketEvents)], bad)
	checkFlowLogs(flows, b[string(bucketFlowLog)], bad)
	checkFlowSteps(flows, b[string(bucketFlowLog)], bad)
	return problems
}

// checkSpecs checks the specs bucket against refs, the number of flows that
// refer to each spec text by its hash: each text hashes to its key and
// counts the flows that refer to it, and no flow refers to a missing one.
func checkSpecs(specs *bolt.Bucket, refs map[[32]byte]uint64, bad func(format string, args ...any)) {
	_ = specs.ForEach(func(k, v []byte) error {
		var h [32]byte
		if len(k) != len(h) || len(v) < 8 {
			bad("specs: bad entry %x", k)
			return nil
		}
		copy(h[:], k)
		n := binary.BigEndian.Uint64(v)
		if sha256.Sum256(v[8:]) != h {
			bad("specs: the text of %x does not hash to its key", k)
		}
		if n != refs[h] {
			bad("specs: %x counts %d flows, %d refer to it", k, n, refs[h])
		}
		delete(refs, h)
		return nil
	})
	for h, n := range refs {
		bad("specs: %d flows refer to the missing spec %x", n, h)
	}
}

// checkFlowEvents checks the per-flow index of the event log: each entry
// (flow id, NUL, sequence number) points at an event of that flow.
func checkFlowEvents(events *bolt.Bucket, bad func(format string, args ...any)) {
	_ = events.ForEach(func(k, _ []byte) error {
		if isSeqKey(k) {
			return nil
		}
		i := bytes.IndexByte(k, 0)
		if i < 1 || len(k) != i+9 {
			bad("idx_flow_events: bad key %q", k)
			return nil
		}
		v := events.Get(k[i+1:])
		if v == nil {
			bad("idx_flow_events: %q points at a missing event", k)
			return nil
		}
		var ev engine.Event
		if err := json.Unmarshal(v, &ev); err != nil || ev.FlowID != string(k[:i]) {
			bad("idx_flow_events: %q points at an event of another flow (%v)", k, err)
		}
		return nil
	})
}

// checkFlowLogs checks bucket flowlog (flowlog.go): every entry belongs to
// a stored flow that has a meta entry, and each flow has exactly the
// records and trace entries its meta entry counts, and the spec reference
// its state has.
func checkFlowLogs(flows, logb *bolt.Bucket, bad func(format string, args ...any)) {
	type counts struct {
		meta           *logMeta
		records, trace uint32
	}
	seen := map[string]*counts{}
	_ = logb.ForEach(func(k, v []byte) error {
		i := bytes.IndexByte(k, 0)
		if i < 1 || len(k) < i+2 {
			bad("flowlog: bad key %q", k)
			return nil
		}
		id := string(k[:i])
		c := seen[id]
		if c == nil {
			c = &counts{}
			seen[id] = c
		}
		switch kind := k[i+1]; {
		case kind == logMetaKind && len(k) == i+2:
			m, err := decodeLogMeta(v)
			if err != nil {
				bad("flowlog: flow %q: %v", id, err)
				return nil
			}
			c.meta = &m
		case kind == logRecordKind && len(k) == i+6:
			c.records++
		case kind == logTraceKind && len(k) == i+6:
			c.trace++
		case kind == stepsMetaKind || kind == stepsStepKind:
			// a step's (checkFlowSteps)
		default:
			bad("flowlog: bad key %q", k)
		}
		return nil
	})
	for id, c := range seen {
		switch {
		case flows.Get([]byte(id)) == nil:
			bad("flowlog: entries of flow %q, which is not stored", id)
		case c.meta == nil:
			bad("flowlog: flow %q has entries and no meta entry", id)
		case c.meta.records != c.records || c.meta.trace != c.trace:
			bad("flowlog: flow %q has %d records and %d trace entries, its meta entry counts %d and %d",
				id, c.records, c.trace, c.meta.records, c.meta.trace)
		default:
			var head struct {
				RawSpec string `json:"raw_spec"`
			}
			_ = json.Unmarshal(flows.Get([]byte(id)), &head)
			want, err := parseSpecRef(head.RawSpec)
			if err != nil {
				want = specRef{} // inline: not counted
			}
			if got := c.meta.specRef(); got.ok != want.ok || got.hash != want.hash {
				bad("flowlog: the meta entry of flow %q names another spec than its state", id)
			}
		}
	}
}

// checkFlowSteps checks the steps' entries in bucket flowlog
// (flowsteps.go): every entry belongs to a stored flow that has a steps
// meta entry, each flow has exactly the step outputs and attempts its meta
// entry counts, each output is JSON and each attempt count a decimal
// number.
func checkFlowSteps(flows, b *bolt.Bucket, bad func(format string, args ...any)) {
	type counts struct {
		meta              *stepsMeta
		outputs, attempts uint32
	}
	seen := map[string]*counts{}
	_ = b.ForEach(func(k, v []byte) error {
		i := bytes.IndexByte(k, 0)
		if i < 1 || len(k) < i+2 || (k[i+1] != stepsMetaKind && k[i+1] != stepsStepKind) {
			return nil // not a step's (checkFlowLogs)
		}
		id := string(k[:i])
		c := seen[id]
		if c == nil {
			c = &counts{}
			seen[id] = c
		}
		kind, step, ok := parseStepsKey(k[i+1:])
		switch {
		case !ok:
			bad("flowlog: steps: bad key %q", k)
		case kind == stepsMetaKind:
			m, err := decodeStepsMeta(v)
			if err != nil {
				bad("flowlog: steps: flow %q: %v", id, err)
				return nil
			}
			c.meta = &m
		case kind == stepsOutputKind:
			if !json.Valid(v) {
				bad("flowlog: steps: flow %q: the output of step %q is not JSON", id, step)
			}
			c.outputs++
		case kind == stepsAttemptKind:
			if _, err := strconv.Atoi(string(v)); err != nil {
				bad("flowlog: steps: flow %q: the attempts of step %q: %v", id, step, err)
			}
			c.attempts++
		}
		return nil
	})
	for id, c := range seen {
		switch {
		case flows.Get([]byte(id)) == nil:
			bad("flowlog: steps: entries of flow %q, which is not stored", id)
		case c.meta == nil:
			bad("flowlog: steps: flow %q has entries and no meta entry", id)
		case c.meta.outputs != c.outputs || c.meta.attempts != c.attempts:
			bad("flowlog: steps: flow %q has %d step outputs and %d attempts, its meta entry counts %d and %d",
				id, c.outputs, c.attempts, c.meta.outputs, c.meta.attempts)
		}
	}
}
