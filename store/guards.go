package store

import (
	"bytes"
	"fmt"

	"github.com/stratum-go/stratum/engine"
)

// Guard records (engine/guard) live in bucket guards, created by the first
// write (an additive bucket: a store without it has no guard records, and
// a stratum that does not know it leaves it alone, so no schema bump):
//
//	<key> 0x00 'r'          → the registration (opaque bytes)
//	<key> 0x00 'e' <seq u64> → ledger entry seq (opaque bytes), append-only
//
// A key is a resource's hex digest (no NUL), so one resource's keys never
// prefix another's.
var bucketGuards = []byte("guards")

const maxGuardKeyLen = 128

func guardKey(key string, kind byte, seq ...uint64) ([]byte, error) {
	if key == "" || len(key) > maxGuardKeyLen || bytes.IndexByte([]byte(key), 0) >= 0 {
		return nil, fmt.Errorf("store: %w: guard key %q", ErrInvalid, key)
	}
	k := append([]byte(key), 0, kind)
	for _, s := range seq {
		k = append(k, u64(s)...)
	}
	return k, nil
}

// GuardGet returns a copy of a resource's registration.
func (t *tx) GuardGet(key string) ([]byte, bool, error) {
	k, err := guardKey(key, 'r')
	if err != nil {
		return nil, false, err
	}
	var out []byte
	err = t.do(false, func() error {
		if b := t.btx.Bucket(bucketGuards); b != nil {
			if v := b.Get(k); v != nil {
				out = append([]byte{}, v...)
			}
		}
		return nil
	})
	return out, out != nil, err
}

// GuardPut creates or replaces a resource's registration.
func (t *tx) GuardPut(key string, reg []byte) error {
	k, err := guardKey(key, 'r')
	if err != nil {
		return err
	}
	return t.do(true, func() error {
		b, err := t.btx.CreateBucketIfNotExists(bucketGuards)
		if err != nil {
			return err
		}
		return b.Put(k, append([]byte{}, reg...))
	})
}

// GuardEntries returns a resource's ledger in order.
func (t *tx) GuardEntries(key string) ([][]byte, error) {
	p, err := guardKey(key, 'e')
	if err != nil {
		return nil, err
	}
	var out [][]byte
	err = t.do(false, func() error {
		b := t.btx.Bucket(bucketGuards)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			out = append(out, append([]byte{}, v...))
		}
		return nil
	})
	return out, err
}

// GuardAppend adds ledger entry seq, which must be the next.
func (t *tx) GuardAppend(key string, seq int, entry []byte) error {
	p, err := guardKey(key, 'e')
	if err != nil {
		return err
	}
	if seq < 0 {
		return fmt.Errorf("store: %w: guard entry %d", ErrInvalid, seq)
	}
	return t.do(true, func() error {
		b, err := t.btx.CreateBucketIfNotExists(bucketGuards)
		if err != nil {
			return err
		}
		n := 0
		c := b.Cursor()
		if k, _ := c.Seek(append(append([]byte{}, p...), u64(^uint64(0))...)); k == nil || !bytes.HasPrefix(k, p) {
			k, _ = c.Prev()
			if k != nil && bytes.HasPrefix(k, p) && len(k) == len(p)+8 {
				n = int(beU64(k[len(p):])) + 1
			}
		}
		if seq != n {
			return fmt.Errorf("guard %s: entry %d: %w (the ledger has %d)", key, seq, engine.ErrConflict, n)
		}
		return b.Put(append(append([]byte{}, p...), u64(uint64(seq))...), append([]byte{}, entry...))
	})
}

func beU64(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// GuardKeys returns the keys with a registration, in key order.
func (t *tx) GuardKeys() ([]string, error) {
	var out []string
	err := t.do(false, func() error {
		b := t.btx.Bucket(bucketGuards)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			if i := bytes.IndexByte(k, 0); i > 0 && len(k) == i+2 && k[i+1] == 'r' {
				out = append(out, string(k[:i]))
			}
			return nil
		})
	})
	return out, err
}
