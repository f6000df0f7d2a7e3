package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine/state"
)

// The append-only parts of a flow state — its records (the trace of
// steps, gates, skips and policies) and its in-process trace of calls —
// grow by one entry per step, and were re-encoded whole, with the rest of
// the state, by every transition: a 200-step flow wrote ~100 KiB per step
// and spent a third of its CPU encoding it (issue 21). Since schema 5 they
// live beside the state, one key per entry, in bucket flowlog:
//
//	flowlog/
//	    <flow id> ‖ 0x00 ‖ "m"              = <tag:8> ‖ <records:4> ‖ <trace:4> ‖ <flags:1> ‖ <spec:32>
//	    <flow id> ‖ 0x00 ‖ "r" ‖ <i:4>      = state.Record JSON (records[i])
//	    <flow id> ‖ 0x00 ‖ "t" ‖ <i:4>      = trace[i], JSON
//
// and flows/<id> holds the rest of the state (records null, trace absent).
// The meta entry "m" gives the number of each; flags say which of the two
// slices is non-nil, as the state's JSON would (records [] and null are
// told apart; an empty trace is omitted, so read back as nil) and whether
// the state refers to a spec in bucket specs, whose hash <spec> is (zeros
// when not): a Put that did not read the flow in its transaction learns
// the reference it replaces here instead of decoding the stored state.
// Its tag names one version of the entries: a Put that only appends keeps
// it, one that changes any stored entry (a round archived, a revert)
// rewrites them all under a new random tag. So the first n entries under
// one tag never change, and a Store keeps, per flow, the entries it last
// read or wrote (logCache) with their tag: Put compares the new state's
// entries with the cached ones (a struct comparison, no encoding) and
// encodes and writes only those past them; Get copies the cached entries
// and decodes only those added since. A state without a meta entry keeps
// its records and trace in flows/<id> (what a schema-3 state was).

// bucketFlowLog: the records and trace of each flow, one key per entry.
var bucketFlowLog = []byte("flowlog")

// Kinds of flowlog keys (the byte after the flow id's NUL).
const (
	logMetaKind   byte = 'm'
	logRecordKind byte = 'r'
	logTraceKind  byte = 't'
)

// Flags of a log meta entry.
const (
	logRecordsSet byte = 1 << iota // Records is non-nil
	logTraceSet                    // Trace is non-nil
	logSpecSet                     // the state refers to spec <spec>
)

// logMeta is a flow's flowlog meta entry.
type logMeta struct {
	tag            uint64
	records, trace uint32
	flags          byte
	spec           [sha256.Size]byte
}

const logMetaLen = 8 + 4 + 4 + 1 + sha256.Size

func (m logMeta) encode() []byte {
	b := make([]byte, logMetaLen)
	binary.BigEndian.PutUint64(b, m.tag)
	binary.BigEndian.PutUint32(b[8:], m.records)
	binary.BigEndian.PutUint32(b[12:], m.trace)
	b[16] = m.flags
	copy(b[17:], m.spec[:])
	return b
}

func decodeLogMeta(b []byte) (logMeta, error) {
	if len(b) != logMetaLen {
		return logMeta{}, fmt.Errorf("flowlog meta of %d bytes, want %d", len(b), logMetaLen)
	}
	m := logMeta{
		tag:     binary.BigEndian.Uint64(b),
		records: binary.BigEndian.Uint32(b[8:]),
		trace:   binary.BigEndian.Uint32(b[12:]),
		flags:   b[16],
	}
	copy(m.spec[:], b[17:])
	return m, nil
}

// specRef is the spec reference the meta entry records (the text unknown).
func (m logMeta) specRef() specRef {
	if m.flags&logSpecSet == 0 {
		return specRef{}
	}
	return specRef{hash: m.spec, ok: true}
}

// storedLogMeta reads flowID's meta entry (ok false: none).
func (t *tx) storedLogMeta(flowID string) (logMeta, bool, error) {
	logb, err := t.bucket(bucketFlowLog)
	if err != nil {
		return logMeta{}, false, err
	}
	raw := logb.Get(logMetaKey(flowID))
	if raw == nil {
		return logMeta{}, false, nil
	}
	m, err := decodeLogMeta(raw)
	if err != nil {
		return m, false, damagedRecord(t.s.path, flowID, "state", err)
	}
	return m, true, nil
}

