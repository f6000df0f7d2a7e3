package store

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// Bucket and key names; see the schema in doc.go. Each is a top-level bucket.
var (
	// bucketMeta holds raw (not JSON) metadata: format, schema version, timestamps.
	bucketMeta = []byte("meta")
	// bucketFlows: flow id → FlowState JSON.
	bucketFlows = []byte("flows")
	// bucketSummaries: flow id → FlowSummary JSON (what List returns).
	bucketSummaries = []byte("summaries")
	// bucketByCreated: created-at key ‖ flow id → summary. Newest-first listing.
	bucketByCreated = []byte("idx_created")
	// bucketByStatus: status ‖ 0x00 ‖ created-at key ‖ flow id → summary.
	bucketByStatus = []byte("idx_status")
	// bucketGates: flow id → summary, for every flow awaiting a gate.
	bucketGates = []byte("idx_gates")
	// bucketDeadlines: deadline key (timeKey of Gate.Deadline) ‖ flow id →
	// empty, for every flow awaiting a gate with a deadline (since schema
	// 7): GatesDue reads the expired ones from its start.
	bucketDeadlines = []byte("idx_deadline")
	// bucketEvents: sequence (8-byte big-endian) → Event JSON, and each
	// flow's index of its events, flow id ‖ 0x00 ‖ sequence → empty (since
	// schema 3; the 8-byte sequence keys, which start with 0x00, sort before
	// every index key, whose flow id is non-empty without NUL). The bucket's
	// own sequence (NextSequence) is the last sequence ever assigned.
	bucketEvents = []byte("events")
	// bucketFlowEvents held the per-flow index up to schema 2.
	bucketFlowEvents = []byte("idx_flow_events")
	// bucketCache: cache key → cached value (opaque bytes).
	bucketCache = []byte("cache")
	// bucketSpecs: sha256 of a spec → reference count ‖ spec text (specs.go).
	bucketSpecs = []byte("specs")

	// allBuckets is every bucket a current store has.
	allBuckets = [][]byte{
		bucketMeta, bucketFlows, bucketSummaries, bucketByCreated, bucketByStatus,
		bucketGates, bucketEvents, bucketCache, bucketSpecs, bucketFlowLog,
		bucketDeadlines,
	}

	// keyFormat in meta is the literal "stratum"; it marks the file as ours.
	keyFormat = []byte("format")
	// keySchemaVersion in meta is the schema version as ASCII decimal ("1").
	keySchemaVersion = []byte("schema_version")
	// keyCreatedAt / keyUpgradedAt in meta are RFC 3339 UTC timestamps.
	keyCreatedAt  = []byte("created_at")
	keyUpgradedAt = []byte("upgraded_at")

	formatMagic = []byte("stratum")
)

// Limits on keys (bbolt's own limit is 32 KiB).
const (
	maxFlowIDLen   = 512
	maxCacheKeyLen = 4096
)

// u64 encodes v as 8 bytes big-endian, so keys sort numerically.
func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// timeKey encodes t as 8 bytes that sort chronologically (signed Unix
// nanoseconds with the sign bit flipped).
func timeKey(t time.Time) []byte {
	return u64(uint64(t.UnixNano()) ^ (1 << 63))
}

func createdKey(sum indexRef) []byte {
	k := make([]byte, 0, 8+len(sum.id))
	k = append(k, timeKey(sum.created)...)
	return append(k, sum.id...)
}

// deadlineKey is sum's key in idx_deadline: its gate's deadline (the zero
// time when it has none: the entry is then off) ‖ flow id.
func deadlineKey(sum *state.FlowSummary) []byte {
	var at time.Time
	if sum.Gate != nil && sum.Gate.Deadline != nil {
		at = *sum.Gate.Deadline
	}
	k := make([]byte, 0, 8+len(sum.FlowID))
	k = append(k, timeKey(at)...)
	return append(k, sum.FlowID...)
}

// keyTime decodes the time at the start of a key made with timeKey.
func keyTime(k []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])^(1<<63))).UTC()
}

func statusPrefix(status state.FlowStatus) []byte {
	return append([]byte(status), 0)
}

func statusKey(sum indexRef) []byte {
	k := make([]byte, 0, len(sum.status)+1+8+len(sum.id))
	k = append(k, statusPrefix(sum.status)...)
	k = append(k, timeKey(sum.created)...)
	return append(k, sum.id...)
}

func flowEventPrefix(flowID string) []byte {
	return append([]byte(flowID), 0)
}

func flowEventKey(flowID string, seq uint64) []byte {
	return append(flowEventPrefix(flowID), u64(seq)...)
}

// indexRef is what the secondary indexes are keyed by.
type indexRef struct {
	id      string
	status  state.FlowStatus
	created time.Time
}

func validFlowID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("store: %w: empty flow id", ErrInvalid)
	case len(id) > maxFlowIDLen:
		return fmt.Errorf("store: %w: flow id longer than %d bytes", ErrInvalid, maxFlowIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] == 0 {
			return fmt.Errorf("store: %w: flow id contains a NUL byte", ErrInvalid)
		}
	}
	return nil
}
