package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/stratum-go/stratum/engine/state"
)

// Spec texts are stored once per content (since schema 3): a flow state's
// raw_spec, the same several KiB for every flow of a spec, is kept out of
// the state's JSON, which holds a reference instead, so a transition
// neither encodes, decodes nor rewrites it. Get puts the text back; the
// engine never sees a reference.
//
//	specs/<sha256:32> = <flows referring to it: 8, big-endian> ‖ spec text
//
// and in flows/<id> JSON, "raw_spec" is specRefPrefix followed by the hex
// sha256 (empty specs are stored as they are). A spec's entry is written
// only when a flow is created, deleted or changes spec; it is deleted with
// the last flow referring to it.
const specRefPrefix = "\x00sha256:"

// specRef is a flow's reference to its spec.
type specRef struct {
	hash [sha256.Size]byte
	text string // the spec, when known
	ok   bool   // false: no spec (empty raw_spec)
}

// isSpecRef reports whether a stored raw_spec is a reference.
func isSpecRef(raw string) bool {
	return len(raw) == len(specRefPrefix)+2*sha256.Size && strings.HasPrefix(raw, specRefPrefix)
}

func parseSpecRef(raw string) (specRef, error) {
	var r specRef
	if raw == "" {
		return r, nil
	}
	if !isSpecRef(raw) {
		return r, fmt.Errorf("raw_spec is stored inline, not as a reference")
	}
	if _, err := hex.Decode(r.hash[:], []byte(raw[len(specRefPrefix):])); err != nil {
		return r, fmt.Errorf("bad spec reference: %w", err)
	}
	r.ok = true
	return r, nil
}

func (r specRef) String() string {
	if !r.ok {
		return ""
	}
	return specRefPrefix + hex.EncodeToString(r.hash[:])
}

// refOfText is the reference of spec text, reusing known's hash when known
// holds the same text (the state was read in this transaction).
func refOfText(text string, known specRef) specRef {
	if text == "" {
		return specRef{}
	}
	if known.ok && known.text == text {
		return known
	}
	return specRef{hash: sha256.Sum256([]byte(text)), text: text, ok: true}
}

// specHashes remembers the hash of the spec texts a Store wrote last, so
// that a Put of a flow not read in its own transaction (the engine reads
// in a View and writes in an Update) compares the text (one memory
// comparison) instead of hashing it again: the text of a 200-step spec
// is 20 KiB, hashed on every transition otherwise.
//
// It also keeps the texts it read by their hash, so that Get gives every
// flow of a spec the same (immutable) string instead of copying the text
// out of the file each time.
type specHashes struct {
	mu     sync.Mutex
	hashes map[string][sha256.Size]byte
	texts  map[[sha256.Size]byte]string
}

// text returns the spec text stored as v (count ‖ text) under hash h.
func (h *specHashes) text(hash [sha256.Size]byte, v []byte) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.texts[hash]; ok && len(t) == len(v)-8 {
		return t
	}
	t := string(v[8:])
	if h.texts == nil || len(h.texts) >= specHashesSize {
		h.texts = map[[sha256.Size]byte]string{}
	}
	h.texts[hash] = t
	return t
}

// specHashesSize bounds the texts remembered.
const specHashesSize = 16

// refOf is refOfText, remembering the hash of each text.
func (h *specHashes) refOf(text string, known specRef) specRef {
	if text == "" || known.ok && known.text == text {
		return refOfText(text, known)
	}
	h.mu.Lock()
	sum, ok := h.hashes[text]
	h.mu.Unlock()
	if ok {
		return specRef{hash: sum, text: text, ok: true}
	}
	r := refOfText(text, known)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hashes == nil || len(h.hashes) >= specHashesSize {
		h.hashes = map[string][sha256.Size]byte{}
	}
	h.hashes[text] = r.hash
	return r
}

// resolveSpec replaces the reference in st.RawSpec by the spec text,
// returning the reference (for the transaction's cache).
func (t *tx) resolveSpec(st *state.FlowState) (specRef, error) {
	if !isSpecRef(st.RawSpec) {
		return refOfText(st.RawSpec, specRef{}), nil
	}
	r, err := parseSpecRef(st.RawSpec)
	if err != nil {
		return r, corruptError(t.s.path, "flow "+st.FlowID, err)
	}
	specs, err := t.bucket(bucketSpecs)
	if err != nil {
		return r, err
	}
	v := specs.Get(r.hash[:])
	if len(v) < 8 {
		return r, corruptError(t.s.path, fmt.Sprintf("flow %s refers to spec %x, which is missing", st.FlowID, r.hash), nil)
	}
	r.text = t.s.specHashes.text(r.hash, v)
	st.RawSpec = r.text
	return r, nil
}

// storedSpecRef reads the spec reference of the stored flow value v without
// keeping the rest of it.
func (t *tx) storedSpecRef(id string, v []byte) (specRef, error) {
	var head struct {
		RawSpec string `json:"raw_spec"`
	}
	if err := unmarshalJSON(bytes.Clone(v), &head); err != nil {
		return specRef{}, t.decodeErr("flow "+id, err)
	}
	if !isSpecRef(head.RawSpec) {
		// A state written inline (tests, or a damaged file): nothing counted.
		return specRef{}, nil
	}
	r, err := parseSpecRef(head.RawSpec)
	if err != nil {
		return r, corruptError(t.s.path, "flow "+id, err)
	}
	return r, nil
}

// adjustSpec adds delta to the number of flows referring to r's spec,
// storing the text when it is new and deleting it when no flow refers to
// it any more.
func adjustSpec(specs *bolt.Bucket, r specRef, delta int64) error {
	if !r.ok {
		return nil
	}
	v := specs.Get(r.hash[:])
	var n uint64
	if len(v) >= 8 {
		n = binary.BigEndian.Uint64(v)
	}
	n = uint64(int64(n) + delta)
	if int64(n) <= 0 {
		return specs.Delete(r.hash[:])
	}
	var text []byte
	switch {
	case len(v) >= 8:
		text = v[8:]
	case r.text != "":
		text = []byte(r.text)
	default:
		return fmt.Errorf("spec %x: text unknown", r.hash)
	}
	nv := make([]byte, 8, 8+len(text))
	binary.BigEndian.PutUint64(nv, n)
	return specs.Put(r.hash[:], append(nv, text...))
}
