package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Verifying the pages before writing (see "Damaged pages" in doc.go).
//
// bbolt trusts the pages it reads: a write transaction over a damaged page
// (a branch page zeroed, a leaf overwritten) may write on top of the damage
// and make it worse, or spread it to pages that were sound. So before a
// process's first write to a file it has not verified, the write transaction
// runs bbolt's consistency check (tx.Check: every page reachable exactly
// once or free, every key in order) and refuses to write if it finds
// anything, with the corrupt-file error. It costs about a millisecond per
// thousand flows, so it runs only when the file is not known to be as a
// stratum commit left it.
//
// "As a stratum commit left it" is the file's generation: device, inode,
// size, modification and change times (nanoseconds) and bbolt's last
// committed transaction id. Every process that commits — having verified
// the file or found it at a trusted generation — records the generation the
// commit left, while it still holds the exclusive lock, in memory and in
// <path>.verified beside the file. The next write transaction of any
// process trusts the file when its generation is the one recorded; anything
// else — a write by another program, a file copied or restored over it, a
// truncation, a crash between a commit and the record — changes the change
// time or the inode and costs one check. A process that only reads never
// checks (reads of a damaged page fail with ErrCorrupt or a damaged record,
// engine.ErrDamaged).

// generation identifies the file as one stratum commit left it (genOf).
type generation struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds; ctime is 0 where the system gives none
	txid         uint64
}

// markSize is the length of the record in <path>.verified: fixed, so it is
// rewritten in place (no truncation, which costs ext4 a flush).
const markSize = 128

// record is g as the line stored in <path>.verified, padded to markSize.
func (g generation) record() []byte {
	line := fmt.Sprintf("stratum-verified 1 %d %d %d %d %d %d", g.dev, g.ino, g.size, g.mtime, g.ctime, g.txid)
	return []byte(fmt.Sprintf("%-*s\n", markSize-1, line))
}

// parseGeneration reads the record at the start of raw; ok is false for
// anything else.
func parseGeneration(raw []byte) (generation, bool) {
	var g generation
	if len(raw) < markSize {
		return g, false
	}
	var v int
	n, err := fmt.Sscanf(strings.TrimSpace(string(raw[:markSize])), "stratum-verified %d %d %d %d %d %d %d",
		&v, &g.dev, &g.ino, &g.size, &g.mtime, &g.ctime, &g.txid)
	return g, err == nil && n == 7 && v == 1
}

// markPath is the file recording the last verified generation.
func (s *Store) markPath() string { return s.path + ".verified" }

// currentGeneration is the generation of h's file whose last committed
// transaction is txid (the status read under the lock: handle.stat).
func currentGeneration(h *handle, txid uint64) (generation, bool) {
	fi, err := h.stat()
	if err != nil {
		return generation{}, false
	}
	g := genOf(fi)
	g.txid = txid
	return g, true
}

// verifyBeforeWrite runs bbolt's page check in the write transaction btx
// unless the file is at a generation a stratum commit recorded. A damaged
// file gives the corrupt-file error; btx is then rolled back, so nothing is
// written. Called with mu held for writing and the exclusive file lock.
func (s *Store) verifyBeforeWrite(h *handle, btx *bolt.Tx) error {
	if h.file == nil {
		return nil
	}
	g, ok := currentGeneration(h, uint64(btx.ID())-1)
	if ok && g == s.verified {
		return nil
	}
	if ok {
		if raw, err := os.ReadFile(s.markPath()); err == nil {
			if m, ok := parseGeneration(raw); ok && m == g {
				s.verified = g
				return nil
			}
		}
	}
	s.verified = generation{}
	s.pageChecks.Add(1)
	if err := s.checkPagesIn(btx); err != nil {
		return err
	}
	if ok {
		s.verified = g
	}
	return nil
}

// markCommitted records the generation the commit of transaction txid
// through h left (verifyBeforeWrite). Called with the exclusive lock still
// held. A record that cannot be written only costs the next writer a check.
func (s *Store) markCommitted(h *handle, txid uint64) {
	var recorded []byte // the record written to <path>.verified, if any
	defer func() { s.own.end(s.verified, recorded) }()
	s.verified = generation{}
	h.locked = nil // the commit changed the file
	if h.file == nil {
		return
	}
	g, ok := currentGeneration(h, txid)
	if !ok {
		return
	}
	s.verified = g
	// Kept open between commits (an open and a close cost more than the
	// write); reopened after a failed write. Were the record removed or
	// replaced meanwhile, this process would write to the old one: others
	// would then not trust the file and check it once — a cost, never a
	// missed check.
	if s.mark == nil {
		f, err := os.OpenFile(s.markPath(), os.O_WRONLY|os.O_CREATE, s.opts.FileMode)
		if err != nil {
			return
		}
		s.mark = f
	}
	rec := g.record()
	if _, err := s.mark.WriteAt(rec, 0); err != nil {
		_ = s.mark.Close()
		s.mark = nil
		return
	}
	recorded = rec
}

// checkPagesIn runs bbolt's consistency check on the file as btx sees it
// (in a child process: pagecheck.go) and returns the corrupt-file error
// naming the first problems it found (nil when none).
func (s *Store) checkPagesIn(btx *bolt.Tx) error {
	problems, err := s.pageProblems(btx)
	if err != nil {
		return err
	}
	if len(problems) == 0 {
		return nil
	}
	return corruptError(s.path, "consistency check failed: "+summarize(problems), errors.Join(problems...))
}

// summarize joins the messages of up to 10 problems.
func summarize(problems []error) string {
	msgs := make([]string, 0, 11)
	for i, p := range problems {
		if i == 10 {
			msgs = append(msgs, fmt.Sprintf("… and %d more", len(problems)-10))
			break
		}
		msgs = append(msgs, p.Error())
	}
	return strings.Join(msgs, "; ")
}

// CheckPages runs bbolt's page-level consistency check alone (no index
// invariants) in a read transaction: what a write transaction runs before
// writing to a file it has not verified.
func (s *Store) CheckPages(ctx context.Context) error {
	return s.run(ctx, modeRead, func(btx *bolt.Tx) error { return s.checkPagesIn(btx) })
}
