package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// The DRIVER column tells a flow the MCP server drives in the background
// (a live "bg-" lease) from a runner's and an agent's.
func TestDriverColumn(t *testing.T) {
	now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	var cell func(*common, *state.FlowSummary, time.Time, int) string
	for _, c := range flowColumnsAll {
		if c.title == "DRIVER" {
			cell = c.cell
		}
	}
	for _, c := range []struct {
		f    state.FlowSummary
		want string
	}{
		{state.FlowSummary{Driver: "runner", Owner: &state.Lease{ID: "bg-1", ExpiresAt: now.Add(time.Minute)}}, "bg"},
		{state.FlowSummary{Driver: "runner", Owner: &state.Lease{ID: "bg-1", ExpiresAt: now.Add(-time.Minute)}}, "runner"},
		{state.FlowSummary{Driver: "runner", Owner: &state.Lease{ID: "run-1", ExpiresAt: now.Add(time.Minute)}}, "runner"},
		{state.FlowSummary{Driver: "agent"}, "agent"},
		{state.FlowSummary{}, "-"},
	} {
		if got := strings.TrimSpace(cell(nil, &c.f, now, 7)); got != c.want {
			t.Errorf("%+v: %q, want %q", c.f, got, c.want)
		}
	}
}
