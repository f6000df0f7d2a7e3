package engine_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
)

// TestPrunableLine: the GC rule over summaries — a finished flow unchanged
// since the cutoff is prunable unless an ancestor has not finished.
func TestPrunableLine(t *testing.T) {
	cutoff := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	old, recent := cutoff.Add(-time.Hour), cutoff.Add(time.Hour)
	sums := map[string]*state.FlowSummary{}
	add := func(id, parent string, status state.FlowStatus, at time.Time) {
		sums[id] = &state.FlowSummary{FlowID: id, ParentFlowID: parent, Status: status, UpdatedAt: at}
	}
	add("running", "", state.StatusRunning, old)
	add("gated", "", state.StatusAwaitingGate, old)
	add("done", "", state.StatusComplete, old)
	add("fresh", "", state.StatusComplete, recent)
	add("child-of-running", "running", state.StatusComplete, old)
	add("child-of-gated", "gated", state.StatusKilled, old)
	add("child-of-done", "done", state.StatusComplete, old)
	add("child-of-fresh", "fresh", state.StatusComplete, old)
	add("grandchild-of-running", "child-of-running", state.StatusComplete, old)
	add("running-child-of-done", "done", state.StatusRunning, old)
	add("orphan", "gone", state.StatusFailed, old)
	add("cycle-a", "cycle-b", state.StatusComplete, old)
	add("cycle-b", "cycle-a", state.StatusComplete, old)
	add("child-of-broken", "broken", state.StatusComplete, old)
	lookup := func(id string) (*state.FlowSummary, error) {
		if id == "broken" {
			return nil, errors.New("disk on fire")
		}
		if s, ok := sums[id]; ok {
			return s, nil
		}
		return nil, fmt.Errorf("flow %s: %w", id, engine.ErrNotFound)
	}
	for _, tc := range []struct {
		id      string
		want    bool
		wantErr bool
	}{
		{"running", false, false},
		{"gated", false, false},
		{"done", true, false},
		{"fresh", false, false},
		{"child-of-running", false, false},
		{"child-of-gated", false, false},
		{"child-of-done", true, false},
		{"child-of-fresh", true, false}, // the parent finished; its age is its own business
		{"grandchild-of-running", false, false},
		{"running-child-of-done", false, false},
		{"orphan", true, false},
		{"cycle-a", true, false},
		{"child-of-broken", false, true},
	} {
		got, err := engine.PrunableLine(sums[tc.id], cutoff, lookup)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("PrunableLine(%s) = %v, %v; want %v (error %v)", tc.id, got, err, tc.want, tc.wantErr)
		}
	}
}
