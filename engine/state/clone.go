package state

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"time"
)

// Clone returns a deep copy of the state: no map, slice or pointer is shared
// with st, so a transition may mutate the copy while st stays as it was
// (the service keeps decoded states of recent versions and hands out
// copies instead of decoding the stored JSON again).
func (st *FlowState) Clone() *FlowState { return st.ShareWith(nil) }

// Fork returns a copy of st for a transition to change: every map of it is
// the copy's own, the recorded values are shared with st (see ShareWith),
// and so is the array of Records: records are append-only (a transition
// appends a record or sets a new slice, never writes over one), so the
// copy's Records is st's slice itself; clip it (Records[:n:n]) unless the
// copy may append into st's spare capacity (engine/owncommits.go lends it
// to one copy at most).
func (st *FlowState) Fork() *FlowState { return st.ShareWith(st) }

// ShareWith returns a copy of st whose maps and slices are its own, like
// Clone, but which shares with base the recorded values st holds identically
// (the very same value, not an equal one): a step's output (StepOutputs'
// values), a fan-out task's record (ParallelTasks' values), a record's
// strings (Records, by value, with their pointers) and a trace entry
// (Trace). Anything else, and every recorded value base does not
// hold, is deep-copied, so a copy sharing with base costs what changed since
// base, not what the flow holds. ShareWith(nil) is Clone. One exception to
// "its slices are its own": when st's Records continue base's in the same
// array (st was forked from base, Fork, and appended to), the copy keeps
// st's slice (records are append-only: nothing writes over base's part, and
// only the copy's holder appends past it).
//
// The sharing rule (engine/doc.go, owncommits.go): nothing writes into a
// recorded value in place. A transition replaces a step's output
// (StepOutputs[id] = v, delete) or a task's record (ParallelTasks[id] =
// m), appends or replaces records and trace
// entries, but never changes what an output, a record's pointer or a trace
// entry holds; a caller of the engine never changes a value it got from a
// state or an outcome. The Service's own-commit copies rely on it, and
// check it in tests (engine/owncommits.go, checkOwnCommits).
func (st *FlowState) ShareWith(base *FlowState) *FlowState {
	if st == nil {
		return nil
	}
	if base == nil {
		base = &FlowState{}
	}
	c := *st
	c.Inputs = CloneObject(st.Inputs)
	c.StepProgress = st.StepProgress.share(&base.StepProgress)
	if st.Checkpoints != nil {
		c.Checkpoints = make(map[string]*Checkpoint, len(st.Checkpoints))
		for k, cp := range st.Checkpoints {
			c.Checkpoints[k] = cp.clone()
		}
	}
	c.RoundProgress = st.RoundProgress.Clone()
	c.ParentFlowID = ClonePtr(st.ParentFlowID)
	c.ParentStepID = ClonePtr(st.ParentStepID)
	c.ChildProgress = st.ChildProgress.Clone()
	c.ParallelTasks = shareObject(st.ParallelTasks, base.ParallelTasks)
	c.ParallelRuns = cloneParallelRuns(st.ParallelRuns)
	c.DispatchedAt = maps.Clone(st.DispatchedAt)
	if st.Gate != nil {
		g := *st.Gate
		g.Deadline = cloneTime(st.Gate.Deadline)
		c.Gate = &g
	}
	c.Owner = ClonePtr(st.Owner)
	c.Trace = shareRaws(st.Trace, base.Trace)
	c.BudgetState = ClonePtr(st.BudgetState)
	c.Library = st.Library.clone()
	c.Ended = ClonePtr(st.Ended)
	c.Judge = st.Judge.Clone()
	return &c
}

func (cp *Checkpoint) clone() *Checkpoint {
	if cp == nil {
		return nil
	}
	c := *cp
	c.StepProgress = cp.StepProgress.Clone()
	c.RoundProgress = cp.RoundProgress.Clone()
	c.ChildProgress = cp.ChildProgress.Clone()
	c.Judge = cp.Judge.Clone()
	return &c
}

// The deep copies of a flow's progress: the one copy of what a checkpoint
// saves, for Clone, Commit and Revert alike.

// Clone returns a deep copy of the progress.
func (p StepProgress) Clone() StepProgress { return p.share(&StepProgress{}) }

// share copies the progress, sharing with base the outputs and records p
// holds identically (FlowState.ShareWith).
func (p StepProgress) share(base *StepProgress) StepProgress {
	p.StepOutputs = shareObject(p.StepOutputs, base.StepOutputs)
	p.Records = shareRecords(p.Records, base.Records)
	p.Attempts = maps.Clone(p.Attempts)
	return p
}

// shareObject copies m, sharing each value base holds identically under the
// same key, deep-copying the others.
func shareObject(m, base map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if b, ok := base[k]; ok && SameValue(v, b) {
			out[k] = v
			continue
		}
		out[k] = CloneValue(v)
	}
	return out
}

// SameValue reports whether a and b are the very same JSON-like value: the
// same scalar, or the same object or array (one map, one backing array).
// Any other kind is not the same (it gets copied).
func SameValue(a, b any) bool {
	switch x := a.(type) {
	case nil, string, bool, float64, int, int64, json.Number:
		return a == b
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && x != nil && y != nil && reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && len(x) > 0 && &x[0] == &y[0]
	}
	return false
}

// Clone returns a deep copy of the progress.
func (p RoundProgress) Clone() RoundProgress {
	p.Rounds = cloneRounds(p.Rounds)
	p.RoundStartStepID = ClonePtr(p.RoundStartStepID)
	p.TerminalStatus = ClonePtr(p.TerminalStatus)
	p.Iterations = cloneIterations(p.Iterations)
	p.ArchivedIterations = cloneArchived(p.ArchivedIterations)
	p.ActiveIteration = ClonePtr(p.ActiveIteration)
	p.IterationOutcome = maps.Clone(p.IterationOutcome)
	p.IterationBest = cloneBest(p.IterationBest)
	p.IterationAccumulator = cloneAccumulators(p.IterationAccumulator)
	return p
}

// Clone returns a deep copy of the progress.
func (p ChildProgress) Clone() ChildProgress {
	p.ActiveChildFlowID = ClonePtr(p.ActiveChildFlowID)
	p.ChildAudits = cloneRawLists(p.ChildAudits)
	return p
}

// ClonePtr returns a pointer to a copy of *p (nil for nil): a shallow copy
// of what p points to.
func ClonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneTime(p *time.Time) *time.Time { return ClonePtr(p) }

// Clone returns a deep copy of the record.
func (r Record) Clone() Record {
	r.RoundStartStepID = ClonePtr(r.RoundStartStepID)
	r.Agent = ClonePtr(r.Agent)
	r.ChildFlowID = ClonePtr(r.ChildFlowID)
	return r
}

// spareRecords is the room a cloned slice of records has for more: a
// transition appends a step's record or two to a clone (a flow's records),
// which would otherwise copy them all again, into an array twice as long.
// A copy that shares with a base keeps room for half as many again, so the
// copies that continue it (Fork, then ShareWith) append into that room for
// as many steps before the records are copied again.
const spareRecords = 4

func cloneRecords(rs []Record) []Record { return shareRecords(rs, nil) }

// shareRecords copies rs, sharing the pointers of each record equal to
// base's at the same index (the same pointers, so the same strings), and
// copying the others'; rs itself when it continues base in the same array.
func shareRecords(rs, base []Record) []Record {
	if rs == nil {
		return nil
	}
	if len(base) > 0 && len(rs) >= len(base) && &rs[0] == &base[0] {
		return rs
	}
	room := spareRecords
	if base != nil {
		room += len(rs) / 2
	}
	out := make([]Record, len(rs), len(rs)+room)
	for i, r := range rs {
		if i < len(base) && r == base[i] {
			out[i] = r
			continue
		}
		out[i] = r.Clone()
	}
	return out
}

func cloneRounds(rs [][]Record) [][]Record {
	if rs == nil {
		return nil
	}
	out := make([][]Record, len(rs))
	for i, r := range rs {
		out[i] = cloneRecords(r)
	}
	return out
}

func cloneEntries(es []IterationEntry) []IterationEntry {
	if es == nil {
		return nil
	}
	out := make([]IterationEntry, len(es))
	for i, e := range es {
		e.Result = CloneValue(e.Result)
		e.Score = ClonePtr(e.Score)
		e.NewCount = ClonePtr(e.NewCount)
		e.DryStreak = ClonePtr(e.DryStreak)
		out[i] = e
	}
	return out
}

