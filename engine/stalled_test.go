package engine_test

import (
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

func TestFlowSummaryStalled(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	live := &state.Lease{ID: "run-1", ExpiresAt: now.Add(time.Minute)}
	expired := &state.Lease{ID: "run-1", ExpiresAt: now.Add(-time.Second)}
	tests := []struct {
		name string
		sum  state.FlowSummary
		want bool
	}{
		{"runner with a live lease", state.FlowSummary{Status: state.StatusRunning, Driver: state.DriverRunner, Owner: live}, false},
		{"runner exited (lease released)", state.FlowSummary{Status: state.StatusRunning, Driver: state.DriverRunner}, true},
		{"runner exited at a gate", state.FlowSummary{Status: state.StatusAwaitingGate, Driver: state.DriverRunner}, true},
		{"runner killed (lease expired)", state.FlowSummary{Status: state.StatusRunning, Driver: state.DriverRunner, Owner: expired}, true},
		{"agent over MCP", state.FlowSummary{Status: state.StatusRunning, Driver: state.DriverAgent}, false},
		{"finished runner flow", state.FlowSummary{Status: state.StatusComplete, Driver: state.DriverRunner}, false},
		{"killed runner flow", state.FlowSummary{Status: state.StatusKilled, Driver: state.DriverRunner}, false},
	}
	for _, tc := range tests {
		if got := tc.sum.Stalled(now); got != tc.want {
			t.Errorf("%s: Stalled = %v, want %v", tc.name, got, tc.want)
		}
	}
}
