package etcdstore

import (
	"strconv"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// lastAppendKey holds the number of events the last appending commit
// appended; its mod revision is that commit's. Every appending commit reads
// it and replaces it inside its own etcd transaction, and no transaction
// compares it, so it orders appends without making them conflict.
const lastAppendKey = "meta/last_append"

// prevKept is how many of its recent appending commits a Store remembers
// the predecessor of (a watcher further behind reads the log).
const prevKept = 4096

// notePrev remembers, for this Store's commit at revision rev, the
// sequence number of the last event committed before it, from what the
// commit read of lastAppendKey (absent: the prefix's first append since
// schema 4; nothing is known).
func (s *Store) notePrev(rev int64, r *etcdserverpb.RangeResponse) {
	if r == nil || len(r.Kvs) != 1 {
		return
	}
	n, err := strconv.ParseUint(string(r.Kvs[0].Value), 10, 64)
	if err != nil || n == 0 {
		return
	}
	prev := seqOf(r.Kvs[0].ModRevision, n-1)
	s.prevMu.Lock()
	defer s.prevMu.Unlock()
	if s.prevs == nil {
		s.prevs = make(map[int64]uint64, prevKept)
		s.prevRing = make([]int64, prevKept)
	}
	if old := s.prevRing[s.prevNext]; old != 0 {
		delete(s.prevs, old)
	}
	s.prevRing[s.prevNext] = rev
	s.prevNext = (s.prevNext + 1) % prevKept
	s.prevs[rev] = prev
}

// Follows is engine.Store's rule of sequence numbers: whether no event was committed between the
// events numbered after and seq (after < seq). Within a commit numbers are
// consecutive; the first event of a commit follows the last event of the
// previous appending commit, which this Store knows for its own recent
// commits (the ones its Service publishes). For any other it says false,
// and the watcher reads the log.
func (s *Store) Follows(after, seq uint64) bool {
	if seq&(1<<seqShift-1) != 0 {
		return after == seq-1
	}
	s.prevMu.Lock()
	prev, ok := s.prevs[int64(seq>>seqShift)]
	s.prevMu.Unlock()
	return ok && after >= prev && after < seq
}