func logPrefix(flowID string) []byte { return append([]byte(flowID), 0) }

func logMetaKey(flowID string) []byte { return append(logPrefix(flowID), logMetaKind) }

func logKey(flowID string, kind byte, i uint32) []byte {
	k := append(logPrefix(flowID), kind, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(k[len(k)-4:], i)
	return k
}

// cachedLog is what a Store last read or wrote of one flow's log entries,
// under one tag. It is never changed once cached (a newer one replaces
// it), so readers copy from it without a lock.
type cachedLog struct {
	tag     uint64
	records []state.Record
	trace   []json.RawMessage
	// steps are the flow's step outputs and attempts (flowsteps.go), under
	// their own tag; nil: unknown.
	steps *cachedSteps
}

// recordSize is what a cached record is counted as (logCacheBytes): the
// struct and its strings, roughly.
const recordSize = 256

// size is roughly the memory the entries hold.
func (l *cachedLog) size() int {
	n := len(l.records) * recordSize
	for _, t := range l.trace {
		n += len(t) + 24
	}
	if l.steps != nil {
		n += l.steps.bytes + 64*(len(l.steps.outputs)+len(l.steps.attempts))
	}
	return n
}

// logCache holds the cachedLog of the flows this Store handle used last.
// An entry is valid for the file whenever the file's meta entry has the
// same tag and at least as many entries: entries under one tag never
// change (see above). Entries go in only after the transaction that read
// or wrote them has committed (tx.cache, Update, View).
type logCache struct {
	mu    sync.Mutex
	logs  map[string]*cachedLog
	bytes int // the sizes of logs
}

// logCacheSize and logCacheBytes bound the flows a Store caches the
// entries of, and the memory they hold; a flow whose entries alone are
// larger is not cached (its reads decode them all, as before schema 5).
const (
	logCacheSize  = 64
	logCacheBytes = 64 << 20
)

func (c *logCache) get(flowID string) *cachedLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logs[flowID]
}

// put stores (or, for nil, forgets) the entries of flows.
func (c *logCache) put(logs map[string]*cachedLog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logs == nil {
		c.logs = map[string]*cachedLog{}
	}
	for id, l := range logs {
		old := c.logs[id]
		if l != nil && old != nil && old.tag == l.tag &&
			len(old.records) > len(l.records) && len(old.trace) >= len(l.trace) {
			continue // a read that raced a longer write keeps the longer
		}
		if old != nil {
			c.bytes -= old.size()
			delete(c.logs, id)
		}
		if l == nil || l.size() > logCacheBytes {
			continue
		}
		for len(c.logs) > 0 && (len(c.logs) >= logCacheSize || c.bytes+l.size() > logCacheBytes) {
			for k, v := range c.logs { // any one: the map's order is random
				c.bytes -= v.size()
				delete(c.logs, k)
				break
			}
		}
		c.logs[id] = l
		c.bytes += l.size()
	}
}

// note records, for after the commit, the entries flowID has in the file
// once this transaction commits (nil: unknown, forget them). A fresh l
// without steps keeps those noted before it (flowsteps.go).
func (t *tx) note(flowID string, l *cachedLog) {
	if t.logs == nil {
		t.logs = map[string]*cachedLog{}
	}
	if p := t.logs[flowID]; l != nil && l.steps == nil && p != nil {
		l.steps = p.steps
	}
	t.logs[flowID] = l
}

