package etcdstore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
)

// Reading the log of p/ (schema 7: an event's key is where it stays) from a
// cursor on. The keys of p/ are ordered by flow, not by sequence number,
// so the events after a cursor are found by revision: etcd's history
// (replay) has them in commit order, and costs what was committed since the
// cursor; the keys of p/ (scanTail) cost what the log holds, and are read
// only for a cursor further back than replayMax revisions, or one whose
// history the cluster compacted. The Store's feed answers most reads of
// the recent log from memory before either (feed.go).

// replayMax is how many revisions behind the snapshot a cursor may be for
// its events to be read from etcd's history: etcd reads every key
// committed in those revisions to find them (a few per transition).
const replayMax = 4096

// scanPage is how many keys of p/ one request of scanTail reads.
const scanPage = 1000

// logScans counts the reads of the log that scanned the keys of p/ (tests:
// which way a read went).
var logScans atomic.Int64

// fromRev is the first revision that may hold an event after the
// sequence number after.
func fromRev(after uint64) int64 {
	from := int64(after >> seqShift)
	if after&(1<<seqShift-1) == 1<<seqShift-1 {
		from++
	}
	return max(from, 1)
}

// marks reads, at the snapshot, the mod revisions of meta/gen (the last
// flow deletion) and meta/last_append (the last appending commit) in one
// range with no value; ok is false when the range holds another key.
func (t *tx) marks() (gen, last int64, ok bool, err error) {
	gk, lk := t.s.key("meta/gen"), t.s.key(lastAppendKey)
	r, err := t.read(gk, clientv3.WithRange(lk+"\x00"), clientv3.WithKeysOnly())
	if err != nil {
		return 0, 0, false, err
	}
	for _, k := range r.Kvs {
		switch string(k.Key) {
		case gk:
			gen = k.ModRevision
		case lk:
			last = k.ModRevision
		default:
			return 0, 0, false, nil
		}
	}
	return gen, last, true, nil
}

// logTail returns the events of p/ committed up to the snapshot with a
// sequence number above after, in sequence order, those dead hides left
// out, at most limit (0: all).
func (t *tx) logTail(after uint64, limit int, dead map[string]uint64) ([]engine.Event, error) {
	from := fromRev(after)
	if !t.write {
		gen, last, ok, err := t.marks()
		if err != nil {
			return nil, err
		}
		if ok && last != 0 {
			if last < from {
				return nil, nil // no appending commit since the cursor
			}
			if t.rev-from <= replayMax {
				kvs, ok, err := t.replay(from, last, gen >= from)
				if err != nil {
					return nil, err
				}
				if ok {
					return tailEvents(kvs, after, limit, dead)
				}
			}
		}
	}
	kvs, err := t.scanTail(from, limit, dead)
	if err != nil {
		return nil, err
	}
	return tailEvents(kvs, after, limit, dead)
}

// tailEvents decodes the keys of p/ found after a cursor: their events
// above after that dead does not hide, in sequence order, at most limit.
func tailEvents(kvs []kv, after uint64, limit int, dead map[string]uint64) ([]engine.Event, error) {
	var out []engine.Event
	for _, k := range kvs {
		evs, err := pendingEvents(k)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			if d, ok := dead[e.FlowID]; e.Seq > after && (!ok || e.Seq > d) {
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// replay reads the keys put in p/ from revision from up to last (the
// last appending commit at the snapshot) from etcd's history: one watch
// from from over [meta/last_append, the end of p/), ended by the put of
// meta/last_append at last, the last operation of that commit (every key
// of p/ is put by an appending commit, so none comes later up to the
// snapshot). A flow deleted since from (deleted) may have taken some of
// them: then they are read again at the snapshot, and those gone left out.
// ok is false when the cluster compacted the revisions from from on.
func (t *tx) replay(from, last int64, deleted bool) (kvs []kv, ok bool, err error) {
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	la, p := t.s.key(lastAppendKey), t.s.key("p/")
	ch := t.s.cli.Watch(ctx, la, clientv3.WithRange(prefixEnd(p)), clientv3.WithRev(from), clientv3.WithFilterDelete())
	done := false
	for resp := range ch {
		if resp.CompactRevision != 0 {
			return nil, false, nil
		}
		if err := resp.Err(); err != nil {
			return nil, false, t.fail(err)
		}
		for _, ev := range resp.Events {
			k, mod := string(ev.Kv.Key), ev.Kv.ModRevision
			if mod > last {
				done = true
				break
			}
			if strings.HasPrefix(k, p) {
				kvs = append(kvs, kv{key: k, val: ev.Kv.Value, mod: mod})
			}
			done = done || (k == la && mod == last)
		}
		if done {
			break
		}
	}
	if !done {
		err := t.ctx.Err()
		if err == nil {
			err = fmt.Errorf("etcd store %s: the watch of the log's history ended early", t.s)
		}
		return nil, false, t.fail(err)
	}
	if !deleted || len(kvs) == 0 {
		return kvs, true, nil
	}
	keys := make([]string, len(kvs))
	for i, k := range kvs {
		keys[i] = k.key
	}
	vals, err := t.getMany(keys, nil)
	if err != nil {
		return nil, false, err
	}
	kept := kvs[:0]
	for i, k := range kvs {
		if vals[i] != nil {
			kept = append(kept, k)
		}
	}
	return kept, true, nil
}

// scanTail reads the keys of p/ at the snapshot with no value, in pages,
// and then the values of the first limit (0: all) committed from revision
// from on that dead does not hide. Its cost is the number of keys of p/
// (and of those deleted since the cluster last compacted). Inside an
// Update the commit compares the range.
func (t *tx) scanTail(from int64, limit int, dead map[string]uint64) ([]kv, error) {
	logScans.Add(1)
	p := t.s.key("p/")
	end := prefixEnd(p)
	cover := &krange{p, end}
	if t.write {
		if _, _, err := t.get(t.s.key("meta/gen")); err != nil {
			return nil, err
		}
	}
	var found []kv
	for start := p; ; {
		r, err := t.read(start, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(scanPage))
		if err != nil {
			return nil, err
		}
		for _, k := range r.Kvs {
			key := string(k.Key)
			id, _, _ := strings.Cut(key[len(p):], "\x00")
			if d, ok := dead[id]; k.ModRevision < from || (ok && uint64(k.ModRevision) <= d>>seqShift) {
				continue
			}
			found = append(found, kv{key: key, mod: k.ModRevision})
		}
		if !r.More || len(r.Kvs) == 0 {
			break
		}
		start = string(r.Kvs[len(r.Kvs)-1].Key) + "\x00"
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].mod != found[j].mod {
			return found[i].mod < found[j].mod
		}
		return found[i].key[len(found[i].key)-4:] < found[j].key[len(found[j].key)-4:]
	})
	if limit > 0 {
		// Each key holds at least one event after the cursor, but for those
		// of the cursor's own commit.
		n := 0
		for n < len(found) && found[n].mod == from {
			n++
		}
		found = found[:min(len(found), n+limit)]
	}
	if len(found) == 0 {
		if t.write {
			t.ranges = append(t.ranges, *cover)
		}
		return nil, nil
	}
	keys := make([]string, len(found))
	for i, k := range found {
		keys[i] = k.key
	}
	vals, err := t.getMany(keys, cover) // the commit compares cover
	if err != nil {
		return nil, err
	}
	out := found[:0]
	for i, k := range found {
		if vals[i] != nil {
			k.val = vals[i]
			out = append(out, k)
		}
	}
	return out, nil
}
