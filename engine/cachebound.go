package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The result cache's bound (the original's eviction): an entry older than
// MaxAge is a miss, and writing past MaxEntries entries removes the oldest
// written. It is decided here, over any Store: every driver reads and
// writes the cache through CacheBound (ResultCache), which stamps each
// value with its write time and keeps an index of the entries in the order
// they were written (under CacheIndexKey), so a store only keeps, gets and
// deletes opaque values. An expired entry is removed by the next write.
//
// An entry written before the bound (no stamp) still reads: the drivers
// check a cached value against the step's checks before using it, so it is
// as good as one written now; it is not in the index, so it neither expires
// nor counts towards MaxEntries until a write of its key stamps it.

// Default bound of the result cache, the original's (30 days, 2,000 entries).
const (
	DefaultCacheMaxAge     = 30 * 24 * time.Hour
	DefaultCacheMaxEntries = 2000
)

// CacheIndexKey is the result-cache entry that lists the others in write
// order; no CacheKey is equal to it.
const CacheIndexKey = "stratum-cache-index"

// cacheStamp starts a stamped value: it is followed by the write time
// (unix nanoseconds, 8 bytes big-endian) and the value. No JSON value
// starts with a NUL, so a value written before the stamp is told apart.
var cacheStamp = []byte("\x00stratum-cache-at\x00")

// CacheBound is the result cache's bound; a zero field is its default.
type CacheBound struct {
	MaxAge     time.Duration
	MaxEntries int
}

// ResultCache is the bound every driver uses.
var ResultCache = CacheBound{MaxAge: DefaultCacheMaxAge, MaxEntries: DefaultCacheMaxEntries}

// ParseCacheBound is the bound the original's environment sets:
// maxAgeDays (STRATUM_CACHE_MAX_AGE_DAYS) and maxEntries
// (STRATUM_CACHE_MAX_ENTRIES) as whole numbers; an empty value, or one
// that is not a positive whole number (at most 36,500 days), keeps the
// default.
func ParseCacheBound(maxAgeDays, maxEntries string) CacheBound {
	b := CacheBound{MaxAge: DefaultCacheMaxAge, MaxEntries: DefaultCacheMaxEntries}
	if d, err := strconv.Atoi(strings.TrimSpace(maxAgeDays)); err == nil && d > 0 && d <= 365*100 {
		b.MaxAge = time.Duration(d) * 24 * time.Hour
	}
	if n, err := strconv.Atoi(strings.TrimSpace(maxEntries)); err == nil && n > 0 {
		b.MaxEntries = n
	}
	return b
}

// ResultCacheDisabled reads the original's kill switch of the result cache
// of agent-driven flows (STRATUM_DISABLE_RESULT_CACHE, for
// Service.NoResultCache): any value but "", 0, false or no (any case).
func ResultCacheDisabled(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no":
		return false
	}
	return true
}

func (b CacheBound) limits() (time.Duration, int) {
	age, n := b.MaxAge, b.MaxEntries
	if age <= 0 {
		age = DefaultCacheMaxAge
	}
	if n <= 0 {
		n = DefaultCacheMaxEntries
	}
	return age, n
}

func (b CacheBound) expired(at, now time.Time) bool {
	age, _ := b.limits()
	return now.Sub(at) > age
}

// Read returns key's value when it is in the cache and not older than
// MaxAge at now (ok false: a miss).
func (b CacheBound) Read(tx Tx, key string, now time.Time) ([]byte, bool, error) {
	if key == CacheIndexKey {
		return nil, false, nil
	}
	raw, ok, err := tx.CacheGet(key)
	if err != nil || !ok {
		return nil, false, err
	}
	at, v, stamped := unstampCache(raw)
	if stamped && b.expired(at, now) {
		return nil, false, nil
	}
	return v, true, nil
}

// Write stores value under key, written at now, and removes the entries
// expired at now and, past MaxEntries, the oldest written.
func (b CacheBound) Write(tx Tx, key string, value []byte, now time.Time) error {
	if key == CacheIndexKey {
		return fmt.Errorf("engine: %q is the result cache's index, not an entry", key)
	}
	raw, _, err := tx.CacheGet(CacheIndexKey)
	if err != nil {
		return err
	}
	idx := append(parseCacheIndex(raw, key), cacheIndexEntry{at: now, key: key})
	_, max := b.limits()
	drop := 0
	for drop < len(idx)-1 && (len(idx)-drop > max || b.expired(idx[drop].at, now)) {
		if err := tx.CacheDelete(idx[drop].key); err != nil {
			return err
		}
		drop++
	}
	if err := tx.CachePut(key, stampCache(value, now)); err != nil {
		return err
	}
	return tx.CachePut(CacheIndexKey, encodeCacheIndex(idx[drop:]))
}

type cacheIndexEntry struct {
	at  time.Time
	key string
}

// parseCacheIndex decodes the index ("<unix ns> <key>" lines, oldest
// first), leaving out skip and any line it cannot read (the cache is
// best-effort: such an entry is no longer bounded, never wrong).
func parseCacheIndex(raw []byte, skip string) []cacheIndexEntry {
	var out []cacheIndexEntry
	for _, line := range strings.Split(string(raw), "\n") {
		ns, key, ok := strings.Cut(line, " ")
		if !ok || key == skip || key == "" {
			continue
		}
		n, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			continue
		}
		out = append(out, cacheIndexEntry{at: time.Unix(0, n), key: key})
	}
	return out
}

func encodeCacheIndex(idx []cacheIndexEntry) []byte {
	var buf bytes.Buffer
	for _, e := range idx {
		buf.WriteString(strconv.FormatInt(e.at.UnixNano(), 10))
		buf.WriteByte(' ')
		buf.WriteString(e.key)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func stampCache(value []byte, at time.Time) []byte {
	out := make([]byte, 0, len(cacheStamp)+8+len(value))
	out = append(out, cacheStamp...)
	out = binary.BigEndian.AppendUint64(out, uint64(at.UnixNano()))
	return append(out, value...)
}

// unstampCache splits a stored value into its write time and the value;
// stamped is false for a value written without one (returned whole).
func unstampCache(raw []byte) (at time.Time, value []byte, stamped bool) {
	if !bytes.HasPrefix(raw, cacheStamp) || len(raw) < len(cacheStamp)+8 {
		return time.Time{}, raw, false
	}
	rest := raw[len(cacheStamp):]
	return time.Unix(0, int64(binary.BigEndian.Uint64(rest[:8]))), rest[8:], true
}
