package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// putStore is the smallest Store commit needs: an Update whose Tx records
// each Put and answers it as a conditional put over versions.
type putStore struct {
	Store  // the rest is not used
	stored map[string]int64
	puts   []string
}

func (p *putStore) Update(_ context.Context, fn func(Tx) error) error {
	return fn(&putTx{p: p})
}

type putTx struct {
	Tx
	p *putStore
}

func (t *putTx) Put(st *state.FlowState, _ state.FlowSummary, expect int64) error {
	if v := t.p.stored[st.FlowID]; v != expect {
		return &VersionError{FlowID: st.FlowID, Expected: expect, Stored: v}
	}
	t.p.stored[st.FlowID] = st.Version
	t.p.puts = append(t.p.puts, st.FlowID+":"+string(st.Status))
	return nil
}

// A flow a transition writes twice (two states of one child, or the flow
// among the others too) is written once, the last state, at one version
// one past the one read, stamped once by the Service's clock.
func TestCommitWritesAFlowOnce(t *testing.T) {
	now := time.Date(2026, 7, 8, 9, 10, 11, 0, time.UTC)
	ps := &putStore{stored: map[string]int64{"main": 4, "child": 2}}
	s := &Service{ParseSpec: exprlang.ParseSpec, Store: ps, Now: func() time.Time { return now }}
	sn := newSnapshot(context.Background(), ps)
	sn.read = map[string]int64{"main": 4, "child": 2}
	child1 := &state.FlowState{FlowID: "child", Status: state.StatusRunning, Version: 2}
	child2 := &state.FlowState{FlowID: "child", Status: state.StatusKilled, Version: 2}
	main := &state.FlowState{FlowID: "main", Status: state.StatusRunning, Version: 4}
	c := computed{st: main, res: transitionResult{Put: []*state.FlowState{child1, main, child2}}}
	if _, err := s.commit(context.Background(), sn, c); err != nil {
		t.Fatal(err)
	}
	if len(ps.puts) != 2 || ps.puts[0] != "child:killed" || ps.puts[1] != "main:running" {
		t.Fatalf("puts %v, want the child's last state then main, once each", ps.puts)
	}
	if ps.stored["child"] != 3 || ps.stored["main"] != 5 {
		t.Fatalf("stored versions %v, want child 3 and main 5", ps.stored)
	}
	if child2.Version != 3 || !child2.UpdatedAt.Equal(now) || main.Version != 5 || !main.UpdatedAt.Equal(now) {
		t.Fatalf("stamps: child %d %v, main %d %v", child2.Version, child2.UpdatedAt, main.Version, main.UpdatedAt)
	}
}
