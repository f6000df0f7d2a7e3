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
	c.StepOutputs = cloneObject(st.StepOutputs)
	c.Records = cloneRecords(st.Records)
	c.Attempts = maps.Clone(st.Attempts)
	if st.Checkpoints != nil {
		c.Checkpoints = make(map[string]*Checkpoint, len(st.Checkpoints))
		for k, cp := range st.Checkpoints {
			c.Checkpoints[k] = cp.clone()
		}
	}
	c.Rounds = cloneRounds(st.Rounds)
	c.RoundStartStepID = copyStrPtr(st.RoundStartStepID)
	c.TerminalStatus = copyStrPtr(st.TerminalStatus)
	c.Iterations = cloneIterations(st.Iterations)
	c.ArchivedIterations = cloneArchived(st.ArchivedIterations)
	c.ActiveIteration = clonePtr(st.ActiveIteration)
	c.IterationOutcome = maps.Clone(st.IterationOutcome)
	c.IterationBest = cloneBest(st.IterationBest)
	c.IterationAccumulator = cloneAccumulators(st.IterationAccumulator)
	c.ParentFlowID = copyStrPtr(st.ParentFlowID)
	c.ParentStepID = copyStrPtr(st.ParentStepID)
	c.ActiveChildFlowID = copyStrPtr(st.ActiveChildFlowID)
	c.ChildAudits = cloneRawLists(st.ChildAudits)
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
	c.StepOutputs = cloneObject(cp.StepOutputs)
	c.Attempts = maps.Clone(cp.Attempts)
	c.Records = cloneRecords(cp.Records)
	c.Rounds = cloneRounds(cp.Rounds)
	c.RoundStartStepID = copyStrPtr(cp.RoundStartStepID)
	c.TerminalStatus = copyStrPtr(cp.TerminalStatus)
	c.Iterations = cloneIterations(cp.Iterations)
	c.ArchivedIterations = cloneArchived(cp.ArchivedIterations)
	c.ActiveIteration = clonePtr(cp.ActiveIteration)
	c.IterationOutcome = maps.Clone(cp.IterationOutcome)
	c.IterationBest = cloneBest(cp.IterationBest)
	c.IterationAccumulator = cloneAccumulators(cp.IterationAccumulator)
	c.ActiveChildFlowID = copyStrPtr(cp.ActiveChildFlowID)
	c.ChildAudits = cloneRawLists(cp.ChildAudits)
	return &c
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
