package engine

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/stratum-go/stratum/engine/state"
)

// The read after this process's own commit. A transition reads its flow in
// a View before it writes it (snapshot.go); when this Service committed the
// flow last, that read (a lock of the file, its checks, the state decoded
// again) returns what the Service already holds. So the Service keeps the
// states it committed last, a few flows' worth, and a snapshot starts from
// a private copy of the one it finds (state.FlowState.Fork) instead of
// reading the store. Whether it is still the stored state is checked where a read
// would have been: a transition that writes is committed only if Tx.Put
// finds the flow at that version (else the flow is dropped from here and
// the transition computed again from a fresh read, as for any other
// writer's change); an answer that writes nothing is given only once a
// View finds the flow still at that version — reading its state, which
// also finds a record damaged since, or for the audit (a read-only
// report) and Ledger its summary alone (storedAt: no state decoded) — else it is
// computed again from a fresh snapshot. Get never uses it.

// What the copies cost. A snapshot's copy and the copy put keeps share the
// recorded values (a step's output, a record's strings, a trace entry) with
// the copy they were taken from (state.FlowState.Fork, ShareWith): only the
// maps and slices that hold them are copied, so a step of a long flow does
// not deep-copy every output the flow recorded. This holds because nothing
// writes into a recorded value in place (the rule in engine/doc.go and
// state/clone.go): a transition replaces an output, appends a record. put
// still copies what is new since the copy it replaces (ShareWith the
// previous copy): a step's output is the caller's value (StepDone's result,
// stored as it is), and the caller, like the readers of the outcome and
// events, still holds it. With checkOwnCommits set (the engine's tests, and
// any test binary built with the stratum_owncheck tag) every copy is kept
// deep-copied alongside as well, and a copy found changed from it fails
// loudly: a transition or a caller that wrote into a recorded value.

// ownCommitsSize bounds how many flows' states ownCommits holds.
const ownCommitsSize = 32

// checkOwnCommits makes ownCommits check, on each get, put and forget, that
// the copies it holds are as they were put (tests only: a deep copy and a
// deep comparison each).
var checkOwnCommits bool

// ownCommits holds the flow states this Service committed last, by flow id:
// each a copy of the state as written (stamped), never mutated (a snapshot
// takes a copy of it). The zero value is empty and ready.
type ownCommits struct {
	mu    sync.Mutex
	m     map[string]*state.FlowState
	order []string // oldest first
	// lend are the flows whose held copy's Records have spare capacity
	// (cap > len) nobody appends into: get lends it to one snapshot (its
	// appends need no copy of the records), clips the others'. When that
	// snapshot's transition commits, put keeps its records as they are
	// (state.FlowState.ShareWith), the spare capacity left with them.
	lend map[string]bool
	// deep are deep copies of m's states (checkOwnCommits only).
	deep map[string]*state.FlowState
}

// get returns a private copy of the state this Service committed last for
// flowID (its maps its own, its recorded values shared), or nil (also when
// o is nil). mayLend: the copy may be lent the records' spare capacity
// (a transition that may write; a read's copy would only waste it).
func (o *ownCommits) get(flowID string, mayLend bool) *state.FlowState {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	st := o.m[flowID]
	lend := mayLend && o.lend[flowID]
	if lend {
		delete(o.lend, flowID)
	}
	o.checkLocked(flowID)
	o.mu.Unlock()
	c := st.Fork()
	if c != nil && !lend {
		c.Records = slices.Clip(c.Records)
	}
	return c
}

// put remembers copies of the committed states sts and forgets the deleted
// flows. (Copies: the caller's outcome and events may share the states'
// maps with whoever reads them next; each shares what it holds of the copy
// it replaces.)
func (o *ownCommits) put(sts []*state.FlowState, deleted []string) {
	prev := make([]*state.FlowState, len(sts))
	o.mu.Lock()
	for i, st := range sts {
		prev[i] = o.m[st.FlowID]
	}
	o.mu.Unlock()
	copies := make([]*state.FlowState, len(sts))
	for i, st := range sts {
		copies[i] = st.ShareWith(prev[i])
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
				o.dropLocked(o.order[0])
				o.order = o.order[1:]
			}
			o.order = append(o.order, st.FlowID)
		}
		o.checkLocked(st.FlowID)
		o.m[st.FlowID] = st
		// The records' spare capacity is free: either a fresh array
		// (ShareWith copied them) or the array of the one snapshot that
		// was lent it, which appended only below len.
		if cap(st.Records) > len(st.Records) {
			if o.lend == nil {
				o.lend = map[string]bool{}
			}
			o.lend[st.FlowID] = true
		} else {
			delete(o.lend, st.FlowID)
		}
		if checkOwnCommits {
			if o.deep == nil {
				o.deep = map[string]*state.FlowState{}
			}
			o.deep[st.FlowID] = st.Clone()
		}
	}
}

// checkLocked panics, when checkOwnCommits is set, if the copy held for id
// is no longer equal to the deep copy taken when it was put: something
// wrote into a value the copies share.
func (o *ownCommits) checkLocked(id string) {
	if !checkOwnCommits {
		return
	}
	st, ok := o.m[id]
	if !ok {
		return
	}
	if !reflect.DeepEqual(st, o.deep[id]) {
		panic(fmt.Sprintf("engine: the own-commit copy of flow %s changed after it was put: something wrote into a recorded value in place (owncommits.go)", id))
	}
}

// dropLocked removes id from m (not from order), checked first.
func (o *ownCommits) dropLocked(id string) {
	o.checkLocked(id)
	delete(o.m, id)
	delete(o.lend, id)
	delete(o.deep, id)
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
	o.dropLocked(id)
	for i, x := range o.order {
		if x == id {
			o.order = append(o.order[:i], o.order[i+1:]...)
			break
		}
	}
}
