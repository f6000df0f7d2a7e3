package tui

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/watch"
)

func TestPlainEventLine(t *testing.T) {
	tests := []struct {
		ev   engine.Event
		name string
		want string
	}{
		{engine.Event{Seq: 1, Time: base, FlowID: "f1", Type: engine.EventFlowCreated}, "deploy",
			"2026-11-22T05:00:00Z flow_created flow=f1 name=deploy"},
		{engine.Event{Time: base, FlowID: "f1", Type: engine.EventStepFailed, StepID: "build",
			Data: engine.EventData{Attempt: 1, Violations: []string{"ensure 'x' failed"}}}, "",
			`2026-11-22T05:00:00Z step_failed flow=f1 step=build attempt=1 exhausted=false violations="[\"ensure 'x' failed\"]"`},
		{engine.Event{Time: base, FlowID: "f1", Type: engine.EventGateResolved, StepID: "review",
			Data: engine.EventData{Outcome: "approve", Rationale: "ship it", ResolvedBy: "human", Channel: "tui"}}, "d",
			`2026-11-22T05:00:00Z gate_resolved flow=f1 name=d step=review channel=tui outcome=approve rationale="ship it" resolved_by=human round=0`},
	}
	for _, tt := range tests {
		if got := PlainEventLine(tt.ev, tt.name); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunPlain: the state at a glance, then every new event as a line.
func TestRunPlain(t *testing.T) {
	f := newFixture(t)
	var out syncBuffer
	if err := RunPlain(context.Background(), PlainOptions{Source: f.src, Out: &out, Once: true}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"state flows=3 running=0 stalled=1 waiting_gates=2",
		"flow_stalled flow=" + f.runID + " name=deploy status=running step=build continue=\"stratum run --resume " + f.runID + "\"", "gate_waiting flow=" + f.gateID + " name=deploy step=review round=0",
		`question="Ship the build to production?"`} {
		if !strings.Contains(got, want) {
			t.Errorf("plain output lacks %q:\n%s", want, got)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var live syncBuffer
	go func() { done <- RunPlain(ctx, PlainOptions{Source: f.src, Out: &live}) }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(live.String(), "state ") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	round := 0
	if _, err := f.svc.GateResolve(context.Background(), f.gateID, review.Decision{StepID: "review", Round: &round, Outcome: review.Approve,
		Rationale: "ok", Reviewer: "carol", ResolvedBy: review.Human, Channel: review.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	want := "gate_resolved flow=" + f.gateID + " name=deploy step=review channel=cli outcome=approve rationale=ok"
	for !strings.Contains(live.String(), want) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := live.String(); !strings.Contains(s, want) || !strings.Contains(s, "flow_finished flow="+f.gateID) {
		t.Fatalf("live plain output lacks the decision:\n%s", s)
	}
}

// Untrusted text in plain lines (flow names, step ids, outputs, violations,
// rationales, reviewers) never reaches the terminal raw: ESC, NUL, DEL and
// C1 characters are escaped, quoted or not.
func TestPlainEventLineEscapesControl(t *testing.T) {
	evil := "\x1b]0;pwned\x07\x1b[2J\x00\u009b\x7f"
	evs := []engine.Event{
		{Time: base, FlowID: "f1", Type: engine.EventStepFailed, StepID: "build" + evil,
			Data: engine.EventData{Violations: []string{"stderr: " + evil}, Error: evil}},
		{Time: base, FlowID: "f1", Type: engine.EventGateResolved, StepID: "review",
			Data: engine.EventData{Rationale: "ok " + evil, Reviewer: evil, Reason: evil}},
	}
	for _, ev := range evs {
		line := PlainEventLine(ev, "deploy"+evil)
		for _, r := range line {
			if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
				t.Errorf("plain line has a raw %U: %q", r, line)
				break
			}
		}
	}
	lines := plainSpecLines(watch.Update{Path: "a" + evil + ".stratum.yaml", Diags: specs.Diagnostics{{Severity: specs.SeverityError, Code: "x", Message: evil}}})
	for _, line := range lines {
		if strings.ContainsAny(line, "\x1b\x00\u009b\x7f") {
			t.Errorf("spec line has a raw control character: %q", line)
		}
	}
}
