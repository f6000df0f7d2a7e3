package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

const reportSpec = `version: "0.2"
functions:
  approval:
    mode: gate
flows:
  report:
    input: {}
    steps:
      - id: write
        intent: "Write the report"
      - id: check
        intent: "Check it"
        depends_on: [write]
      - id: review
        function: approval
        depends_on: [check]
        on_approve: ~
        on_revise: write
        on_kill: ~
`

// reportLines is the report the write step produces: n lines, one with a
// control character.
func reportLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d of the report\n", i)
	}
	b.WriteString("the end \x1b[31mred\n")
	return b.String()
}

// longGate adds to f a flow waiting at its gate after a step (write) whose
// output is a 60-line text, then a step (check) that runs after it: the
// gate the reviewer must read in full.
func longGate(t *testing.T, f *fixture) string {
	t.Helper()
	ctx := context.Background()
	r, err := f.svc.Plan(ctx, reportSpec, "report", map[string]any{}, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := engine.FlowIDOf(r)
	if _, err := f.svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "write", Result: map[string]any{"text": reportLines(60)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "check", Result: map[string]any{"ok": true}}); err != nil {
		t.Fatal(err)
	}
	return id
}

// selectedLine is the frame's line with the cursor (›), or "".
func selectedLine(frame string) string {
	for _, l := range strings.Split(frame, "\n") {
		if strings.HasPrefix(l, "›") {
			return l
		}
	}
	return ""
}

// TestGateDetailScrolls: a gate whose context is longer than the screen
// scrolls with the page keys (and g/G once its outputs are expanded); its
// outputs are in execution order and a multi-line string reads as lines,
// with its control characters escaped.
func TestGateDetailScrolls(t *testing.T) {
	f := newFixture(t)
	id := longGate(t, f)
	m := newModel(t, f.src, 80, 24)
	press(m, "3", "G")
	// Folded, the long output is a summary: the gate fits the screen.
	if frame := m.View(); !strings.Contains(frame, "write: text: line 1 of the report (+60 lines)") || strings.Contains(frame, "lines 1–") {
		t.Fatalf("folded outputs:\n%s", frame)
	}
	press(m, "enter")
	gates, _ := paneOf[*gatesPane](t, m)
	if got := gates.selectedFlow(&m.common); got != id {
		t.Fatalf("selected %s, want %s", got, id)
	}
	frame := m.View()
	checkFrame(t, frame, 80, 24)
	if !strings.Contains(frame, "Outputs (enter folds)\n  write:") {
		t.Fatalf("outputs not in execution order (write first):\n%s", frame)
	}
	if strings.Contains(frame, `\n`) || !strings.Contains(frame, "  line 1 of the report") {
		t.Fatalf("the multi-line output is not shown as lines:\n%s", frame)
	}
	if !strings.Contains(frame, "lines 1–") {
		t.Fatalf("no scroll position:\n%s", frame)
	}
	press(m, "pgdown", "pgdown", "ctrl+d")
	frame = m.View()
	if strings.Contains(frame, "line 1 of the report") || !strings.Contains(frame, "line 40 of the report") {
		t.Fatalf("pgdown did not scroll the detail:\n%s", frame)
	}
	if got := gates.selectedFlow(&m.common); got != id {
		t.Fatalf("page keys moved the selection to %s", got)
	}
	press(m, "G")
	frame = m.View()
	if !strings.Contains(frame, `the end \x1b[31mred`) || strings.Contains(frame, "\x1b[31m") {
		t.Fatalf("G did not reach the end, or the control character is not escaped:\n%q", frame)
	}
	press(m, "pgup", "g")
	if frame = m.View(); !strings.Contains(frame, "Gate review of report") {
		t.Fatalf("g did not go back to the top:\n%s", frame)
	}
	golden(t, "gates_long_scrolled_80x24", scrolled(m))
}

// scrolled is m's frame scrolled down one page.
func scrolled(m *Model) string {
	press(m, "pgdown")
	return m.View()
}

