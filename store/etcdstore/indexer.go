package etcdstore

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The indexer moves pending events (p/) into the ordered log (e/, x/).

// indexBatch is how many pending events one indexing transaction moves
// (three operations each: etcd's default limit is 128 per transaction).
const indexBatch = 40

// indexDelay is how long the indexer waits before it moves what is
// pending, so that one indexing transaction carries the events of the
// commits of that time (readers find pending events meanwhile).
const indexDelay = 10 * time.Millisecond

// indexTries bounds how often the indexer tries to move one batch of its
// own events after another process moved or deleted some of them; what it
// leaves stays readable in p/ until an Open or a GC moves it.
const indexTries = 3

// newToken is a key part unique to one transaction attempt: this Store's
// random id and a counter.
func (s *Store) newToken() string {
	return fmt.Sprintf("%016x%08x", s.tokenBase, s.tokens.Add(1))
}

// pendingRec is one event a commit left in p/: its key, the commit's
// revision (the key's mod revision), and where and what it becomes in the
// log.
type pendingRec struct {
	key    string
	mod    int64
	seq    uint64
	flowID string
	json   []byte    // the event's JSON with its sequence number
	at     time.Time // when its commit returned
}

// Bounds of what one commit carries of its Store's earlier events (see
// claimIndex): etcd's default limit of operations per transaction, which
// a nested transaction shares with the one around it (its compares and
// operations count against what the outer one leaves), and the bytes the
// moves add to the commit.
const (
	etcdMaxTxnOps = 128
	carryMaxBytes = 64 << 10
)

// kickIndex makes sure an indexer runs: after a commit that appended (recs:
// its events) or, with scan, to move every pending event (Open: what a
// process that died left). One goroutine per Store at a time, which waits
// indexDelay, moves what waited that long, runs again while commits keep
// arriving or events wait, and ends when none are left.
//
// The indexer moves the events this Store appended, which it knows, and
// reads no range of p/: etcd keeps a deleted key in its index until the
// cluster is compacted, so a range over p/ costs a step for every event
// appended since the last compaction (and one indexer per process racing
// the others for the same keys made half their transactions fail). While
// the Store keeps committing, its next commit carries the moves
// (claimIndex) and the indexer finds nothing old enough: indexing costs no
// etcd transaction of its own.
func (s *Store) kickIndex(recs []pendingRec, scan bool) {
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	s.idxQueue = append(s.idxQueue, recs...)
	s.idxScan = s.idxScan || scan
	if s.idxRunning {
		s.idxDirty = true
		return
	}
	s.idxRunning = true
	go func() {
		ctx := context.Background()
		for {
			time.Sleep(indexDelay)
			s.idxMu.Lock()
			s.idxDirty = false
			cut := time.Now().Add(-indexDelay)
			n := 0
			for n < len(s.idxQueue) && !s.idxQueue[n].at.After(cut) {
				n++
			}
			recs, scan := s.idxQueue[:n:n], s.idxScan
			s.idxQueue, s.idxScan = s.idxQueue[n:], false
			if len(s.idxQueue) > 0 {
				s.idxDirty = true // younger ones: the next commit or round
			}
			s.idxMu.Unlock()
			if scan {
				_ = s.indexPending(ctx)
			}
			left := s.indexOwn(ctx, recs)
			s.idxMu.Lock()
			// What could not be moved (the cluster did not answer) is
			// tried again at the next kick; readers find it in p/.
			s.idxQueue = append(left, s.idxQueue...)
			if !s.idxDirty {
				s.idxRunning = false
				s.idxMu.Unlock()
				return
			}
			s.idxDirty = false
			s.idxMu.Unlock()
		}
	}()
}

// indexOwn moves recs, events this Store appended, into the log in
// batches; it returns those it could not move because the cluster did not
// answer. An event another process moved (an Open's or a GC's indexer) or
// deleted (Delete, a purge) meanwhile is left to them.
func (s *Store) indexOwn(ctx context.Context, recs []pendingRec) []pendingRec {
	for len(recs) > 0 {
		n := min(len(recs), indexBatch)
		batch := recs[:n]
		for try := 0; try < indexTries && len(batch) > 0; try++ {
			ok, err := s.moveEvents(ctx, batch)
			if err == nil && !ok {
				batch, err = s.stillPending(ctx, batch)
			}
			if err != nil {
				return recs
			}
			if ok {
				break
			}
		}
		recs = recs[n:]
	}
	return nil
}

