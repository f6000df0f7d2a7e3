package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine/state"
)

// A flow's step outputs and attempts hold one entry per step it ran, and
// were encoded and decoded whole, with the rest of the state, by every
// transition: the part of a step's cost that grew with the flow once its
// records had moved to bucket flowlog (issue 21). Since schema 6 they live
// beside the state, one key per step id, in bucket flowlog with the
// records (flowlog.go), under kinds of their own:
//
//	flowlog/
//	    <flow id> ‖ 0x00 ‖ "n"                         = <tag:8> ‖ <outputs:4> ‖ <attempts:4> ‖ <flags:1>
//	    <flow id> ‖ 0x00 ‖ "s" ‖ <step id> ‖ 0x00 ‖ "a" = attempts[step id], ASCII decimal
//	    <flow id> ‖ 0x00 ‖ "s" ‖ <step id> ‖ 0x00 ‖ "o" = step_outputs[step id], JSON
//
// and flows/<id> holds the rest of the state (step_outputs and attempts
// null). The layout is for the pages a step dirties: its meta entry "n"
// sorts beside the records' meta entry "m", which a step done rewrites
// anyway (one leaf for both); a step's two entries sit side by side (one
// leaf for both; a step id may hold a NUL: such a key is read from its
// end); and the bucket's branch pages are the records' (a bucket of their
// own cost a page more per commit). The meta entry counts the entries of each map and its flags say
// which map is non-nil, as the state's JSON would ({} and null are told
// apart). Its tag names one content of the entries: a Put that changes,
// adds or removes any entry writes only those and a new random tag; one
// that changes none keeps the tag. So the entries under one tag never
// change, and a Store keeps, with its flowlog cache (cachedLog.steps), the
// maps it last read or wrote of a flow under their tag: Put compares the
// new state's entries with them (no encoding) and Get copies them instead
// of decoding, whenever the file's tag is the cached one.
//
// A flow's maps move here once either holds more than stepsInline steps,
// and stay here; until then they stay in flows/<id>, as in a schema-5
// state, and the flow has no "n" entry: a short flow's transition dirties
// no page for them, and its few entries cost less to encode with the
// state than a leaf of their own costs to write.

// stepsInline is how many steps a flow's step outputs and attempts may
// each hold in flows/<id>; beyond, they move to bucket flowlog.
const stepsInline = 16

// Kinds of the flowlog keys of steps: the meta entry's (the byte after the
// flow id's NUL), a step's entries' (that byte) and their last byte.
const (
	stepsMetaKind    byte = 'n'
	stepsStepKind    byte = 's'
	stepsOutputKind  byte = 'o'
	stepsAttemptKind byte = 'a'
)

// Flags of a steps meta entry.
const (
	stepsOutputsSet  byte = 1 << iota // StepOutputs is non-nil
	stepsAttemptsSet                  // Attempts is non-nil
)

// stepsMeta is a flow's steps meta entry.
type stepsMeta struct {
	tag               uint64
	outputs, attempts uint32
	flags             byte
}

const stepsMetaLen = 8 + 4 + 4 + 1

func (m stepsMeta) encode() []byte {
	b := make([]byte, stepsMetaLen)
	binary.BigEndian.PutUint64(b, m.tag)
	binary.BigEndian.PutUint32(b[8:], m.outputs)
	binary.BigEndian.PutUint32(b[12:], m.attempts)
	b[16] = m.flags
	return b
}

func decodeStepsMeta(b []byte) (stepsMeta, error) {
	if len(b) != stepsMetaLen {
		return stepsMeta{}, fmt.Errorf("steps meta entry of %d bytes, want %d", len(b), stepsMetaLen)
	}
	return stepsMeta{
		tag:      binary.BigEndian.Uint64(b),
		outputs:  binary.BigEndian.Uint32(b[8:]),
		attempts: binary.BigEndian.Uint32(b[12:]),
		flags:    b[16],
	}, nil
}

func stepsMetaKey(flowID string) []byte { return append(logPrefix(flowID), stepsMetaKind) }

func stepsKey(flowID string, kind byte, stepID string) []byte {
	k := make([]byte, 0, len(flowID)+len(stepID)+5)
	k = append(append(append(k, flowID...), 0, stepsStepKind), stepID...)
	return append(k, 0, kind)
}

// stepsPrefix begins the keys of flowID's step entries.
func stepsPrefix(flowID string) []byte { return append(logPrefix(flowID), stepsStepKind) }

// deleteSteps removes flowID's step entries and their meta entry from
// bucket flowlog (b).
func deleteSteps(b *bolt.Bucket, flowID string) error {
	if err := deleteKeys(b, stepsPrefix(flowID)); err != nil {
		return err
	}
	return b.Delete(stepsMetaKey(flowID))
}