// TestPager: the pager key pipes the selected gate's whole context
// (outputs expanded, in order, multi-line text as lines) to the pager;
// without a pager it says so.
func TestPager(t *testing.T) {
	f := newFixture(t)
	id := longGate(t, f)
	m := newModel(t, f.src, 80, 24)
	press(m, "3", "G")
	gates, _ := paneOf[*gatesPane](t, m)
	_, text := gates.pagerText(&m.common)
	for _, want := range []string{"flow " + id, "line 1 of the report", "line 60 of the report", `the end \x1b[31mred`} {
		if !strings.Contains(text, want) {
			t.Fatalf("pager text lacks %q:\n%s", want, text)
		}
	}
	if w, c := strings.Index(text, "  write:"), strings.Index(text, "  check:"); w < 0 || c < w || strings.Contains(text, "\x1b") {
		t.Fatalf("pager text out of order or with escapes:\n%s", text)
	}
	// The process the command runs reads the text on its stdin.
	out := filepath.Join(t.TempDir(), "paged")
	if err := pagerProcess([]string{"sh", "-c", "cat > " + out}, text).Run(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); string(got) != text {
		t.Fatalf("the pager read %q", got)
	}
	if m.opt.Pager = nil; true {
		press(m, "o")
		if !strings.Contains(m.status, "no pager") {
			t.Fatalf("status %q", m.status)
		}
	}
	m.opt.Pager = []string{"sh", "-c", "cat > " + out}
	var cmd tea.Cmd
	_, cmd = m.Update(keyMsg("o"))
	if cmd == nil {
		t.Fatal("o returned no command")
	}
	// The trace pane pages its selected entry.
	press(m, "2")
	trace, _ := paneOf[*tracePane](t, m)
	if _, tt := trace.pagerText(&m.common); !strings.Contains(tt, "flow created") || !strings.Contains(tt, `"flow_name": "report"`) {
		t.Fatalf("trace pager text %q", tt)
	}
}

// TestTraceSelectionStaysOnScreen: an expanded entry longer than the
// screen never pushes the selection off it, its lines wrap (not cut), and
// the page keys scroll them.
func TestTraceSelectionStaysOnScreen(t *testing.T) {
	f := newFixture(t)
	longGate(t, f)
	m := newModel(t, f.src, 80, 24)
	press(m, "2") // the newest flow: the report
	trace, _ := paneOf[*tracePane](t, m)
	lines := trace.lines(&m.common)
	at := -1
	for i, tl := range lines {
		if strings.Contains(tl.text, "write done") {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("no write done entry: %+v", lines)
	}
	for range at {
		press(m, "j")
	}
	press(m, "enter")
	frame := m.View()
	if !strings.Contains(selectedLine(frame), "write done") || !strings.Contains(frame, "line 1 of the report") {
		t.Fatalf("expanded entry:\n%s", frame)
	}
	press(m, "pgdown", "pgdown")
	if frame = m.View(); !strings.Contains(selectedLine(frame), "write done") || !strings.Contains(frame, "line 40 of the report") {
		t.Fatalf("pgdown in the expanded entry:\n%s", frame)
	}
	for _, k := range []string{"j", "G", "k", "k", "g", "j", "j"} {
		press(m, k)
		frame := m.View()
		checkFrame(t, frame, 80, 24)
		if selectedLine(frame) == "" {
			t.Fatalf("after %s the selection is off screen:\n%s", k, frame)
		}
	}
}

// TestStatusExpires: a message goes after its time; an error stays until
// the next success; an error of a store read goes with the next read that
// succeeds.
func TestStatusExpires(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	now := base.Add(10 * time.Minute)
	m.now = func() time.Time { return now }
	m.setStatus("committed checkpoint x", nil)
	if !strings.Contains(m.statusLine(), "committed") {
		t.Fatal("no message")
	}
	now = now.Add(DefaultStatusTTL)
	if s := m.statusLine(); s != "" {
		t.Fatalf("message %q after %s", s, DefaultStatusTTL)
	}
	m.setStatus("", fmt.Errorf("boom"))
	now = now.Add(time.Hour)
	if !strings.Contains(m.statusLine(), "boom") {
		t.Fatal("the error expired")
	}
	m.loadFailed(fmt.Errorf("etcd: unavailable"))
	drive(m, m.reloadCmd())
	if m.status != "" {
		t.Fatalf("a store error stayed after a successful read: %q", m.status)
	}
}

// failingSource is the store becoming unreachable: every read fails while
// down is set (with err, when set).
type failingSource struct {
	Source
	down *bool
	err  error
}

func (s failingSource) ListFlows(ctx context.Context, f engine.ListFilter) ([]state.FlowSummary, error) {
	if *s.down {
		if s.err != nil {
			return nil, s.err
		}
		return nil, fmt.Errorf("dial tcp 127.0.0.1:2379: connection refused")
	}
	return s.Source.ListFlows(ctx, f)
}

// TestHeaderStoreNewer: a newer stratum migrated the store under this
// console: the header says so and what to do (the store refuses every
// read from then on), not "store unreachable".
func TestHeaderStoreNewer(t *testing.T) {
	f := newFixture(t)
	down := false
	newer := fmt.Errorf("store /h/stratum.db: %w (a newer stratum migrated it to schema version 8 while this one (version 7) was running)", engine.ErrNewerStore)
	m := newModel(t, failingSource{f.src, &down, newer}, 200, 24)
	down = true
	drive(m, m.reloadCmd())
	h := m.headerLine()
	if !strings.Contains(h, "written by a newer stratum: quit and start the newer stratum tui") || strings.Contains(h, "unreachable") {
		t.Fatalf("header: %q", h)
	}
	// Found by another read than the snapshot's (a page of the flows, a
	// detail): the header says it too.
	m2 := newModel(t, f.src, 200, 24)
	m2.loadFailed(newer)
	if h := m2.headerLine(); !strings.Contains(h, "written by a newer stratum") {
		t.Fatalf("header after a failed page read: %q", h)
	}
}

// TestHeaderStoreUnreachable: while the store cannot be read the header
// says so instead of the last counts; they come back with it.
func TestHeaderStoreUnreachable(t *testing.T) {
	f := newFixture(t)
	down := false
	m := newModel(t, failingSource{f.src, &down, nil}, 80, 24)
	if h := m.headerLine(); !strings.Contains(h, "3 flows") {
		t.Fatalf("header %q", h)
	}
	down = true
	drive(m, m.reloadCmd())
	h := m.headerLine()
	if !strings.Contains(h, "store unreachable") || strings.Contains(h, "3 flows") || !strings.Contains(h, "last read") {
		t.Fatalf("header while the store is down: %q", h)
	}
	down = false
	drive(m, m.reloadCmd())
	if h := m.headerLine(); !strings.Contains(h, "3 flows") || strings.Contains(h, "unreachable") {
		t.Fatalf("header after the store came back: %q", h)
	}
}

// TestTimedOutGateAnnounced: a gate whose deadline decides it while no
// dialog is open is announced, not silently dropped.
func TestTimedOutGateAnnounced(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	later := func() time.Time { return base.Add(2 * time.Hour) }
	f.svc.Now, f.store.Now = later, later
	if _, err := f.svc.CheckTimeouts(context.Background(), f.gateID); err != nil {
		t.Fatal(err)
	}
	drive(m, m.handleEngineEvents(nil))
	if !strings.Contains(m.status, "timed out") || !strings.Contains(m.status, "review of deploy") || !strings.Contains(m.status, "kill") {
		t.Fatalf("status %q", m.status)
	}
	frame := m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "gate_timed_out_80x24", frame)
}

