package etcdstore

import (
	"bytes"
	"fmt"
	stdmaps "maps"
	"strconv"
	"strings"
	"sync"

	sjson "github.com/segmentio/encoding/json"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
)

// A flow's task records (state.FlowState.ParallelTasks: one per task of its
// fan-outs and pipelines) change one or a few at a time, and a pipeline of
// n items holds 3n of them: encoded (and deflated) with the rest of the
// state by every transition, they made a task's cost grow with the items.
// Since schema 6 a flow holding more than tasksInline of them keeps them
// one key per task:
//
//	r/<id>‖NUL‖<task id>   the task's record, JSON
//
// and f/<id> holds the rest of the state (parallel_tasks absent). f/<id>
// and s/<id> then start with the member "etcdstore_tasks": the number of
// task keys (after the lease mark, if any), so Get knows to read them
// and Put knows they are there without reading f/. A Put writes the task
// keys whose record changed, deletes those that went, and rewrites f/ and
// s/ (the commit compares f/ or s/, which a write of any task key
// rewrites): one transition, one etcd transaction, as before. The Store
// keeps the records stored, by the mod revision of f/ they belong to
// (taskCache; on a miss they are read), each decoded and with the value a
// Put was last handed for it. A record Put is handed again (the very same
// map: the engine shares the records a transition does not replace) is
// unchanged without a compare, by engine.Tx Put's rule that a value handed
// to Put is never written into; any other is compared with the decoded
// one (state.EqualJSON). Records that Get returned are copies, never
// trusted so. A transition of a flow with n records then costs a map copy
// and a lookup per record, not a deep compare of each.
//
// A Put that would write or delete more than taskOpsMax task keys at once
// (etcd takes 128 operations per transaction) stores the records in f/
// instead and deletes the task keys with one range deletion; so does the
// Put of a flow whose task keys the same transaction deleted. A state of
// schema 5 (records in f/, no member) reads as it is, and moves its
// records out at its first Put that may (no migration at Open).

// tasksInline is how many task records a flow's state may hold in f/;
// beyond, they move to keys of their own. The same bound as the bbolt
// store's for the step maps it moves out of a state (store.stepsInline).
const tasksInline = 16

// taskOpsMax bounds the task keys one Put writes or deletes one by one.
const taskOpsMax = 96

// tasksField is the member that counts a flow's task keys.
const tasksField = `"etcdstore_tasks":`

