package tui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// TestStalledFlows: a flow whose runner has gone reads stalled (never
// running) in the Flows pane, with the command that continues it, and the
// header counts only flows something drives.
func TestStalledFlows(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// The hunt flow: driven by a live runner (lease ahead of the clock).
	if err := f.svc.Leases().Claim(ctx, f.huntID, state.Lease{ID: "r1", ExpiresAt: base.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, f.src, 80, 24)
	frame := m.View()
	if !strings.Contains(frame, "0 running · 1 stalled · 2 waiting gates") {
		t.Fatalf("header:\n%s", frame)
	}
	if strings.Contains(frame, "▶ running") || !strings.Contains(frame, "⚠ stalled") {
		t.Fatalf("the runner-less flow is not shown stalled:\n%s", frame)
	}
	if !strings.Contains(frame, "continue it with: stratum run --resume "+f.runID) {
		t.Fatalf("no resume command for the selected stalled flow:\n%s", frame)
	}
	// The lease expires: the hunt flow is stalled too.
	m.now = func() time.Time { return base.Add(2 * time.Hour) }
	if frame := m.View(); !strings.Contains(frame, "2 stalled") {
		t.Fatalf("expired lease not stalled:\n%s", frame)
	}
}

// TestDecideStalledGate: deciding the gate of a flow whose runner has exited
// says the flow needs `stratum run --resume ID`; the message has no wire
// tokens (execute_step).
func TestDecideStalledGate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.svc.Leases().Claim(ctx, f.gateID, state.Lease{ID: "r1", ExpiresAt: base.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Leases().Release(ctx, f.gateID, "r1"); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, f.src, 100, 30)
	press(m, "3", "r")
	typeText(m, "add tests")
	press(m, "enter", "r")
	if !strings.Contains(m.status, "stratum run --resume "+f.gateID) || !strings.Contains(m.status, "next: step build") ||
		strings.Contains(m.status, "execute_step") {
		t.Fatalf("status %q", m.status)
	}
}

// TestCopyFlowID: y writes the selected flow's full id as OSC 52.
func TestCopyFlowID(t *testing.T) {
	f := newFixture(t)
	var clip bytes.Buffer
	m := New(Options{Source: f.src, Keys: DefaultKeyMap(), Reviewer: "alice", Styles: DefaultStyles(NewRenderer(os.Stdout, true)),
		Now: func() time.Time { return base.Add(10 * time.Minute) }, Tick: -1, Clipboard: &clip})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	drive(m, m.Init())
	press(m, "3", "y")
	if got, want := clip.String(), ansi.SetSystemClipboard(f.gateID); got != want {
		t.Fatalf("clipboard %q, want %q", got, want)
	}
	if !strings.Contains(m.status, "copied flow id "+f.gateID) {
		t.Fatalf("status %q", m.status)
	}
	if h := m.keys.FullHelp(); !strings.Contains(m.helpText(h), "copy flow id") {
		t.Fatal("help lacks the copy key")
	}
}

func (m *Model) helpText(groups [][]key.Binding) string {
	var b strings.Builder
	for _, g := range groups {
		for _, kb := range g {
			b.WriteString(kb.Help().Key + " " + kb.Help().Desc + "\n")
		}
	}
	return b.String()
}

// TestDecidedElsewhereNotice: the notice names who decided, the outcome and
// the rationale, from the flow's gate record.
func TestDecidedElsewhereNotice(t *testing.T) {
	f, m := gateModel(t)
	gates, _ := paneOf[*gatesPane](t, m)
	r, _ := gates.selected(&m.common)
	press(m, "a")
	round := r.Round
	if _, err := f.svc.GateResolve(context.Background(), r.FlowID, review.Decision{StepID: r.StepID, Round: &round,
		Outcome: review.Kill, Rationale: "no tests", Reviewer: "carol", ResolvedBy: review.Human, Channel: review.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	drive(m, m.handleEngineEvents(nil))
	for _, want := range []string{"decided elsewhere", "kill by carol", "(cli)", "no tests"} {
		if !strings.Contains(m.status, want) {
			t.Fatalf("status %q lacks %q", m.status, want)
		}
	}
}

// TestGateContext: the Gates pane and the dialog show the inputs, the
// revise target and rounds left, the approver, the deadline, violations a
// later attempt fixed marked fixed, and outputs expanded with enter.
func TestGateContext(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const spec = `version: "0.2"
functions:
  approval:
    mode: gate
    approver: human
flows:
  rel:
    max_rounds: 3
    input: {v: {type: string}}
    steps:
      - id: build
        intent: "Build"
        ensure: ["result.ok == True"]
        retries: 3
      - id: review
        function: approval
        depends_on: [build]
        on_approve: ~
        on_revise: build
        on_kill: ~
`
	r, err := f.svc.Plan(ctx, spec, "rel", map[string]any{"v": "1.0"}, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := engine.FlowIDOf(r)
	if _, err := f.svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "build", Result: map[string]any{"ok": false, "why": "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "build", Result: map[string]any{"ok": true, "notes": strings.Repeat("long output ", 12)}}); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, f.src, 100, 40)
	press(m, "3", "G") // the newest gate is last: oldest first
	frame := m.View()
	for _, want := range []string{"flow " + id, "inputs: v: 1.0", "revise → step build · 3 of 3 rounds left", "approver: human",
		"no deadline", "✓ fixed: build attempt 1", "(attempt 2 passed)", "Outputs (enter expands)"} {
		if !strings.Contains(frame, want) {
			t.Errorf("Gates pane lacks %q:\n%s", want, frame)
		}
	}
	if strings.Contains(frame, "✗ violation") {
		t.Errorf("a fixed violation is shown as current:\n%s", frame)
	}
	press(m, "enter")
	if frame := m.View(); !strings.Contains(frame, `"notes": "long output`) || !strings.Contains(frame, "enter folds") {
		t.Fatalf("enter did not expand the outputs:\n%s", frame)
	}
	press(m, "r")
	if frame := m.View(); !strings.Contains(frame, "revise → step build") || !strings.Contains(frame, "approver: human") {
		t.Fatalf("the dialog lacks the gate's context:\n%s", frame)
	}
}

// TestGatesOldestFirstAndSelectionKept: the Gates pane lists the gate that
// has waited longest first, and its cursor stays on its gate when others
// come and go.
func TestGatesOldestFirstAndSelectionKept(t *testing.T) {
	f, m := gateModel(t)
	if m.reviews[0].FlowID != f.gateID || m.reviews[1].FlowID != f.huntID {
		t.Fatalf("order %s, %s", m.reviews[0].FlowID, m.reviews[1].FlowID)
	}
	press(m, "down") // the hunt gate
	gates, _ := paneOf[*gatesPane](t, m)
	round := 0
	if _, err := f.svc.GateResolve(context.Background(), f.gateID, review.Decision{StepID: "review", Round: &round,
		Outcome: review.Approve, Reviewer: "carol", ResolvedBy: review.Human, Channel: review.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	drive(m, m.handleEngineEvents(nil))
	if got := gates.selectedFlow(&m.common); got != f.huntID {
		t.Fatalf("selection moved to %s", got)
	}
}

// TestApproveRightAfterLaunch: with a gate waiting, a, the rationale,
// enter, a records the approval from the pane the console opens on, for
// the selected flow's gate; a decision key on a flow that waits at no gate
// says so and opens no other flow's gate.
func TestApproveRightAfterLaunch(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, recordingSource{Source: f.src, f: f}, 80, 24)
	// The selected flow (the newest, stalled) waits at no gate.
	press(m, "a")
	if len(m.dialogs) != 0 || !m.statusErr || !strings.Contains(m.status, "is not waiting at a gate") || !strings.Contains(m.status, "2 gates wait in the Gates pane (3)") {
		t.Fatalf("a on a flow without a gate: %d dialogs, status %q", len(m.dialogs), m.status)
	}
	press(m, "G") // the oldest flow: the deploy flow at its gate
	press(m, "a")
	typeText(m, "ok")
	press(m, "enter", "a")
	ds := f.decisions()
	if len(ds) != 1 || ds[0].Outcome != review.Approve || ds[0].Rationale != "ok" || ds[0].FlowID != f.gateID {
		t.Fatalf("decisions %+v (status %q)", ds, m.status)
	}
}

// TestMultiRuneKeys: several keys in one message are each handled; text
// (and a paste) goes into a text input whole; a paste never presses keys.
func TestMultiRuneKeys(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	runes := func(s string, paste bool) {
		drive(m, func() tea.Msg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s), Paste: paste} })
	}
	runes("jj", false)
	if c := m.focused().base().l.cursor; c != 2 {
		t.Fatalf("jj moved to row %d", c)
	}
	runes(":gates", false)
	press(m, "enter")
	if _, g := paneOf[*gatesPane](t, m); m.focus != g {
		t.Fatalf(":gates typed fast focused pane %d (status %q)", m.focus, m.status)
	}
	runes("/hunt", false)
	if f := m.focused().base().filter; f != "hunt" {
		t.Fatalf("filter %q", f)
	}
	press(m, "esc", "1")
	runes("axa", true) // a paste outside a text input: ignored
	if len(m.dialogs) != 0 {
		t.Fatal("a paste pressed keys")
	}
	// esc and a key in one read (alt+key): esc, then the key.
	press(m, "3", "a")
	drive(m, func() tea.Msg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("1"), Alt: true} })
	if _, fl := paneOf[*flowsPane](t, m); len(m.dialogs) != 0 || m.focus != fl {
		t.Fatalf("esc+1 in one read: %d dialogs, pane %d", len(m.dialogs), m.focus)
	}
	press(m, "3", "r")
	runes("needs more tests", true)
	d := m.dialogs[0].(*decisionDialog)
	if d.input.Value() != "needs more tests" {
		t.Fatalf("pasted rationale %q", d.input.Value())
	}
	// Typed fast, words that spell a key's name are text, not keys.
	for _, w := range []string{" right", "left", " home", "up"} {
		runes(w, false)
	}
	if want := "needs more tests rightleft homeup"; d.input.Value() != want {
		t.Fatalf("typed rationale %q, want %q", d.input.Value(), want)
	}
}

// TestStatusClearedOnPaneSwitch: a status message goes with the next pane
// switch or successful command.
func TestStatusClearedOnPaneSwitch(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	press(m, ":")
	typeText(m, "bogus")
	press(m, "enter")
	if !m.statusErr {
		t.Fatal("no error for an unknown command")
	}
	press(m, "2")
	if m.status != "" {
		t.Fatalf("status %q after a pane switch", m.status)
	}
	m.setStatus("something", nil)
	press(m, ":")
	typeText(m, "filter deploy")
	press(m, "enter")
	if m.status != "" {
		t.Fatalf("status %q after a command", m.status)
	}
}

// TestKeyMapValidation: enter never decides, and two actions never share a
// key where both work (global keys count in every pane); the error names
// the config line.
func TestKeyMapValidation(t *testing.T) {
	if km := DefaultKeyMap(); km.clash(nil, func(string) string { return "" }) != nil {
		err := km.clash(nil, func(string) string { return "" })
		t.Fatalf("the defaults clash: %v", err)
	}
	dir := t.TempDir()
	t.Setenv("STRATUM_HOME", dir)
	path := filepath.Join(dir, "config.yaml")
	for _, c := range []struct{ yaml, want string }{
		{"keys:\n  approve: enter\n", path + ":2: keys.approve: enter cannot decide a gate"},
		{"keys:\n  kill: [X, enter]\n", path + ":2: keys.kill: enter cannot decide"},
		{"keys:\n  help: h\n  approve: h\n", `keys.approve: "h" is also the key of help`},
		{"keys:\n  commit: q\n", `keys.commit: "q" is also the key of quit in the Checkpoints pane`},
		{"keys:\n  copy: j\n", `keys.copy: "j" is also the key of down`},
		{"keys:\n  revise: e\n", `keys.revise: "e" is also the key of edit in a decision dialog`},
	} {
		if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load("")
		if err != nil {
			t.Fatal(err)
		}
		km, err := KeyMapFrom(cfg.Keys)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path+":") {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
		if keyName(km.Approve) != "a" {
			t.Errorf("%q: the refused map was applied", c.yaml)
		}
	}
	// Keys that never work at the same time may be shared: a pane's own key
	// and a dialog's.
	km := DefaultKeyMap()
	if err := km.ApplyOverrides(map[string][]string{"commit": {"e"}}); err != nil {
		t.Fatalf("commit on e (edit is a dialog key): %v", err)
	}
}

// TestQuitAsksWhileARunWaits: q while a run started from the Specs pane
// waits at a gate asks first.
func TestQuitAsksWhileARunWaits(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	m.runs = 1
	r := m.reviews[0]
	drive(m, func() tea.Msg { return reviewMsg(r) }) // the run's gate, through the Sink
	press(m, "esc")                                  // its dialog
	press(m, "q")
	if _, ok := m.dialogs[len(m.dialogs)-1].(*quitDialog); m.quitting || !ok || !strings.Contains(m.View(), "run --resume") || !strings.Contains(m.View(), r.FlowID) {
		t.Fatalf("q quit at once (dialogs %d):\n%s", len(m.dialogs), m.View())
	}
	press(m, "n")
	if m.quitting {
		t.Fatal("n quit")
	}
	press(m, "q", "y")
	if !m.quitting {
		t.Fatal("y did not quit")
	}
	// No run waiting: q quits at once.
	m2 := newModel(t, f.src, 80, 24)
	press(m2, "q")
	if !m2.quitting {
		t.Fatal("q did not quit")
	}
}

// TestTraceRounds: attempt numbers restart in each round, and a step's
// duration is its attempt's, never counted across a gate's wait.
func TestTraceRounds(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 120, 30)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	m.detail = &state.FlowState{FlowID: "f", FlowName: "x", Status: "running"}
	m.detailEvents = []engine.Event{
		{Seq: 1, Time: at(0), Type: engine.EventStepDispatched, StepID: "build"},
		{Seq: 2, Time: at(2), Type: engine.EventStepDone, StepID: "build", Data: engine.StepDone{Attempts: 1}},
		{Seq: 3, Time: at(2), Type: engine.EventGateOpened, StepID: "review"},
		{Seq: 4, Time: at(3600), Type: engine.EventGateResolved, StepID: "review", Data: engine.GateResolved{Outcome: "revise", Rationale: "more"}},
		{Seq: 5, Time: at(3600), Type: engine.EventStepDispatched, StepID: "build"},
		{Seq: 6, Time: at(3605), Type: engine.EventStepFailed, StepID: "build", Data: engine.StepFailed{Attempt: 2, Status: "ensure_failed", Violations: []string{"v"}}},
		{Seq: 7, Time: at(3608), Type: engine.EventStepDone, StepID: "build", Data: engine.StepDone{Attempts: 3}},
	}
	trace, i := paneOf[*tracePane](t, m)
	m.focus = i
	var got []string
	for _, l := range trace.lines(&m.common) {
		got = append(got, l.text[9:])
	}
	want := []string{
		"→ build dispatched",
		"✓ build done (attempt 1) 2s",
		"⏸ gate review opened",
		"⚑ gate review revise: more → round 1",
		"→ build dispatched",
		"✗ build attempt 1 ensure failed 5s: v",
		"✓ build done (attempt 2) 3s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
