package tui

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

var update = flag.Bool("update", false, "rewrite the golden frames")

// base is the fixtures' clock origin.
var base = time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)

const gateSpec = `version: "0.2"
functions:
  approval:
    mode: gate
    intent: "Ship the build to production?"
    timeout: 3600
flows:
  deploy:
    input: {name: {type: string}}
    steps:
      - id: build
        intent: "Build it"
        inputs: {name: "$.input.name"}
        ensure: ["result.ok == True"]
        retries: 2
      - id: review
        function: approval
        depends_on: [build]
        on_approve: ~
        on_revise: build
        on_kill: ~
`

const iterSpec = `version: "0.2"
functions:
  review:
    mode: gate
flows:
  hunt:
    input: {}
    steps:
      - id: hunt
        intent: "hunt"
        max_iterations: 5
        accumulate: "result.findings"
        accumulate_key: "item.id"
        exit_criterion: "dry_streak >= 1"
      - id: g
        function: review
        depends_on: [hunt]
        on_approve: ~
        on_revise: hunt
        on_kill: ~
`

// fixture is an in-memory store with three flows: "deploy" waiting at its
// gate after a failed attempt, "hunt" waiting at a gate after an
// accumulating iteration loop (with a checkpoint), and a "deploy" a runner
// started and left (running, no lease: stalled).
type fixture struct {
	svc    *engine.Service
	store  *enginetest.Store
	src    Source
	gateID string // the deploy flow at its gate
	huntID string
	runID  string
	mu     sync.Mutex
	calls  []review.Decision
}

func (f *fixture) GateResolve(ctx context.Context, flowID string, d review.Decision) (engine.Outcome, error) {
	f.mu.Lock()
	f.calls = append(f.calls, d)
	f.mu.Unlock()
	return f.src.GateResolve(ctx, flowID, d)
}

func (f *fixture) decisions() []review.Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]review.Decision(nil), f.calls...)
}

// recordingSource records decisions on their way to the store.
type recordingSource struct {
	Source
	f *fixture
}

func (r recordingSource) GateResolve(ctx context.Context, flowID string, d review.Decision) (engine.Outcome, error) {
	return r.f.GateResolve(ctx, flowID, d)
}

// tickingService is a Service over a memory store whose clock (the
// store's too) moves on by step at every read from base, so a fixture's
// times are the same at every run; newID names its flows.
func tickingService(step time.Duration, newID func() string) (*engine.Service, *enginetest.Store) {
	var mu sync.Mutex
	tick := 0
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick++
		return base.Add(time.Duration(tick) * step)
	}
	st := enginetest.New()
	st.Now = clock
	return &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st, Now: clock, NewID: newID}, st
}

// fixedID names every flow id.
func fixedID(id string) func() string { return func() string { return id } }

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ids := 0
	svc, st := tickingService(time.Second, func() string {
		ids++
		return fmt.Sprintf("%08d-0000-4000-8000-000000000000", ids)
	})
	f := &fixture{svc: svc, store: st}
	f.src = ServiceSource(svc)
	ctx := context.Background()
	must := func(r engine.Outcome, err error) engine.Outcome {
		t.Helper()
		if err != nil {
			t.Fatalf("engine error: %v", err)
		}
		return r
	}
	r := must(svc.Plan(ctx, gateSpec, "deploy", map[string]any{"name": "world"}, engine.PlanOptions{SpecFile: "deploy.stratum.yaml"}))
	f.gateID = engine.FlowIDOf(r)
	must(svc.StepDone(ctx, engine.StepReport{FlowID: f.gateID, StepID: "build", Result: map[string]any{"ok": false}}))
	must(svc.StepDone(ctx, engine.StepReport{FlowID: f.gateID, StepID: "build", Result: map[string]any{"ok": true, "artifact": "app-1.2.3.tar.gz"}}))

	r = must(svc.Plan(ctx, iterSpec, "hunt", map[string]any{}, engine.PlanOptions{SpecFile: "hunt.stratum.yaml"}))
	f.huntID = engine.FlowIDOf(r)
	must(svc.Commit(ctx, f.huntID, "before-hunt", engine.ReportOptions{}))
	must(svc.IterationStart(ctx, f.huntID, "hunt", engine.ReportOptions{}))
	find := func(ids ...string) map[string]any {
		var items []any
		for _, id := range ids {
			items = append(items, map[string]any{"id": id})
		}
		return map[string]any{"findings": items}
	}
	must(svc.IterationReport(ctx, f.huntID, "hunt", find("a", "b"), engine.ReportOptions{}))
	must(svc.IterationReport(ctx, f.huntID, "hunt", find("b", "c"), engine.ReportOptions{}))
	must(svc.IterationReport(ctx, f.huntID, "hunt", find("a"), engine.ReportOptions{}))
	must(svc.StepDone(ctx, engine.StepReport{FlowID: f.huntID, StepID: "hunt", Result: map[string]any{"ok": true}}))

	r = must(svc.Plan(ctx, gateSpec, "deploy", map[string]any{"name": "mars"}, engine.PlanOptions{SpecFile: "deploy.stratum.yaml", Driver: state.DriverRunner}))
	f.runID = engine.FlowIDOf(r)
	return f
}

// newModel builds a monochrome model over src with a fixed clock, no ticks
// and no live channels, sized w×h, and loads its first snapshot.
func newModel(t testing.TB, src Source, w, h int) *Model {
	t.Helper()
	m := New(Options{
		Source: src, Keys: DefaultKeyMap(), Reviewer: "alice",
		Styles: DefaultStyles(NewRenderer(os.Stdout, true)),
		Now:    func() time.Time { return base.Add(10 * time.Minute) },
		Tick:   -1,
	})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	drive(m, m.Init())
	return m
}

// paneOf is m's pane of type T and its index (the test fails without one).
func paneOf[T pane](t testing.TB, m *Model) (T, int) {
	t.Helper()
	p, i := findPane[T](m.panes)
	if i < 0 {
		t.Fatalf("no pane of type %T", p)
	}
	return p, i
}

// drive runs cmd and every command it leads to synchronously, feeding the
// messages to m (a tiny stand-in for the Bubble Tea event loop).
func drive(m *Model, cmd tea.Cmd) {
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case tea.QuitMsg:
		default:
			_, next := m.Update(msg)
			queue = append(queue, next)
		}
	}
}

// press sends keys (a name like "enter", "esc", "tab", or runes) to m.
func press(m *Model, keys ...string) {
	for _, k := range keys {
		drive(m, func() tea.Msg { return keyMsg(k) })
	}
}

func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "f4":
		return tea.KeyMsg{Type: tea.KeyF4}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	case "ctrl+d":
		return tea.KeyMsg{Type: tea.KeyCtrlD}
	case "ctrl+u":
		return tea.KeyMsg{Type: tea.KeyCtrlU}
	case " ":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// typeText sends each rune of s as a key.
func typeText(m *Model, s string) {
	for _, r := range s {
		press(m, string(r))
	}
}

// golden compares got with testdata/<name>.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("frame %s differs from the golden file (run with -update after checking):\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}