// withTasks adds the member counting n task keys first in the JSON object
// data (unchanged when n is 0).
func withTasks(data []byte, n int) []byte {
	if n == 0 || len(data) < 2 || data[0] != '{' {
		return data
	}
	out := make([]byte, 0, len(data)+len(tasksField)+12)
	out = append(out, '{')
	out = append(out, tasksField...)
	out = strconv.AppendInt(out, int64(n), 10)
	if rest := bytes.TrimSpace(data[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, data[1:]...)
}

// tasksOf is the number of task keys a record of f/ or s/ counts (0: its
// records, if any, are in the state).
func tasksOf(data []byte) int {
	b := data
	if bytes.HasPrefix(b, []byte(markerField)) {
		b = b[len(markerField):]
		end := stringEnd(b)
		if end < 0 || end+1 >= len(b) || b[end+1] != ',' {
			return 0
		}
		b = b[end+1:] // at the comma, like the brace of an unmarked record
	}
	if len(b) == 0 || !bytes.HasPrefix(b[1:], []byte(tasksField)) {
		return 0
	}
	b = b[1+len(tasksField):]
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(string(b[:i]))
	if err != nil {
		return 0
	}
	return n
}

// stringEnd is the index of the closing quote of the JSON string b starts
// with (-1: none).
func stringEnd(b []byte) int {
	if len(b) == 0 || b[0] != '"' {
		return -1
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// taskSet is a flow's task records as stored in its task keys; never
// changed once made.
type taskSet struct {
	recs map[string]taskEntry
}

// taskEntry is one task record: as a read decodes it, and the value a Put
// was last handed for it (nil: none since it was read). A caller never
// writes into a value it handed to Put (engine.Tx Put's rule), so a Put
// handed that very value again (state.SameValue: the same map) has the
// record unchanged, without comparing it.
type taskEntry struct {
	dec any
	put any
}

// taskCache holds, by flow id, the task records this Store last read or
// wrote, with the mod revision of the f/ they belong to.
type taskCache struct {
	mu sync.Mutex
	m  map[string]cachedTasks
}

type cachedTasks struct {
	rev int64
	set *taskSet
}

// taskCacheMax bounds the flows whose records a Store keeps.
const taskCacheMax = 64

func (c *taskCache) get(flowID string, rev int64) *taskSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[flowID]; ok && e.rev == rev && rev != 0 {
		return e.set
	}
	return nil
}

func (c *taskCache) put(flowID string, rev int64, set *taskSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedTasks{}
	}
	if _, ok := c.m[flowID]; !ok && len(c.m) >= taskCacheMax {
		for k := range c.m { // any one
			delete(c.m, k)
			break
		}
	}
	if set == nil {
		delete(c.m, flowID)
		return
	}
	c.m[flowID] = cachedTasks{rev: rev, set: set}
}

// taskPrefix begins the keys of a flow's task records.
func (s *Store) taskPrefix(flowID string) string { return s.key("r/", flowID, "\x00") }

// storedTasks is the flow's task records as stored (n keys, the f/ or s/
// read at mod revision rev; 0: written by this transaction): this
// transaction's, the Store's cached ones, else read from their keys.
func (t *tx) storedTasks(flowID string, n int, rev int64) (*taskSet, error) {
	if set, ok := t.tasks[flowID]; ok && set != nil {
		return set, nil
	}
	if set := t.s.tasks.get(flowID, rev); set != nil {
		return set, nil
	}
	p := t.s.taskPrefix(flowID)
	kvs, err := t.scan(p, prefixEnd(p), 0, false)
	if err != nil {
		return nil, err
	}
	set := &taskSet{recs: make(map[string]taskEntry, len(kvs))}
	for _, k := range kvs {
		var v any
		if err := sjson.Unmarshal(bytes.Clone(k.val), &v); err != nil {
			return nil, &engine.DamagedError{FlowID: flowID, Err: fmt.Errorf("etcd store %s: cannot decode task %q: %w", t.s, strings.TrimPrefix(k.key, p), err)}
		}
		set.recs[strings.TrimPrefix(k.key, p)] = taskEntry{dec: v}
	}
	if len(set.recs) != n {
		return nil, &engine.DamagedError{FlowID: flowID, Err: fmt.Errorf("etcd store %s: %d task records stored, its state counts %d", t.s, len(set.recs), n)}
	}
	if rev != 0 {
		t.s.tasks.put(flowID, rev, set)
	}
	t.noteTasks(flowID, set)
	return set, nil
}

func (t *tx) noteTasks(flowID string, set *taskSet) {
	if t.tasks == nil {
		t.tasks = map[string]*taskSet{}
	}
	t.tasks[flowID] = set
}

// readTasks fills st.ParallelTasks from its n task keys (rev: the mod
// revision of the f/ read), each record a copy of the stored one.
func (t *tx) readTasks(st *state.FlowState, n int, rev int64) error {
	set, err := t.storedTasks(st.FlowID, n, rev)
	if err != nil {
		return err
	}
	st.ParallelTasks = make(map[string]any, len(set.recs)+1)
	for k, v := range set.recs {
		st.ParallelTasks[k] = state.CloneValue(v.dec)
	}
	return nil
}

// writeTasks buffers the task keys of st that changed since old (the
// flow as stored) and reports how many task keys the flow then has (0:
// the records stay in the state, which the caller then encodes with
// them).
func (t *tx) writeTasks(st *state.FlowState, old priorFlow) (int, error) {
	id := st.FlowID
	var prev *taskSet
	if old.exists && old.tasks > 0 {
		var err error
		if prev, err = t.storedTasks(id, old.tasks, old.rev); err != nil {
			return 0, err
		}
	}
	split := len(st.ParallelTasks) > tasksInline && !t.tasksDropped[id]
	var puts map[string][]byte
	var next *taskSet
	if split {
		next = &taskSet{}
		if prev != nil {
			next.recs = stdmaps.Clone(prev.recs)
		} else {
			next.recs = make(map[string]taskEntry, len(st.ParallelTasks))
		}
		puts = map[string][]byte{}
		for k, v := range st.ParallelTasks {
			if o, ok := next.recs[k]; ok {
				if o.put != nil && state.SameValue(v, o.put) {
					continue // handed over again: unchanged (Put's rule)
				}
				if state.EqualJSON(v, o.dec) {
					next.recs[k] = taskEntry{dec: o.dec, put: v}
					continue
				}
			}
			enc, err := sjson.Marshal(v)
			if err != nil {
				return 0, fmt.Errorf("etcd store: encode task %q of flow %s: %w", k, id, err)
			}
			var dec any // what a read decodes
			if err := sjson.Unmarshal(bytes.Clone(enc), &dec); err != nil {
				return 0, fmt.Errorf("etcd store: task %q of flow %s does not decode: %w", k, id, err)
			}
			puts[k] = enc
			next.recs[k] = taskEntry{dec: dec, put: v}
			if len(puts) > taskOpsMax {
				split = false
				break
			}
		}
	}
	var gone []string
	if split && prev != nil {
		for k := range prev.recs {
			if _, ok := st.ParallelTasks[k]; !ok {
				gone = append(gone, k)
				delete(next.recs, k)
			}
		}
		split = len(puts)+len(gone) <= taskOpsMax
	}
	p := t.s.taskPrefix(id)
	if !split {
		if prev != nil {
			t.dropTasks(id)
		}
		t.noteTasks(id, nil)
		return 0, nil
	}
	for k, enc := range puts {
		t.put(p+k, enc)
	}
	for _, k := range gone {
		t.del(p + k)
	}
	t.noteTasks(id, next)
	return len(next.recs), nil
}

// dropTasks deletes every task key of the flow (one range deletion; the
// transaction's buffered writes of them dropped: etcd refuses a
// transaction that both puts a key and deletes a range holding it). The
// flow's records cannot move out again in this transaction.
func (t *tx) dropTasks(flowID string) {
	p := t.s.taskPrefix(flowID)
	for k := range t.writes {
		if strings.HasPrefix(k, p) {
			delete(t.writes, k)
		}
	}
	for k := range t.deleted {
		if strings.HasPrefix(k, p) {
			delete(t.deleted, k)
		}
	}
	if t.tasksDropped == nil {
		t.tasksDropped = map[string]bool{}
	}
	t.tasksDropped[flowID] = true
	t.noteTasks(flowID, nil)
}

// taskOps are the range deletions of the task keys dropTasks deleted.
func (t *tx) taskOps() []clientv3.Op {
	ops := make([]clientv3.Op, 0, len(t.tasksDropped))
	for id := range t.tasksDropped {
		ops = append(ops, clientv3.OpDelete(t.s.taskPrefix(id), clientv3.WithPrefix()))
	}
	return ops
}

// cacheTasks keeps the task records this transaction wrote, once it
// committed at rev (the mod revision of the f/ it wrote).
func (t *tx) cacheTasks(rev int64) {
	for id, set := range t.tasks {
		if p, ok := t.prior[id]; ok && p.rev == 0 { // written by this transaction
			t.s.tasks.put(id, rev, set)
		}
	}
}