// readLog fills st.Records and st.Trace from flowID's log entries, when it
// has a meta entry (else st keeps what flows/<id> held). Entries the Store
// has cached under the stored tag are copied, the others decoded.
func (t *tx) readLog(st *state.FlowState) error {
	logb, err := t.bucket(bucketFlowLog)
	if err != nil {
		return err
	}
	raw := logb.Get(logMetaKey(st.FlowID))
	if raw == nil {
		return nil
	}
	m, err := decodeLogMeta(raw)
	if err != nil {
		return damagedRecord(t.s.path, st.FlowID, "state", err)
	}
	have := t.s.logs.get(st.FlowID)
	if have == nil || have.tag != m.tag || uint32(len(have.records)) > m.records || uint32(len(have.trace)) > m.trace {
		have = &cachedLog{tag: m.tag}
	}
	out := &cachedLog{tag: m.tag, records: have.records, trace: have.trace}
	if n := len(have.records); uint32(n) < m.records {
		recs := make([]state.Record, n, m.records)
		copy(recs, have.records)
		for i := uint32(n); i < m.records; i++ {
			v := logb.Get(logKey(st.FlowID, logRecordKind, i))
			if v == nil {
				return damagedRecord(t.s.path, st.FlowID, "state", fmt.Errorf("record %d of %d is missing", i, m.records))
			}
			var r state.Record
			if err := unmarshalJSON(bytes.Clone(v), &r); err != nil {
				return damagedRecord(t.s.path, st.FlowID, "state", fmt.Errorf("record %d: %w", i, err))
			}
			recs = append(recs, r)
		}
		out.records = recs
	}
	if n := len(have.trace); uint32(n) < m.trace {
		trace := make([]json.RawMessage, n, m.trace)
		copy(trace, have.trace)
		for i := uint32(n); i < m.trace; i++ {
			v := logb.Get(logKey(st.FlowID, logTraceKind, i))
			if v == nil || !json.Valid(v) {
				return damagedRecord(t.s.path, st.FlowID, "state", fmt.Errorf("trace entry %d of %d is missing or not JSON", i, m.trace))
			}
			trace = append(trace, json.RawMessage(bytes.Clone(v)))
		}
		out.trace = trace
	}
	st.Records, st.Trace = nil, nil
	if m.flags&logRecordsSet != 0 {
		st.Records = copyRecords(out.records)
	}
	if m.flags&logTraceSet != 0 {
		st.Trace = copyTrace(out.trace)
	}
	if out.records != nil || out.trace != nil {
		t.note(st.FlowID, out)
	}
	return nil
}

// writeLog writes st's records and trace as flowID's log entries: only
// those past the stored ones when the stored ones are the Store's cached
// entries and st begins with them; else all of them, under a new tag. ref
// is the spec reference the state is stored with. It notes what to cache
// once the transaction commits.
func (t *tx) writeLog(st *state.FlowState, ref specRef) error {
	logb, err := t.bucket(bucketFlowLog)
	if err != nil {
		return err
	}
	var flags byte
	if st.Records != nil {
		flags |= logRecordsSet
	}
	if len(st.Trace) > 0 {
		flags |= logTraceSet // omitempty in the state's JSON: [] read back as nil
	}
	if uint64(len(st.Records)) > 1<<31 || uint64(len(st.Trace)) > 1<<31 {
		return fmt.Errorf("store: %w: flow %s has too many records", ErrInvalid, st.FlowID)
	}
	from, fromTrace := 0, 0
	tag := uint64(0)
	var kept logMeta // the stored meta entry, when its tag is kept
	prev := t.s.logs.get(st.FlowID)
	if pending, ok := t.logs[st.FlowID]; ok {
		prev = pending // written (or read) earlier in this transaction
	}
	if raw := logb.Get(logMetaKey(st.FlowID)); raw != nil && prev != nil {
		if m, err := decodeLogMeta(raw); err == nil && m.tag == prev.tag &&
			m.records == uint32(len(prev.records)) && m.trace == uint32(len(prev.trace)) &&
			prefixRecords(st.Records, prev.records) && prefixTrace(st.Trace, prev.trace) {
			tag, from, fromTrace = m.tag, len(prev.records), len(prev.trace)
			kept = m
		}
	}
	if tag == 0 {
		for _, kind := range []byte{logRecordKind, logTraceKind} { // not the steps' (flowsteps.go)
			if err := deleteKeys(logb, append(logPrefix(st.FlowID), kind)); err != nil {
				return err
			}
		}
		for tag == 0 {
			tag = rand.Uint64()
		}
		prev = nil
	}
	// What is cached is what Get would decode from the file: the record
	// decoded from its encoding, the trace entry as encoded. An append
	// extends prev's arrays in place when they have room (append's own
	// amortised growth), rather than copying every entry: prev's entries
	// are never changed, and entries past them are seen by no one but this
	// transaction — a Store's writers run one at a time (Store.run), and
	// one that rolled back left nothing anyone reads there.
	next := &cachedLog{tag: tag}
	if prev != nil {
		next.records, next.trace = prev.records[:from], prev.trace[:fromTrace]
	}
	for i := from; i < len(st.Records); i++ {
		v, err := marshalJSON(&st.Records[i])
		if err != nil {
			return fmt.Errorf("store: encode record %d of flow %s: %w", i, st.FlowID, err)
		}
		var r state.Record
		if err := unmarshalJSON(bytes.Clone(v), &r); err != nil {
			return fmt.Errorf("store: record %d of flow %s does not decode: %w", i, st.FlowID, err)
		}
		if err := logb.Put(logKey(st.FlowID, logRecordKind, uint32(i)), v); err != nil {
			return err
		}
		next.records = append(next.records, r)
	}
	for i := fromTrace; i < len(st.Trace); i++ {
		// Encoded as the state's JSON encoded it (compact, HTML-escaped).
		v, err := marshalJSON(st.Trace[i])
		if err != nil {
			return fmt.Errorf("store: encode trace entry %d of flow %s: %w", i, st.FlowID, err)
		}
		if err := logb.Put(logKey(st.FlowID, logTraceKind, uint32(i)), v); err != nil {
			return err
		}
		next.trace = append(next.trace, v)
	}
	m := logMeta{tag: tag, records: uint32(len(st.Records)), trace: uint32(len(st.Trace)), flags: flags}
	if ref.ok {
		m.flags |= logSpecSet
		m.spec = ref.hash
	}
	// An unchanged entry (a transition that added no record) is not
	// rewritten: the Put would dirty the flowlog's B-tree path, three
	// more pages to write and fdatasync at 10,000 flows.
	if m != kept {
		if err := logb.Put(logMetaKey(st.FlowID), m.encode()); err != nil {
			return err
		}
	}
	t.note(st.FlowID, next)
	return nil
}