// TestRationaleKept: a gate decided elsewhere while a rationale is typed
// keeps the dialog, read-only, with the rationale and who decided; nothing
// is recorded from here.
func TestRationaleKept(t *testing.T) {
	f, m := gateModel(t)
	gates, _ := paneOf[*gatesPane](t, m)
	r, _ := gates.selected(&m.common)
	press(m, "r")
	typeText(m, "the changelog is missing")
	round := r.Round
	if _, err := f.svc.GateResolve(context.Background(), r.FlowID, review.Decision{StepID: r.StepID, Round: &round,
		Outcome: review.Approve, Rationale: "looks fine", Reviewer: "carol", ResolvedBy: review.Human, Channel: review.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	drive(m, m.handleEngineEvents(nil))
	if len(m.dialogs) != 1 {
		t.Fatalf("%d dialogs: the rationale was lost", len(m.dialogs))
	}
	frame := m.View()
	checkFrame(t, frame, 80, 24)
	for _, want := range []string{"the changelog is missing", "decided elsewhere: approve by carol", "looks fine", "esc close"} {
		if !strings.Contains(frame, want) {
			t.Fatalf("the kept dialog lacks %q:\n%s", want, frame)
		}
	}
	golden(t, "rationale_kept_80x24", frame)
	press(m, "r", "enter", "r")
	if len(f.decisions()) != 0 {
		t.Fatal("the console decided a gate decided elsewhere")
	}
	press(m, "esc")
	if len(m.dialogs) != 0 {
		t.Fatal("esc did not close the kept dialog")
	}
}

// TestDialogWordingAndKeys: a revise or kill dialog says what it does, not
// the gate's "Approve …?"; the footer shows the dialog's keys; the wrong
// decision key at the confirmation says so.
func TestDialogWordingAndKeys(t *testing.T) {
	f := newFixture(t)
	id := longGate(t, f) // its gate asks the engine's default question
	m := newModel(t, f.src, 80, 24)
	press(m, "3", "G", "x")
	frame := m.View()
	if !strings.Contains(frame, "KILL · kill flow report at gate review?") || !strings.Contains(frame, "the gate asks: Approve step") {
		t.Fatalf("kill dialog:\n%s", frame)
	}
	lines := strings.Split(frame, "\n")
	if foot := lines[len(lines)-1]; !strings.Contains(foot, "esc cancel") || strings.Contains(foot, "tab pane") || strings.Contains(foot, "q quit") {
		t.Fatalf("footer in a dialog: %q", foot)
	}
	typeText(m, "broken")
	press(m, "enter", "a")
	d := m.dialogs[0].(*decisionDialog)
	if !strings.Contains(d.err, "this dialog records KILL (press x)") {
		t.Fatalf("wrong key at the confirmation: err %q", d.err)
	}
	if st, _ := f.svc.Query().Get(context.Background(), id); st.Status != state.StatusAwaitingGate {
		t.Fatalf("status %s", st.Status)
	}
	press(m, "esc", "r")
	if frame := m.View(); !strings.Contains(frame, "REVISE · send report back for revision at gate review?") {
		t.Fatalf("revise dialog:\n%s", frame)
	}
}

// TestQuitDialogCommandWhole: the resume command of the quit dialog is on
// a line of its own, never wrapped inside the id.
func TestQuitDialogCommandWhole(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	m.runs = 1
	r := m.reviews[0]
	drive(m, func() tea.Msg { return reviewMsg(r) })
	press(m, "esc", "q")
	if !strings.Contains(m.View(), "stratum run --resume "+r.FlowID) {
		t.Fatalf("the command is not whole:\n%s", m.View())
	}
}

// TestChildFlowResumesParent: a stalled child flow points to its parent's
// resume (run --resume refuses a child).
func TestChildFlowResumesParent(t *testing.T) {
	flows := []state.FlowSummary{
		{FlowID: "root", Driver: state.DriverRunner, Status: state.StatusRunning},
		{FlowID: "mid", ParentFlowID: "root", Driver: state.DriverRunner, Status: state.StatusRunning},
		{FlowID: "leaf", ParentFlowID: "mid", Driver: state.DriverRunner, Status: state.StatusAwaitingGate},
	}
	c := &common{flows: flowWindow{n: len(flows), rows: flows}}
	cmd, child := resumeCommand("", c.resumeTarget, &flows[2])
	if cmd != "stratum run --resume root" || !child {
		t.Fatalf("child: %q %v", cmd, child)
	}
	if cmd, child := resumeCommand("", c.resumeTarget, &flows[0]); cmd != "stratum run --resume root" || child {
		t.Fatalf("root: %q %v", cmd, child)
	}
	_, next := stalledHint("", c.resumeTarget, &flows[2])
	if !strings.Contains(next, "continue its parent with: stratum run --resume root") {
		t.Fatalf("hint %q", next)
	}
	// A cycle in a corrupt store ends.
	loop := []state.FlowSummary{{FlowID: "a", ParentFlowID: "b"}, {FlowID: "b", ParentFlowID: "a"}}
	_ = (&common{flows: flowWindow{n: 2, rows: loop}}).resumeTarget("a")
}

// TestFinishedCheckpointComplete: a checkpoint taken at the end of a flow
// says complete, never a step past the last.
func TestFinishedCheckpointComplete(t *testing.T) {
	done := "complete"
	at := func(idx int, terminal *string) state.Checkpoint {
		var cp state.Checkpoint
		cp.CurrentIdx, cp.TerminalStatus = idx, terminal
		return cp
	}
	for _, tc := range []struct {
		cp    state.Checkpoint
		total int
		want  string
	}{
		{at(4, nil), 4, "complete"},
		{at(1, nil), 4, "2 of 4"},
		{at(2, &done), 4, "complete"},
		{at(0, nil), 0, "1"},
	} {
		if got := atStep(&tc.cp, tc.total); got != tc.want {
			t.Errorf("atStep(%d of %d) = %q, want %q", tc.cp.CurrentIdx, tc.total, got, tc.want)
		}
	}
}

// TestMultiLineText: a string with line breaks reads as its lines.
func TestMultiLineText(t *testing.T) {
	got := jsonText(map[string]any{"a": "one\ntwo\n", "b": []any{"x", 1.5, nil}, "c": map[string]any{}})
	want := "{\n  \"a\": |\n    one\n    two\n  \"b\": [\n    \"x\"\n    1.5\n    null\n  ]\n  \"c\": {}\n}"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// BenchmarkLongGateFrame is one 80×24 frame of a gate whose output is a
// 10,000-line text, expanded and scrolled to the middle: what a keypress
// costs while reading it (the context is wrapped on every frame).
func BenchmarkLongGateFrame(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	r, err := f.svc.Plan(ctx, reportSpec, "report", map[string]any{}, engine.PlanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	id := engine.FlowIDOf(r)
	if _, err := f.svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "write", Result: map[string]any{"text": reportLines(10_000)}}); err != nil {
		b.Fatal(err)
	}
	if _, err := f.svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "check", Result: map[string]any{"ok": true}}); err != nil {
		b.Fatal(err)
	}
	m := newModel(b, f.src, 80, 24)
	press(m, "3", "G", "enter")
	m.View()
	for range 300 {
		press(m, "pgdown")
	}
	b.ResetTimer()
	for b.Loop() {
		press(m, "pgdown", "pgup")
		_ = m.View()
	}
}