// parseStepsKey reads what follows a flowlog key's flow id and NUL: the
// steps meta entry's kind, or a step entry's kind and step id (ok false:
// neither).
func parseStepsKey(rest []byte) (kind byte, stepID string, ok bool) {
	switch n := len(rest); {
	case n == 1 && rest[0] == stepsMetaKind:
		return stepsMetaKind, "", true
	case n >= 3 && rest[0] == stepsStepKind && rest[n-2] == 0 && (rest[n-1] == stepsOutputKind || rest[n-1] == stepsAttemptKind):
		return rest[n-1], string(rest[1 : n-2]), true
	}
	return 0, "", false
}

// splitSteps reports whether st's step outputs and attempts are to be
// stored in bucket flowlog: they are there already, or either map has
// grown past stepsInline steps.
func (t *tx) splitSteps(st *state.FlowState) (bool, error) {
	if len(st.StepOutputs) > stepsInline || len(st.Attempts) > stepsInline {
		return true, nil
	}
	b, err := t.bucket(bucketFlowLog)
	if err != nil {
		return false, err
	}
	return b.Get(stepsMetaKey(st.FlowID)) != nil, nil
}

// cachedSteps is what a Store last read or wrote of one flow's step
// outputs and attempts, under one tag: outputs as Get decodes them from
// the file. Never changed once cached.
type cachedSteps struct {
	tag      uint64
	outputs  map[string]any
	attempts map[string]int
	// bytes is the size of the entries as stored (cachedLog.size).
	bytes int
}

// pendingLog is the cachedLog this transaction will cache for flowID
// (nil: none yet), as a fresh copy this transaction may change.
func (t *tx) pendingLog(flowID string) *cachedLog {
	if l, ok := t.logs[flowID]; ok && l != nil {
		c := *l
		return &c
	}
	return &cachedLog{}
}

// knownSteps is the flow's cached steps as this transaction knows them:
// written or read earlier in it, else the Store's.
func (t *tx) knownSteps(flowID string) *cachedSteps {
	if l, ok := t.logs[flowID]; ok {
		if l == nil {
			return nil
		}
		if l.steps != nil {
			return l.steps
		}
	}
	if l := t.s.logs.get(flowID); l != nil {
		return l.steps
	}
	return nil
}

// readSteps fills st.StepOutputs and st.Attempts from flowID's step
// entries, when it has a meta entry (else st keeps what flows/<id> held):
// copies of the cached maps when the stored tag is the cached one, else
// decoded from the file.
func (t *tx) readSteps(st *state.FlowState) error {
	b, err := t.bucket(bucketFlowLog)
	if err != nil {
		return err
	}
	raw := b.Get(stepsMetaKey(st.FlowID))
	if raw == nil {
		return nil
	}
	m, err := decodeStepsMeta(raw)
	if err != nil {
		return damagedRecord(t.s.path, st.FlowID, "state", err)
	}
	have := t.knownSteps(st.FlowID)
	if have == nil || have.tag != m.tag {
		if have, err = t.decodeSteps(b, st.FlowID, m); err != nil {
			return err
		}
	}
	st.StepOutputs, st.Attempts = nil, nil
	if m.flags&stepsOutputsSet != 0 {
		st.StepOutputs = make(map[string]any, len(have.outputs)+1) // room for the next step's
		for k, v := range have.outputs {
			st.StepOutputs[k] = state.CloneValue(v)
		}
	}
	if m.flags&stepsAttemptsSet != 0 {
		st.Attempts = make(map[string]int, len(have.attempts)+1)
		for k, v := range have.attempts {
			st.Attempts[k] = v
		}
	}
	l := t.pendingLog(st.FlowID)
	l.steps = have
	t.note(st.FlowID, l)
	return nil
}

// decodeSteps reads every step entry of flowID, which must be the
// ones m counts.
func (t *tx) decodeSteps(b *bolt.Bucket, flowID string, m stepsMeta) (*cachedSteps, error) {
	out := &cachedSteps{tag: m.tag, outputs: make(map[string]any, m.outputs), attempts: make(map[string]int, m.attempts)}
	prefix := stepsPrefix(flowID)
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		kind, step, ok := parseStepsKey(k[len(prefix)-1:])
		if !ok {
			return nil, damagedRecord(t.s.path, flowID, "state", fmt.Errorf("bad flowlog key %q", k))
		}
		switch kind {
		case stepsOutputKind:
			var o any
			if err := unmarshalJSON(bytes.Clone(v), &o); err != nil {
				return nil, damagedRecord(t.s.path, flowID, "state", fmt.Errorf("output of step %q: %w", step, err))
			}
			out.outputs[step] = o
		case stepsAttemptKind:
			n, err := strconv.Atoi(string(v))
			if err != nil {
				return nil, damagedRecord(t.s.path, flowID, "state", fmt.Errorf("attempts of step %q: %w", step, err))
			}
			out.attempts[step] = n
		}
		out.bytes += len(k) + len(v)
	}
	if uint32(len(out.outputs)) != m.outputs || uint32(len(out.attempts)) != m.attempts {
		return nil, damagedRecord(t.s.path, flowID, "state", fmt.Errorf("%d step outputs and %d attempts stored, the meta entry counts %d and %d",
			len(out.outputs), len(out.attempts), m.outputs, m.attempts))
	}
	return out, nil
}