// deleteLog removes every flowlog entry of flowID (its steps' too).
func (t *tx) deleteLog(flowID string) error {
	logb, err := t.bucket(bucketFlowLog)
	if err != nil {
		return err
	}
	return deleteKeys(logb, logPrefix(flowID))
}

// deleteKeys removes every key of b that begins with prefix.
func deleteKeys(b *bolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// prefixRecords reports whether recs begins with the entries of prev.
func prefixRecords(recs, prev []state.Record) bool {
	if len(recs) < len(prev) {
		return false
	}
	for i := range prev {
		if !sameRecord(&recs[i], &prev[i]) {
			return false
		}
	}
	return true
}

// sameRecord compares two records field by field, the pointed-to strings
// by value and times with Equal. A field added to Record that == cannot
// compare does not compile here; a pointer field compares by identity,
// which copies never share, so such a record is seen as changed and the
// flow's entries are rewritten: slower, never wrong.
func sameRecord(a, b *state.Record) bool {
	x, y := *a, *b
	if !sameString(x.RoundStartStepID, y.RoundStartStepID) || !sameString(x.Agent, y.Agent) ||
		!sameString(x.ChildFlowID, y.ChildFlowID) || !x.At.Equal(y.At) {
		return false
	}
	x.RoundStartStepID, y.RoundStartStepID = nil, nil
	x.Agent, y.Agent = nil, nil
	x.ChildFlowID, y.ChildFlowID = nil, nil
	x.At = y.At
	return x == y
}

func sameString(a, b *string) bool {
	return a == b || a != nil && b != nil && *a == *b
}

func prefixTrace(trace, prev []json.RawMessage) bool {
	if len(trace) < len(prev) {
		return false
	}
	for i := range prev {
		if !bytes.Equal(trace[i], prev[i]) {
			return false
		}
	}
	return true
}

// spareRecords is the room a copied slice of records has for more: a
// transition appends a step's record or two to what Get returned, which
// would otherwise copy all of them again, into an array twice as long.
const spareRecords = 4

// copyRecords returns a private copy of recs, never nil, with room for
// spareRecords more.
func copyRecords(recs []state.Record) []state.Record {
	out := make([]state.Record, len(recs), len(recs)+spareRecords)
	copy(out, recs)
	for i := range out {
		r := &out[i]
		r.RoundStartStepID = cloneString(r.RoundStartStepID)
		r.Agent = cloneString(r.Agent)
		r.ChildFlowID = cloneString(r.ChildFlowID)
	}
	return out
}

func cloneString(p *string) *string {
	if p == nil {
		return nil
	}
	s := *p
	return &s
}

// copyTrace returns a private copy of trace, never nil.
func copyTrace(trace []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(trace))
	for i, v := range trace {
		out[i] = bytes.Clone(v)
	}
	return out
}
