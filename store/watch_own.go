package store

import (
	"bytes"
	"os"
	"sync"
	"sync/atomic"

	"github.com/stratum-go/stratum/engine"
)

// ownCommits is what this process's watchers know of its own commits, so
// that a commit of this process costs them no read of the log (Watch).
//
// An Update announces its commit just before committing (begin: the events
// it appended and the log's sequence before and after them); the commit's
// record (markCommitted) or its failure ends it (end) and closes the bell
// the watchers wait on. The file events of a commit come while it is in
// flight, so a watcher woken then waits for its end instead of reading.
// The events of this process's consecutive commits (none of another
// process between them) are kept, up to the last 1,000 to 2,000, so a
// watcher that checks once per WatchGap delivers a burst's from memory.
//
// A watcher trusts the copy only while the file is as that commit left it:
// the same status (device, inode, size, modification and change times:
// genOf) and the same record in <path>.verified. Another process's commit
// changes the status, and records its own generation (with its transaction
// id) before it releases the lock: even where timestamps are coarse and the
// size did not change, the write of that record wakes the watcher and
// differs from this process's.
type ownCommits struct {
	mu     sync.Mutex
	commit ownCommit     // the last commit, or the one in flight
	chain  ownCommit     // the last commit, with its chain
	bell   chan struct{} // closed when the commit in flight ends
	// reads counts the log reads of this store's watchers (tests).
	reads atomic.Int64
}

// ownCommit is one commit of this process as its watchers see it.
type ownCommit struct {
	// inFlight: announced, not yet ended (the fields below are unset).
	inFlight bool
	// valid: record is the generation of the file the commit left,
	// written to <path>.verified, and prev, seq and events are exact.
	valid  bool
	gen    generation
	record []byte
	// prev and seq are the log's last sequence number before and after the
	// commit; events are those it appended, prev+1 to seq. For the last
	// commit as end keeps it, they cover the chain of consecutive commits
	// of this process that ends with it: prev is the sequence before the
	// chain's first kept event.
	prev, seq uint64
	events    []engine.Event
}

// begin announces the commit of t, about to happen. Called inside the
// Update, with the Store's mu held for writing. The events t appended are
// checked to be still in the log (the transaction could have deleted them).
func (o *ownCommits) begin(t *tx) {
	c := ownCommit{inFlight: true}
	if log := t.btx.Bucket(bucketEvents); log != nil {
		c.seq, c.prev = log.Sequence(), log.Sequence()
		c.valid = true
		if n := len(t.appended); n > 0 {
			c.prev = t.appended[0].Seq - 1
			c.valid = t.appended[n-1].Seq == c.seq && c.seq-c.prev == uint64(n)
			for _, ev := range t.appended {
				if c.valid && log.Get(u64(ev.Seq)) == nil {
					c.valid = false
				}
			}
			c.events = t.appended
		}
	}
	o.mu.Lock()
	o.commit = c
	o.mu.Unlock()
}

// end ends the commit in flight, if any: committed, it left the file at
// generation gen, whose record in <path>.verified is record (nil when it
// could not be written); gen is zero when the commit failed. Any commit
// that was not announced (not an Update's) leaves no copy to trust. Called
// with the Store's mu held for writing.
func (o *ownCommits) end(gen generation, record []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.commit
	o.commit = ownCommit{}
	if c.inFlight && c.valid && gen != (generation{}) && record != nil {
		c.inFlight = false
		c.gen, c.record = gen, record
		if p := o.chain; p.valid && p.seq == c.prev {
			// Continues the chain (nothing of another process between).
			c.prev, c.events = p.prev, append(p.events, c.events...)
			if n := len(c.events); n > 2*watchBatch {
				c.prev += uint64(n - watchBatch)
				c.events = append([]engine.Event(nil), c.events[n-watchBatch:]...)
			}
		} else {
			c.events = append([]engine.Event(nil), c.events...)
		}
		o.commit = c
	}
	o.chain = o.commit
	if o.bell != nil {
		close(o.bell)
		o.bell = nil
	}
}

// last is the last commit of this process and the bell closed when the
// next one ends.
func (o *ownCommits) last() (ownCommit, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bell == nil {
		o.bell = make(chan struct{})
	}
	return o.commit, o.bell
}

// since returns the events of c with a sequence number above after, and
// ok when they are all there is: the file at path is as c left it (status
// and record at mark) and after is at least c's prev. Otherwise the log is
// to be read.
func (c *ownCommit) since(after uint64, path, mark string) (evs []engine.Event, ok bool) {
	if !c.valid || after < c.prev {
		return nil, false
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false
	}
	g := genOf(fi)
	g.txid = c.gen.txid
	if g != c.gen || !recorded(mark, c.record) {
		return nil, false
	}
	if after >= c.seq {
		return nil, true
	}
	// Shared by every watcher: clipped, so that a consumer's append copies.
	return c.events[after-c.prev : len(c.events) : len(c.events)], true
}

// recorded reports whether the file at mark holds record.
func recorded(mark string, record []byte) bool {
	f, err := os.Open(mark)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, len(record))
	n, err := f.ReadAt(buf, 0)
	return err == nil && n == len(record) && bytes.Equal(buf, record)
}