// writeSteps writes st's step outputs and attempts as flowID's step
// entries: only those that changed, were added or went (the tag kept if
// none did), compared with the stored ones — the ones this Store knows
// when the stored tag is theirs, else read from the file; all of them,
// after removing the stored ones, when those are damaged. It notes what
// to cache once the transaction commits.
func (t *tx) writeSteps(st *state.FlowState) error {
	b, err := t.bucket(bucketFlowLog)
	if err != nil {
		return err
	}
	if uint64(len(st.StepOutputs)) > 1<<31 || uint64(len(st.Attempts)) > 1<<31 {
		return fmt.Errorf("store: %w: flow %s has too many steps", ErrInvalid, st.FlowID)
	}
	var flags byte
	if st.StepOutputs != nil {
		flags |= stepsOutputsSet
	}
	if st.Attempts != nil {
		flags |= stepsAttemptsSet
	}
	prev, stored, err := t.storedSteps(b, st.FlowID)
	if err != nil {
		return err
	}
	// next starts as a copy of prev (a bulk copy of each map, cheaper than
	// inserting every entry again), and takes the changes.
	next := &cachedSteps{tag: prev.tag, outputs: maps.Clone(prev.outputs), attempts: maps.Clone(prev.attempts), bytes: prev.bytes}
	if next.outputs == nil {
		next.outputs = make(map[string]any, len(st.StepOutputs))
	}
	if next.attempts == nil {
		next.attempts = make(map[string]int, len(st.Attempts))
	}
	changed := prev.tag == 0 || stored.flags != flags
	for step, v := range st.StepOutputs {
		if old, ok := prev.outputs[step]; ok && state.EqualJSON(v, old) {
			continue
		}
		enc, err := marshalJSON(v)
		if err != nil {
			return fmt.Errorf("store: encode the output of step %q of flow %s: %w", step, st.FlowID, err)
		}
		var dec any // what Get decodes
		if err := unmarshalJSON(bytes.Clone(enc), &dec); err != nil {
			return fmt.Errorf("store: the output of step %q of flow %s does not decode: %w", step, st.FlowID, err)
		}
		k := stepsKey(st.FlowID, stepsOutputKind, step)
		if err := b.Put(k, enc); err != nil {
			return err
		}
		next.outputs[step] = dec
		next.bytes += len(k) + len(enc)
		changed = true
	}
	for step, n := range st.Attempts {
		if old, ok := prev.attempts[step]; ok && old == n {
			continue
		}
		k := stepsKey(st.FlowID, stepsAttemptKind, step)
		v := strconv.AppendInt(nil, int64(n), 10)
		if err := b.Put(k, v); err != nil {
			return err
		}
		next.attempts[step] = n
		next.bytes += len(k) + len(v)
		changed = true
	}
	for step := range prev.outputs {
		if _, ok := st.StepOutputs[step]; !ok {
			if err := b.Delete(stepsKey(st.FlowID, stepsOutputKind, step)); err != nil {
				return err
			}
			delete(next.outputs, step)
			changed = true
		}
	}
	for step := range prev.attempts {
		if _, ok := st.Attempts[step]; !ok {
			if err := b.Delete(stepsKey(st.FlowID, stepsAttemptKind, step)); err != nil {
				return err
			}
			delete(next.attempts, step)
			changed = true
		}
	}
	if changed {
		for next.tag == 0 || next.tag == prev.tag {
			next.tag = rand.Uint64()
		}
		m := stepsMeta{tag: next.tag, outputs: uint32(len(next.outputs)), attempts: uint32(len(next.attempts)), flags: flags}
		if err := b.Put(stepsMetaKey(st.FlowID), m.encode()); err != nil {
			return err
		}
	}
	l := t.pendingLog(st.FlowID)
	l.steps = next
	t.note(st.FlowID, l)
	return nil
}

// storedSteps is what writeSteps compares with: the step entries this
// Store knows when the stored tag is theirs, else those read from the
// file, with the stored meta; when the stored ones are damaged they are
// removed and prev is empty (all rewritten).
func (t *tx) storedSteps(b *bolt.Bucket, flowID string) (prev *cachedSteps, stored stepsMeta, err error) {
	prev = t.knownSteps(flowID)
	raw := b.Get(stepsMetaKey(flowID))
	if raw != nil {
		m, err := decodeStepsMeta(raw)
		if err == nil && (prev == nil || m.tag != prev.tag) {
			// Not the ones this Store knows (another writer's, or out of
			// its cache): read, so that only the changes are written.
			prev, err = t.decodeSteps(b, flowID, m)
		}
		if err == nil {
			stored = m
		} else {
			prev = nil // damaged: all rewritten
		}
	} else {
		prev = nil
	}
	if prev == nil {
		if raw != nil {
			if err := deleteSteps(b, flowID); err != nil {
				return nil, stepsMeta{}, err
			}
		}
		prev = &cachedSteps{}
	}
	return prev, stored, nil
}