func cloneIterations(m map[string][]IterationEntry) map[string][]IterationEntry {
	if m == nil {
		return nil
	}
	out := make(map[string][]IterationEntry, len(m))
	for k, es := range m {
		out[k] = cloneEntries(es)
	}
	return out
}

func cloneArchived(a []map[string][]IterationEntry) []map[string][]IterationEntry {
	if a == nil {
		return nil
	}
	out := make([]map[string][]IterationEntry, len(a))
	for i, m := range a {
		out[i] = cloneIterations(m)
	}
	return out
}

func cloneBest(m map[string]*IterationBest) map[string]*IterationBest {
	if m == nil {
		return nil
	}
	out := make(map[string]*IterationBest, len(m))
	for k, b := range m {
		if b == nil {
			out[k] = nil
			continue
		}
		c := *b
		c.Result = CloneValue(b.Result)
		c.Score = ClonePtr(b.Score)
		out[k] = &c
	}
	return out
}

func cloneAccumulators(m map[string]*Accumulator) map[string]*Accumulator {
	if m == nil {
		return nil
	}
	out := make(map[string]*Accumulator, len(m))
	for k, a := range m {
		if a == nil {
			out[k] = nil
			continue
		}
		c := *a
		c.Items = cloneList(a.Items)
		c.Keys = slices.Clone(a.Keys)
		out[k] = &c
	}
	return out
}

// CloneRaws copies a list of raw JSON values.
func CloneRaws(rs []json.RawMessage) []json.RawMessage { return shareRaws(rs, nil) }

// shareRaws copies rs, sharing each entry that is base's at the same index
// (the same bytes), copying the others.
func shareRaws(rs, base []json.RawMessage) []json.RawMessage {
	if rs == nil {
		return nil
	}
	out := make([]json.RawMessage, len(rs))
	for i, r := range rs {
		if i < len(base) && len(r) > 0 && len(r) == len(base[i]) && &r[0] == &base[i][0] {
			out[i] = r
			continue
		}
		out[i] = slices.Clone(r)
	}
	return out
}

func cloneRawLists(m map[string][]json.RawMessage) map[string][]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string][]json.RawMessage, len(m))
	for k, rs := range m {
		out[k] = CloneRaws(rs)
	}
	return out
}

// CloneObject deep-copies a JSON object (CloneValue of each value).
func CloneObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = CloneValue(v)
	}
	return out
}

func cloneList(l []any) []any {
	if l == nil {
		return nil
	}
	out := make([]any, len(l))
	for i, v := range l {
		out[i] = CloneValue(v)
	}
	return out
}

// CloneValue deep-copies a JSON-like value: objects and arrays are copied,
// scalars shared (they are immutable). Any other map, slice or pointer (a
// value a caller built in Go rather than decoded) is copied by reflection.
func CloneValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, float64, int, int64, json.Number:
		return v
	case map[string]any:
		return CloneObject(x)
	case []any:
		return cloneList(x)
	case json.RawMessage:
		return slices.Clone(x)
	}
	return cloneReflect(reflect.ValueOf(v)).Interface()
}

// cloneReflect deep-copies maps, slices, arrays, pointers and structs.
func cloneReflect(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			out.SetMapIndex(it.Key(), cloneElem(it.Value(), v.Type().Elem()))
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(cloneElem(v.Index(i), v.Type().Elem()))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(cloneReflect(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v) // unexported fields are shared; exported ones deep-copied
		for i := 0; i < v.NumField(); i++ {
			if out.Field(i).CanSet() {
				out.Field(i).Set(cloneElem(v.Field(i), v.Type().Field(i).Type))
			}
		}
		return out
	}
	return v
}

// cloneElem clones an element held in a container of type t.
func cloneElem(v reflect.Value, t reflect.Type) reflect.Value {
	if t.Kind() == reflect.Interface {
		if v.IsNil() {
			return v
		}
		out := reflect.New(t).Elem()
		out.Set(reflect.ValueOf(CloneValue(v.Interface())))
		return out
	}
	return cloneReflect(v)
}
