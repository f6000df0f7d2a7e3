package state

import (
	"fmt"
	"strings"
)

// FlowStatus is the persisted status of a flow execution. The values are
// stored and shown (the CLI's `query` JSON, the TUI), so they never change:
// add new ones at the end.
type FlowStatus string

// Flow statuses (ours; the original deleted finished flows instead).
const (
	StatusRunning         FlowStatus = "running"
	StatusAwaitingGate    FlowStatus = "awaiting_gate"
	StatusComplete        FlowStatus = "complete"
	StatusKilled          FlowStatus = "killed"
	StatusBudgetExhausted FlowStatus = "budget_exhausted"
	StatusFailed          FlowStatus = "failed" // retries exhausted with no on_fail (the original deleted the file)
)

// flowStatuses lists every status, in the order above.
var flowStatuses = []FlowStatus{StatusRunning, StatusAwaitingGate, StatusComplete, StatusKilled, StatusBudgetExhausted, StatusFailed}

// ParseFlowStatus reads a status given by a user (`query flows --status`):
// an unknown one is an error naming every status.
func ParseFlowStatus(s string) (FlowStatus, error) {
	if st := FlowStatus(s); st.Valid() {
		return st, nil
	}
	names := make([]string, len(flowStatuses))
	for i, st := range flowStatuses {
		names[i] = string(st)
	}
	return "", fmt.Errorf("unknown status %q: want one of %s", s, strings.Join(names, ", "))
}

// Valid reports whether s is one of the statuses.
func (s FlowStatus) Valid() bool {
	for _, v := range flowStatuses {
		if s == v {
			return true
		}
	}
	return false
}

// Finished reports whether s is final: complete, killed, failed or
// budget_exhausted. A finished flow accepts no reports; only finished flows
// are ever pruned.
func (s FlowStatus) Finished() bool {
	switch s {
	case StatusComplete, StatusKilled, StatusFailed, StatusBudgetExhausted:
		return true
	}
	return false
}

// Active reports whether the flow still has work: running or waiting at a
// gate.
func (s FlowStatus) Active() bool { return s == StatusRunning || s == StatusAwaitingGate }
