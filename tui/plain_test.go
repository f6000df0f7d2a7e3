package tui

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
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
			Data: engine.StepFailed{Attempt: 1, Violations: []string{"ensure 'x' failed"}}}, "",
			`2026-11-22T05:00:00Z step_failed flow=f1 step=build attempt=1 exhausted=false violations="[\"ensure 'x' failed\"]"`},
		{engine.Event{Time: base, FlowID: "f1", Type: engine.EventGateResolved, StepID: "review",
			Data: engine.GateResolved{Outcome: "approve", Rationale: "ship it", ResolvedBy: "human", Channel: "tui"}}, "d",
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
			Data: engine.StepFailed{Violations: []string{"stderr: " + evil}, Status: evil}},
		{Time: base, FlowID: "f1", Type: engine.EventGateResolved, StepID: "review",
			Data: engine.GateResolved{Rationale: "ok " + evil, Reviewer: evil}},
		{Time: base, FlowID: "f1", Type: engine.EventFlowFinished, Data: engine.FlowFinished{Reason: evil}},
		{Time: base, FlowID: "f1", Type: engine.EventParallelTask, StepID: "fan", Data: engine.ParallelTask{Error: evil}},
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

// plainFields splits a --plain line into its fields as a reader would:
// on spaces outside double quotes, each field key=value, a quoted value
// unquoted (strconv.Unquote). It fails on a line that does not parse.
func plainFields(t *testing.T, line string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	words := []string{}
	var cur strings.Builder
	quoted, escaped := false, false
	for _, r := range line {
		switch {
		case escaped:
			escaped = false
		case quoted && r == '\\':
			escaped = true
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			words = append(words, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	words = append(words, cur.String())
	if quoted {
		t.Fatalf("unterminated quote in %q", line)
	}
	for _, w := range words[2:] { // time, kind
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			t.Fatalf("field %q of %q is not key=value", w, line)
		}
		if strings.HasPrefix(v, `"`) {
			u, err := strconv.Unquote(v)
			if err != nil {
				t.Fatalf("value %s of %q: %v", v, line, err)
			}
			v = u
		}
		out[k] = append(out[k], v)
	}
	return out
}

// TestPlainQuotesEveryValue: a flow named "x flow=FAKE step=deploy" (or a
// question, step or rationale with spaces, quotes, '=' or a newline)
// cannot forge a field in --plain: every value is one word or quoted, so
// each line has exactly one flow=, and the name reads back whole.
func TestPlainQuotesEveryValue(t *testing.T) {
	forged := "x flow=FAKE step=deploy"
	spec := strings.Replace(gateSpec, "  deploy:\n", "  \""+forged+"\":\n", 1)
	spec = strings.Replace(spec, `intent: "Ship the build to production?"`, `intent: "ship? \"yes\" flow=FAKE"`, 1)
	st := enginetest.New()
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st}
	ctx := context.Background()
	out, err := svc.Plan(ctx, spec, forged, map[string]any{"name": "w"}, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := engine.FlowIDOf(out)
	if _, err := svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "build", Result: map[string]any{"ok": true}}); err != nil {
		t.Fatal(err)
	}
	var buf syncBuffer
	if err := RunPlain(ctx, PlainOptions{Source: ServiceSource(svc), Out: &buf, Once: true, Backend: "etcd etcd://h:2379/x"}); err != nil {
		t.Fatal(err)
	}
	evs, err := svc.Query().FlowEvents(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for _, ev := range evs {
		lines = append(lines, PlainEventLine(ev, forged))
	}
	// A decision whose rationale would forge a field.
	lines = append(lines, PlainEventLine(engine.Event{Time: evs[0].Time, FlowID: id, Type: engine.EventGateResolved, StepID: "review",
		Data: engine.GateResolved{Outcome: "approve", Rationale: "ok\nflow=FAKE"}}, forged))
	lines = append(lines, plainSpecLines(watch.Update{Path: "a b=c.stratum.yaml", Diags: specs.Diagnostics{{Line: 1, Column: 2,
		Severity: specs.SeverityError, Code: "bad-ref", Message: "step 'x flow=FAKE' is unknown"}}})...)
	named := 0
	for _, l := range lines {
		if strings.Contains(l, "\n") {
			t.Fatalf("a value broke the line: %q", l)
		}
		f := plainFields(t, l)
		if n := len(f["flow"]); n > 1 {
			t.Errorf("%d flow= fields in %q", n, l)
		}
		if names := f["name"]; len(names) == 1 {
			named++
			if names[0] != forged {
				t.Errorf("name read back as %q from %q", names[0], l)
			}
		}
		if len(f["step"]) > 1 || len(f["file"]) > 1 {
			t.Errorf("a forged field in %q", l)
		}
	}
	if named < 3 {
		t.Fatalf("%d lines name the flow:\n%s", named, strings.Join(lines, "\n"))
	}
	for _, want := range []string{`name="x flow=FAKE step=deploy"`, `question="ship? \"yes\" flow=FAKE"`, `rationale="ok\nflow=FAKE"`, `store="etcd etcd://h:2379/x"`} {
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("no %s in:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}

func TestPlainValue(t *testing.T) {
	for in, want := range map[string]string{
		"deploy": "deploy", "": `""`, "a b": `"a b"`, "a=b": `"a=b"`, `a"b`: `"a\"b"`, `a\b`: `"a\\b"`,
		"a\nb": `"a\nb"`, "a\u00a0b": `"a\u00a0b"`, "evil\u202e": `"evil\u202e"`, "\x1b[31m": `"\x1b[31m"`,
		"\xff": `"\xff"`, "naïve": "naïve",
	} {
		if got := plainValue(in); got != want {
			t.Errorf("plainValue(%q) = %s, want %s", in, got, want)
		}
	}
}
