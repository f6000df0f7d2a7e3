package engine

import (
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine/state"
)

// The sharing rule's guard fails a write into a recorded value in place:
// a snapshot's copy shares the step outputs with the copy ownCommits holds,
// so writing into one shows up at the next get or put.
func TestOwnCommitsGuardCatchesInPlaceWrite(t *testing.T) {
	if !checkOwnCommits {
		t.Fatal("the engine's tests run with checkOwnCommits set (owncommits_check_test.go)")
	}
	caller := map[string]any{"n": 1.0}
	st := &state.FlowState{FlowID: "f", Version: 1}
	st.StepOutputs = map[string]any{"a": caller}
	var o ownCommits
	o.put([]*state.FlowState{st}, nil)
	caller["n"] = 2.0 // the caller's value is not shared: put copied it
	snap := o.get("f", true)
	if got := snap.StepOutputs["a"].(map[string]any)["n"]; got != 1.0 {
		t.Fatalf("put kept the caller's value: n = %v", got)
	}
	snap.StepOutputs["b"] = "new" // the snapshot's own map: allowed
	snap.Version = 2
	o.put([]*state.FlowState{snap}, nil)
	snap2 := o.get("f", true)
	snap2.StepOutputs["a"].(map[string]any)["n"] = 3.0 // in place: the rule broken
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "changed after it was put") {
			t.Fatalf("no failure for a write into a shared output: %v", r)
		}
	}()
	o.get("f", true)
}

// A snapshot's copy shares the recorded outputs with the held copy (it does
// not deep-copy them), and put shares what the copy it replaces holds.
func TestOwnCommitsShareOutputs(t *testing.T) {
	out := map[string]any{"n": 1.0}
	st := &state.FlowState{FlowID: "f", Version: 1}
	st.StepOutputs = map[string]any{"a": out}
	var o ownCommits
	o.put([]*state.FlowState{st}, nil)
	held := o.m["f"]
	snap := o.get("f", true)
	if !sameMap(snap.StepOutputs["a"], held.StepOutputs["a"]) {
		t.Fatal("get deep-copied a recorded output")
	}
	if sameMap(snap.StepOutputs, held.StepOutputs) {
		t.Fatal("get shares the outputs' map itself")
	}
	snap.Version = 2
	snap.StepOutputs["b"] = map[string]any{}
	o.put([]*state.FlowState{snap}, nil)
	if !sameMap(o.m["f"].StepOutputs["a"], held.StepOutputs["a"]) {
		t.Fatal("put copied an output the copy it replaces holds")
	}
	if sameMap(o.m["f"].StepOutputs["b"], snap.StepOutputs["b"]) {
		t.Fatal("put shares a new output with the transition's state")
	}
}

func sameMap(a, b any) bool {
	x, _ := a.(map[string]any)
	y, _ := b.(map[string]any)
	if x == nil || y == nil {
		return false
	}
	x["\x00probe"] = true
	_, ok := y["\x00probe"]
	delete(x, "\x00probe")
	return ok
}
