package engine_test

import (
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
)

func TestFlowSummaryStalled(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	live := &engine.Lease{ID: "run-1", ExpiresAt: now.Add(time.Minute)}
	expired := &engine.Lease{ID: "run-1", ExpiresAt: now.Add(-time.Second)}
	tests := []struct {
		name string
		sum  engine.FlowSummary
		want bool
	}{
		{"runner with a live lease", engine.FlowSummary{Status: engine.StatusRunning, Driver: engine.DriverRunner, Owner: live}, false},
		{"runner exited (lease released)", engine.FlowSummary{Status: engine.StatusRunning, Driver: engine.DriverRunner}, true},
		{"runner exited at a gate", engine.FlowSummary{Status: engine.StatusAwaitingGate, Driver: engine.DriverRunner}, true},
		{"runner killed (lease expired)", engine.FlowSummary{Status: engine.StatusRunning, Driver: engine.DriverRunner, Owner: expired}, true},
		{"agent over MCP", engine.FlowSummary{Status: engine.StatusRunning, Driver: engine.DriverAgent}, false},
		{"finished runner flow", engine.FlowSummary{Status: engine.StatusComplete, Driver: engine.DriverRunner}, false},
		{"killed runner flow", engine.FlowSummary{Status: engine.StatusKilled, Driver: engine.DriverRunner}, false},
	}
	for _, tc := range tests {
		if got := tc.sum.Stalled(now); got != tc.want {
			t.Errorf("%s: Stalled = %v, want %v", tc.name, got, tc.want)
		}
	}
}
