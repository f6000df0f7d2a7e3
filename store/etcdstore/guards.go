package etcdstore

import (
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// Guard records (engine/guard): gd/<key>/r is a resource's registration,
// gd/<key>/e/<seq, 20 digits> its ledger entries, append-only. A key is
// a hex digest, so one resource's keys never prefix another's. Appending
// reads the entry's key (absent) in the transaction, so two writers racing
// for one entry conflict at commit and the loser's transaction runs again.

func guardKeyOK(key string) error {
	if key == "" || len(key) > 128 || strings.ContainsAny(key, "/\x00") {
		return fmt.Errorf("etcd store: invalid guard key %q", key)
	}
	return nil
}

func (t *tx) guardReg(key string) string    { return t.s.key("gd/", key, "/r") }
func (t *tx) guardLedger(key string) string { return t.s.key("gd/", key, "/e/") }

func (t *tx) GuardGet(key string) ([]byte, bool, error) {
	if err := guardKeyOK(key); err != nil {
		return nil, false, err
	}
	v, ok, err := t.get(t.guardReg(key))
	if err != nil || !ok {
		return nil, false, err
	}
	return append([]byte{}, v...), true, nil
}

func (t *tx) GuardPut(key string, reg []byte) error {
	if err := guardKeyOK(key); err != nil {
		return err
	}
	if err := t.writable(); err != nil {
		return err
	}
	t.put(t.guardReg(key), append([]byte{}, reg...))
	return nil
}

func (t *tx) GuardEntries(key string) ([][]byte, error) {
	if err := guardKeyOK(key); err != nil {
		return nil, err
	}
	p := t.guardLedger(key)
	kvs, err := t.scan(p, prefixEnd(p), 0, false)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(kvs))
	for _, k := range kvs {
		out = append(out, append([]byte{}, k.val...))
	}
	return out, nil
}

func (t *tx) GuardAppend(key string, seq int, entry []byte) error {
	if err := guardKeyOK(key); err != nil {
		return err
	}
	if err := t.writable(); err != nil {
		return err
	}
	p := t.guardLedger(key)
	kvs, err := t.scan(p, prefixEnd(p), 0, false)
	if err != nil {
		return err
	}
	if seq != len(kvs) {
		return fmt.Errorf("guard %s: entry %d: %w (the ledger has %d)", key, seq, engine.ErrConflict, len(kvs))
	}
	k := fmt.Sprintf("%s%020d", p, seq)
	if _, exists, err := t.get(k); err != nil {
		return err
	} else if exists {
		return fmt.Errorf("guard %s: entry %d: %w", key, seq, engine.ErrConflict)
	}
	t.put(k, append([]byte{}, entry...))
	return nil
}

// GuardKeys returns the keys with a registration, in key order.
func (t *tx) GuardKeys() ([]string, error) {
	p := t.s.key("gd/")
	kvs, err := t.scan(p, prefixEnd(p), 0, false)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range kvs {
		if rest, ok := strings.CutSuffix(strings.TrimPrefix(k.key, p), "/r"); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	return out, nil
}
