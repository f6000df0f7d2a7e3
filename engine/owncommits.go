package engine

import (
	"sync"

	"github.com/stratum-go/stratum/engine/state"
)

// The read after this process's own commit. A transition reads its flow in
// a View before it writes it (snapshot.go); when this Service committed the
// flow last, that read (a lock of the file, its checks, the state decoded
// again) returns what the Service already holds. So the Service keeps the
// states it committed last, a few flows' worth, and a snapshot starts from
// a private copy of the one it finds (state.FlowState.Clone) instead of
// reading the store. Whether it is still the stored state is checked where a read
// would have been: a transition that writes is committed only if Tx.Put
// finds the flow at that version (else the flow is dropped from here and
// the transition computed again from a fresh read, as for any other
// writer's change); an answer that writes nothing is given only once a
// View finds the flow still at that version — reading its state, which
// also finds a record damaged since, or for the audit (a read-only
// report) its summary alone (storedAt: no state decoded) — else it is
// computed again from a fresh snapshot. Get never uses it.

// ownCommitsSize bounds how many flows' states ownCommits holds.
const ownCommitsSize = 32

// ownCommits holds the flow states this Service committed last, by flow id:
// each a copy of the state as written (stamped), never mutated (a snapshot
// takes a copy of it). The zero value is empty and ready.
type ownCommits struct {
	mu    sync.Mutex
	m     map[string]*state.FlowState
	order []string // oldest first
}

// get returns a private copy of the state this Service committed last for
// flowID, or nil (also when o is nil).
func (o *ownCommits) get(flowID string) *state.FlowState {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	st := o.m[flowID]
	o.mu.Unlock()
	return st.Clone()
}

// put remembers copies of the committed states sts and forgets the deleted
// flows. (Copies: the caller's outcome and events may share the states'
// maps with whoever reads them next.)
func (o *ownCommits) put(sts []*state.FlowState, deleted []string) {
	copies := make([]*state.FlowState, len(sts))
	for i, st := range sts {
		copies[i] = st.Clone()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range deleted {
		o.forgetLocked(id)
	}
	if o.m == nil {
		o.m = map[string]*state.FlowState{}
	}
	for _, st := range copies {
		if _, ok := o.m[st.FlowID]; !ok {
			if len(o.order) >= ownCommitsSize {
				delete(o.m, o.order[0])
				o.order = o.order[1:]
			}
			o.order = append(o.order, st.FlowID)
		}
		o.m[st.FlowID] = st
	}
}

// forget drops the flows ids (another writer may have changed them).
func (o *ownCommits) forget(ids map[string]int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range ids {
		o.forgetLocked(id)
	}
}

func (o *ownCommits) forgetLocked(id string) {
	if _, ok := o.m[id]; !ok {
		return
	}
	delete(o.m, id)
	for i, x := range o.order {
		if x == id {
			o.order = append(o.order[:i], o.order[i+1:]...)
			break
		}
	}
}