// moveOps moves recs from p/ to e/<seq:16> and x/<id>‖NUL‖<seq:16>: the
// compares (every key still there as recs knew it) and the operations of
// an etcd transaction.
func (s *Store) moveOps(recs []pendingRec) ([]clientv3.Cmp, []clientv3.Op) {
	cmps := make([]clientv3.Cmp, 0, len(recs))
	ops := make([]clientv3.Op, 0, 3*len(recs))
	for _, r := range recs {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(r.key), "=", r.mod))
		ops = append(ops, clientv3.OpDelete(r.key),
			clientv3.OpPut(s.key("e/", hex16(r.seq)), string(r.json)),
			clientv3.OpPut(s.key("x/", r.flowID, "\x00", hex16(r.seq)), string(r.json)))
	}
	return cmps, ops
}

// moveEvents moves recs in one etcd transaction of their own (moveOps);
// false: another writer moved or deleted one first.
func (s *Store) moveEvents(ctx context.Context, recs []pendingRec) (bool, error) {
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cmps, ops := s.moveOps(recs)
	resp, err := s.cli.Txn(c).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// claimIndex takes, for a commit of width operations or compares (the
// larger, the nested transaction included), the oldest events this
// Store's earlier commits left pending — at most indexBatch, as many as
// etcd's default limit leaves room for, within carryMaxBytes — for the
// commit to move in a nested transaction (moveOps), which leaves the
// commit's own outcome alone. What the commit does not move goes back
// (unclaimIndex). A cluster whose limits are below etcd's defaults turns
// carrying off (noCarry).
func (s *Store) claimIndex(width int) []pendingRec {
	room := min(indexBatch, (etcdMaxTxnOps-width)/3)
	if room <= 0 || s.noCarry.Load() {
		return nil
	}
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	n, size := 0, 0
	for n < len(s.idxQueue) && n < room && size+2*len(s.idxQueue[n].json) <= carryMaxBytes {
		size += 2 * len(s.idxQueue[n].json)
		n++
	}
	recs := s.idxQueue[:n:n]
	s.idxQueue = s.idxQueue[n:]
	return recs
}

// unclaimIndex gives the indexer back what a commit claimed and did not
// move (it failed, or another writer moved or deleted one of them first:
// the indexer sorts that out, see indexOwn).
func (s *Store) unclaimIndex(recs []pendingRec) {
	if len(recs) == 0 {
		return
	}
	s.idxMu.Lock()
	s.idxQueue = append(recs, s.idxQueue...)
	s.idxMu.Unlock()
	s.kickIndex(nil, false)
}

// stillPending is the part of recs still in p/ as recs knew it, read in
// one request.
func (s *Store) stillPending(ctx context.Context, recs []pendingRec) ([]pendingRec, error) {
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ops := make([]clientv3.Op, len(recs))
	for i, r := range recs {
		ops[i] = clientv3.OpGet(r.key, clientv3.WithKeysOnly())
	}
	resp, err := s.cli.Txn(c).Then(ops...).Commit()
	if err != nil {
		return nil, err
	}
	var out []pendingRec
	for i, r := range resp.Responses {
		if kvs := r.GetResponseRange().Kvs; len(kvs) == 1 && kvs[0].ModRevision == recs[i].mod {
			out = append(out, recs[i])
		}
	}
	return out, nil
}

// indexPending moves every pending event of p/ into the log, whoever
// appended it (Open and GC: a process that died before indexing), reading
// p/ in batches. A batch another writer changed first (a Delete of the
// flow, another process's indexer) is read again. Readers see each event
// in exactly one place at every revision.
func (s *Store) indexPending(ctx context.Context) error {
	p := s.key("p/")
	for range 1000 {
		c, cancel := context.WithTimeout(ctx, s.timeout)
		r, err := s.cli.Get(c, p, clientv3.WithRange(prefixEnd(p)), clientv3.WithLimit(indexBatch))
		cancel()
		if err != nil || len(r.Kvs) == 0 {
			return err
		}
		recs := make([]pendingRec, 0, len(r.Kvs))
		for _, k := range r.Kvs {
			evs, err := pendingEvents(kv{key: string(k.Key), val: k.Value, mod: k.ModRevision})
			var b []byte
			if err == nil {
				b, err = encodeBatch(evs)
			}
			if err != nil {
				return err // a damaged key stays where it is (reads report it)
			}
			recs = append(recs, pendingRec{key: string(k.Key), mod: k.ModRevision, seq: evs[0].Seq, flowID: evs[0].FlowID, json: b})
		}
		ok, err := s.moveEvents(ctx, recs)
		if err != nil {
			return err
		}
		if ok && len(r.Kvs) < indexBatch {
			return nil // p/ held no more
		}
	}
	return nil
}
