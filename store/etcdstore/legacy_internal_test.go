package etcdstore

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// indexLegacy does what the indexer of schema 6 and before did (tests: the
// layout such a stratum left): it moves every key of p/ into the ordered
// log, e/<seq:16> and x/<id>‖NUL‖<seq:16>, with the events' numbers
// stamped, 40 keys per etcd transaction, each of which commits only if
// every key it moves is still there unchanged.
func (s *Store) indexLegacy(ctx context.Context) error {
	p := s.key("p/")
	for range 1000 {
		r, err := s.cli.Get(ctx, p, clientv3.WithRange(prefixEnd(p)), clientv3.WithLimit(40))
		if err != nil || len(r.Kvs) == 0 {
			return err
		}
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		for _, k := range r.Kvs {
			evs, err := pendingEvents(kv{key: string(k.Key), val: k.Value, mod: k.ModRevision})
			var b []byte
			if err == nil {
				b, err = encodeBatch(evs)
			}
			if err != nil {
				return err
			}
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(k.Key)), "=", k.ModRevision))
			ops = append(ops, clientv3.OpDelete(string(k.Key)),
				clientv3.OpPut(s.key("e/", hex16(evs[0].Seq)), string(b)),
				clientv3.OpPut(s.key("x/", evs[0].FlowID, "\x00", hex16(evs[0].Seq)), string(b)))
		}
		if _, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit(); err != nil {
			return err
		}
	}
	return nil
}
