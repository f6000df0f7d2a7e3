package engine

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
func (st *FlowState) Clone() *FlowState {
	if st == nil {
		return nil
	}
	c := *st
	c.Inputs = cloneObject(st.Inputs)
	c.StepProgress = st.StepProgress.clone()
	if st.Checkpoints != nil {
		c.Checkpoints = make(map[string]*Checkpoint, len(st.Checkpoints))
		for k, cp := range st.Checkpoints {
			c.Checkpoints[k] = cp.clone()
		}
	}
	c.RoundProgress = st.RoundProgress.clone()
	c.ParentFlowID = copyStrPtr(st.ParentFlowID)
	c.ParentStepID = copyStrPtr(st.ParentStepID)
	c.ChildProgress = st.ChildProgress.clone()
	c.ParallelTasks = cloneObject(st.ParallelTasks)
	c.ParallelRuns = cloneParallelRuns(st.ParallelRuns)
	c.DispatchedAt = maps.Clone(st.DispatchedAt)
	if st.Gate != nil {
		g := *st.Gate
		g.Deadline = cloneTime(st.Gate.Deadline)
		c.Gate = &g
	}
	c.Owner = clonePtr(st.Owner)
	c.Trace = cloneRaws(st.Trace)
	c.BudgetState = clonePtr(st.BudgetState)
	c.Library = st.Library.clone()
	return &c
}

func (cp *Checkpoint) clone() *Checkpoint {
	if cp == nil {
		return nil
	}
	c := *cp
	c.StepProgress = cp.StepProgress.clone()
	c.RoundProgress = cp.RoundProgress.clone()
	c.ChildProgress = cp.ChildProgress.clone()
	return &c
}

// The deep copies of a flow's progress: the one copy of what a checkpoint
// saves, for Clone, Commit and Revert alike.

func (p StepProgress) clone() StepProgress {
	p.StepOutputs = cloneObject(p.StepOutputs)
	p.Records = cloneRecords(p.Records)
	p.Attempts = maps.Clone(p.Attempts)
	return p
}

func (p RoundProgress) clone() RoundProgress {
	p.Rounds = cloneRounds(p.Rounds)
	p.RoundStartStepID = copyStrPtr(p.RoundStartStepID)
	p.TerminalStatus = copyStrPtr(p.TerminalStatus)
	p.Iterations = cloneIterations(p.Iterations)
	p.ArchivedIterations = cloneArchived(p.ArchivedIterations)
	p.ActiveIteration = clonePtr(p.ActiveIteration)
	p.IterationOutcome = maps.Clone(p.IterationOutcome)
	p.IterationBest = cloneBest(p.IterationBest)
	p.IterationAccumulator = cloneAccumulators(p.IterationAccumulator)
	return p
}

func (p ChildProgress) clone() ChildProgress {
	p.ActiveChildFlowID = copyStrPtr(p.ActiveChildFlowID)
	p.ChildAudits = cloneRawLists(p.ChildAudits)
	return p
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneTime(p *time.Time) *time.Time { return clonePtr(p) }

func cloneRecords(rs []Record) []Record {
	if rs == nil {
		return nil
	}
	out := make([]Record, len(rs))
	for i, r := range rs {
		r.RoundStartStepID = copyStrPtr(r.RoundStartStepID)
		r.Agent = copyStrPtr(r.Agent)
		r.ChildFlowID = copyStrPtr(r.ChildFlowID)
		out[i] = r
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
		e.Result = cloneValue(e.Result)
		e.Score = clonePtr(e.Score)
		e.NewCount = clonePtr(e.NewCount)
		e.DryStreak = clonePtr(e.DryStreak)
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
		c.Result = cloneValue(b.Result)
		c.Score = clonePtr(b.Score)
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

func cloneRaws(rs []json.RawMessage) []json.RawMessage {
	if rs == nil {
		return nil
	}
	out := make([]json.RawMessage, len(rs))
	for i, r := range rs {
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
		out[k] = cloneRaws(rs)
	}
	return out
}

func cloneObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneList(l []any) []any {
	if l == nil {
		return nil
	}
	out := make([]any, len(l))
	for i, v := range l {
		out[i] = cloneValue(v)
	}
	return out
}

// cloneValue deep-copies a JSON-like value: objects and arrays are copied,
// scalars shared (they are immutable). Any other map, slice or pointer (a
// value a caller built in Go rather than decoded) is copied by reflection.
func cloneValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, float64, int, int64, json.Number:
		return v
	case map[string]any:
		return cloneObject(x)
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
		out.Set(reflect.ValueOf(cloneValue(v.Interface())))
		return out
	}
	return cloneReflect(v)
}
