package tui

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// fakeRunner records the run it is asked for and offers a gate to the sink.
type fakeRunner struct {
	mu     sync.Mutex
	flow   string
	inputs map[string]any
	gate   review.PendingReview
}

func (f *fakeRunner) RunFlow(ctx context.Context, sp *specs.Spec, flow string, inputs map[string]any, sink review.Sink) (*run.Outcome, error) {
	f.mu.Lock()
	f.flow, f.inputs = flow, inputs
	f.mu.Unlock()
	if sink != nil {
		if err := sink.Emit(ctx, f.gate); err != nil {
			return nil, err
		}
	}
	return &run.Outcome{FlowID: "abcdef0123", Status: "complete"}, nil
}

func TestRunFromSpecsPane(t *testing.T) {
	f := newFixture(t)
	sink := review.NewQueue(0, 0)
	fr := &fakeRunner{}
	m := New(Options{Source: f.src, Keys: DefaultKeyMap(), Reviewer: "alice", Styles: DefaultStyles(NewRenderer(nil, true)),
		Tick: -1, Runner: fr})
	drive(m, m.Init())
	// Wired after Init: drive runs commands synchronously and Init's wait
	// on the sink would block it.
	m.opt.Sink, m.opt.Reviews = sink, sink.Reviews()
	fr.gate = m.reviews[0]
	for _, u := range specUpdates(t) {
		m.Update(specMsg(u))
	}
	press(m, "6", "enter") // broken.stratum.yaml is first: invalid
	if len(m.dialogs) != 0 || !strings.Contains(m.status, "invalid") {
		t.Fatalf("run of an invalid spec: dialogs %d, status %q", len(m.dialogs), m.status)
	}
	press(m, "down", "enter")
	if _, ok := m.dialogs[0].(*runDialog); !ok || !strings.Contains(m.View(), "inputs: name:string") {
		t.Fatalf("no run dialog with the flow's inputs:\n%s", m.View())
	}
	typeText(m, "oops")
	press(m, "enter")
	if d := m.dialogs[0].(*runDialog); !strings.Contains(d.err, "NAME=VALUE") {
		t.Fatalf("bad inputs accepted: %q", d.err)
	}
	for range "oops" {
		press(m, "backspace")
	}
	typeText(m, `name="big world"`)
	press(m, "enter")
	if fr.flow != "deploy" || !reflect.DeepEqual(fr.inputs, map[string]any{"name": "big world"}) {
		t.Fatalf("runner got %q %v", fr.flow, fr.inputs)
	}
	if !strings.Contains(m.status, "ended complete") {
		t.Fatalf("status %q", m.status)
	}
	// The run's gate came through the sink: its decision dialog opens.
	// (Update, not drive: the re-armed wait on the sink would block.)
	m.Update(m.waitReviewsCmd()())
	if len(m.dialogs) != 1 {
		t.Fatal("the gate offered to the sink opened no dialog")
	}
	if d := m.dialogs[0].(*decisionDialog); d.r.ReviewID != fr.gate.ReviewID || d.stage != stageChoose {
		t.Fatalf("dialog for %s at stage %d", d.r.ReviewID, d.stage)
	}
}
