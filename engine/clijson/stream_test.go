package clijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine/state"
)

// encoded is the CLI's one-document rendering of Flows (main.go's
// writeJSON), the reference WriteFlows must match byte for byte.
func encoded(t *testing.T, list []state.FlowSummary, now time.Time) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Flows(list, now)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWriteFlowsBytes: WriteFlows writes exactly what encoding the whole
// list writes, for summaries with every optional field, strings that need
// escaping (quotes, control characters, HTML, invalid UTF-8, U+2028,
// non-ASCII), every status, times with and without fractions and zones.
func TestWriteFlowsBytes(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	deadline := now.Add(time.Hour)
	zone := time.FixedZone("X", 5*3600+1800)
	odd := []string{"", "plain", `q"uote`, `back\\slash`, "tab\tnew\nline\r", "nul\x00bell\x07", "<b>&amp;</b>", "bad\xffutf8",
		"line\u2028sep\u2029", "héllo wörld ✓", "emoji 🎉", "\x7f", "\x1f"}
	statuses := []state.FlowStatus{state.StatusRunning, state.StatusAwaitingGate, state.StatusComplete, state.StatusKilled,
		state.StatusBudgetExhausted, state.StatusFailed}
	var list []state.FlowSummary
	for i, s := range odd {
		sum := state.FlowSummary{
			FlowID: fmt.Sprintf("f%d%s", i, s), FlowName: s, Status: statuses[i%len(statuses)],
			CurrentStep: s, StepNumber: i, TotalSteps: 2 * i, Round: i % 3, Driver: s, ParentFlowID: s,
			CreatedAt: now.Add(time.Duration(i) * 1234567 * time.Nanosecond), UpdatedAt: now.In(zone).Add(time.Duration(i) * time.Second), Version: int64(i) << 40,
		}
		if i%2 == 0 {
			sum.Gate = &state.PendingGate{StepID: s, Round: i, DispatchedAt: now, OnTimeout: s, Approver: s}
			if i%4 == 0 {
				sum.Gate.Deadline = &deadline
			}
		}
		if i%3 == 0 {
			sum.Driver = state.DriverRunner
			sum.Owner = &state.Lease{ID: s, PID: i, Host: s, Heartbeat: now, ExpiresAt: now.Add(time.Duration(i-6) * time.Minute)}
		}
		list = append(list, sum)
	}
	list = append(list, state.FlowSummary{}) // every zero value
	for n := 0; n <= len(list); n++ {
		var got bytes.Buffer
		if err := WriteFlows(&got, list[:n], now); err != nil {
			t.Fatal(err)
		}
		if want := encoded(t, list[:n], now); !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%d flows: WriteFlows differs from the encoder\n--- want\n%s--- got\n%s", n, want, got.Bytes())
		}
	}
}

// TestWriteFlowsErrors: a time encoding/json refuses fails WriteFlows as
// it fails the encoder, and a failing writer's error is returned.
func TestWriteFlowsErrors(t *testing.T) {
	bad := []state.FlowSummary{{FlowID: "x", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if err := WriteFlows(&bytes.Buffer{}, bad, time.Now()); err == nil || !strings.Contains(err.Error(), "year outside of range") {
		t.Fatalf("WriteFlows of year 10000: %v, want the encoder's error", err)
	}
	many := make([]state.FlowSummary, 5000)
	if err := WriteFlows(failingWriter{}, many, time.Now()); !errors.Is(err, errWrite) {
		t.Fatalf("WriteFlows to a failing writer: %v, want %v", err, errWrite)
	}
}

var errWrite = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }
