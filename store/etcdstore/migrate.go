package etcdstore

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// namespaces are the first segments of the keys of schema 1 below the
// prefix (see the package comment).
var namespaces = []string{"meta/", "f/", "s/", "c/", "t/", "g/", "e/", "x/", "d/", "k/", "leases/"}

// migrateTimeout bounds a migration (and the wait of another process for
// it): it copies every key of the prefix.
const migrateTimeout = 5 * time.Minute

// migrateBatch is the number of keys per etcd transaction of a migration
// (etcd refuses more than 128 operations by default).
const migrateBatch = 100

// migrate moves a prefix written in schema 1 (keys below "/P/") to schema 2
// (below "/P/\x00"), in place, once: under an etcd lock on the prefix (a
// second process waits, then finds it done), it copies the prefix's own
// keys at one revision, in batches, then writes meta/format and
// meta/schema_version 2 under the new root in one transaction (the commit
// point: a migration interrupted before it is started again from scratch),
// marks the old layout with meta/schema_version "2" (a stratum that knows
// only schema 1 refuses the prefix: "written by a newer stratum"), and
// deletes the copied keys.
//
// A schema 1 prefix P holds, under "/P/", the keys of the prefixes nested
// in it too ("/P/d/…" of P/d); they are told apart and left alone: a key is
// P's when what follows "/P/" starts with one of P's namespaces (meta/, f/,
// s/, …) and it does not lie in a nested prefix: one whose meta/format is
// under "/P/" (schema 1: "/P/<N>/meta/format"), the rest of the key after
// "/P/<N>/" starting with a namespace, or a schema 2 root ("/P/<N>/\x00…",
// a NUL right after a slash, which no key of P has). Stop every stratum
// older than this one on the prefix before upgrading: a write it makes
// during the migration is lost.
func (s *Store) migrate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, migrateTimeout)
	defer cancel()
	sess, err := concurrency.NewSession(s.cli, concurrency.WithContext(ctx), concurrency.WithTTL(30))
	if err != nil {
		return s.wrap("migrate", err)
	}
	defer sess.Close()
	mu := concurrency.NewMutex(sess, s.key("meta/migrating"))
	if err := mu.Lock(ctx); err != nil {
		return s.wrap("migrate", err)
	}
	defer func() { _ = mu.Unlock(context.Background()) }()
	r, err := s.cli.Get(ctx, s.key("meta/format"))
	if err != nil {
		return s.wrap("migrate", err)
	}
	if len(r.Kvs) > 0 {
		return nil // another process migrated it
	}

	keys, rev, err := s.legacyKeys(ctx)
	if err != nil {
		return err
	}
	for i := 0; i < len(keys); i += migrateBatch {
		batch := keys[i:min(i+migrateBatch, len(keys))]
		var ops []clientv3.Op
		for _, k := range batch {
			rest := strings.TrimPrefix(k, s.pfx)
			if rest == "meta/format" || rest == "meta/schema_version" {
				continue
			}
			g, err := s.cli.Get(ctx, k, clientv3.WithRev(rev))
			if err != nil {
				return s.wrap("migrate", err)
			}
			if len(g.Kvs) == 0 {
				continue
			}
			kv := g.Kvs[0]
			if kv.Lease != 0 {
				// A runner lease's key stays on its etcd lease; if that
				// expired meanwhile, the key is gone, as it would be.
				if _, err := s.cli.Put(ctx, s.key(rest), string(kv.Value), clientv3.WithLease(clientv3.LeaseID(kv.Lease))); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
					return s.wrap("migrate", err)
				}
				continue
			}
			ops = append(ops, clientv3.OpPut(s.key(rest), string(kv.Value)))
		}
		if len(ops) > 0 {
			if _, err := s.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
				return s.wrap("migrate", err)
			}
		}
	}
	commit, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.Version(s.key("meta/format")), "=", 0)).
		Then(clientv3.OpPut(s.key("meta/format"), format),
			clientv3.OpPut(s.key("meta/schema_version"), strconv.Itoa(SchemaVersion)),
			clientv3.OpPut(s.pfx+"meta/schema_version", "2")).Commit() // the old layout's mark: moved below the root
	if err != nil {
		return s.wrap("migrate", err)
	}
	if !commit.Succeeded {
		return nil
	}
	var ops []clientv3.Op
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		_, err := s.cli.Txn(ctx).Then(ops...).Commit()
		ops = ops[:0]
		return err
	}
	for _, k := range keys {
		rest := strings.TrimPrefix(k, s.pfx)
		if rest == "meta/format" || rest == "meta/schema_version" {
			continue // the old layout's mark
		}
		if ops = append(ops, clientv3.OpDelete(k)); len(ops) == migrateBatch {
			if err := flush(); err != nil {
				return s.wrap("migrate", err)
			}
		}
	}
	if err := flush(); err != nil {
		return s.wrap("migrate", err)
	}
	return nil
}

// legacyKeys lists the keys of the prefix in schema 1 (see migrate), sorted,
// at one revision, which it returns.
func (s *Store) legacyKeys(ctx context.Context) ([]string, int64, error) {
	var all []string
	var rev int64
	from, end := s.pfx, clientv3.GetPrefixRangeEnd(s.pfx)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(1000)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		r, err := s.cli.Get(ctx, from, opts...)
		if err != nil {
			return nil, 0, s.wrap("migrate", err)
		}
		if rev == 0 {
			rev = r.Header.Revision
		}
		for _, kv := range r.Kvs {
			all = append(all, string(kv.Key))
		}
		if !r.More || len(r.Kvs) == 0 {
			break
		}
		from = string(r.Kvs[len(r.Kvs)-1].Key) + "\x00"
	}
	// The prefixes nested in this one that were written in schema 1.
	var nested []string
	for _, k := range all {
		rest := strings.TrimPrefix(k, s.pfx)
		if n, ok := strings.CutSuffix(rest, "/meta/format"); ok && n != "" {
			nested = append(nested, n+"/")
		}
	}
	own := all[:0]
	for _, k := range all {
		if ownLegacyKey(strings.TrimPrefix(k, s.pfx), nested) {
			own = append(own, k)
		}
	}
	sort.Strings(own)
	return own, rev, nil
}

// ownLegacyKey reports whether rest (a key without the prefix "/P/") is one
// of P's in schema 1, given P's nested schema 1 prefixes ("d/", "a/b/").
func ownLegacyKey(rest string, nested []string) bool {
	if strings.Contains(rest, "/\x00") {
		return false // a schema 2 root nested in P
	}
	if !hasNamespace(rest) {
		return false
	}
	for _, n := range nested {
		if r, ok := strings.CutPrefix(rest, n); ok && hasNamespace(r) {
			return false
		}
	}
	return true
}

func hasNamespace(rest string) bool {
	for _, ns := range namespaces {
		if strings.HasPrefix(rest, ns) {
			return true
		}
	}
	return false
}
