package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/key"

	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

func gateModel(t *testing.T) (*fixture, *Model) {
	t.Helper()
	f := newFixture(t)
	m := newModel(t, recordingSource{Source: f.src, f: f}, 80, 24)
	press(m, "3")
	if _, gates := paneOf[*gatesPane](t, m); m.focus != gates || len(m.reviews) != 2 {
		t.Fatalf("want the Gates pane with 2 gates, got pane %d, %d gates", m.focus, len(m.reviews))
	}
	return f, m
}

func (f *fixture) gateStatus(t *testing.T, flowID string) string {
	t.Helper()
	st, err := f.svc.Query().Get(context.Background(), flowID)
	if err != nil {
		t.Fatal(err)
	}
	return string(st.Status)
}

// TestDecisionNeedsRationaleAndSecondPress: enter alone never decides; the
// outcome key at the confirmation step does, recording reviewer and channel.
func TestDecisionNeedsRationaleAndSecondPress(t *testing.T) {
	f, m := gateModel(t)
	press(m, "enter") // enter on a gate: nothing
	if len(m.dialogs) != 0 || len(f.decisions()) != 0 {
		t.Fatalf("enter on a gate opened %d dialogs, made %d decisions", len(m.dialogs), len(f.decisions()))
	}
	press(m, "a")
	if len(m.dialogs) != 1 {
		t.Fatal("a did not open the decision dialog")
	}
	typeText(m, "ship it")
	press(m, "enter", "enter", "enter") // enter only moves to (and stays at) the confirmation
	if len(f.decisions()) != 0 {
		t.Fatalf("enter decided: %+v", f.decisions())
	}
	if d := m.dialogs[0].(*decisionDialog); d.stage != stageConfirm {
		t.Fatalf("stage %d, want confirm", d.stage)
	}
	press(m, "r") // another outcome's key does not decide either
	if len(f.decisions()) != 0 {
		t.Fatal("r at the approve confirmation decided")
	}
	press(m, "a")
	ds := f.decisions()
	if len(ds) != 1 {
		t.Fatalf("want one decision, got %+v", ds)
	}
	d := ds[0]
	if d.Outcome != review.Approve || d.Rationale != "ship it" || d.Reviewer != "alice" || d.Channel != review.ChannelTUI ||
		d.ResolvedBy != review.Human || d.Round == nil || *d.Round != 0 || d.StepID != "review" {
		t.Fatalf("decision %+v", d)
	}
	if s := f.gateStatus(t, f.gateID); s != "complete" {
		t.Fatalf("flow status %s after approve, want complete", s)
	}
	if len(m.reviews) != 1 || !strings.Contains(m.status, "approved review") {
		t.Fatalf("after the decision: %d gates, status %q", len(m.reviews), m.status)
	}
}

// TestReviseAndKillRequireRationale: enter with an empty rationale stays in
// the dialog with an error; esc cancels without deciding.
func TestReviseAndKillRequireRationale(t *testing.T) {
	for _, k := range []string{"r", "x"} {
		f, m := gateModel(t)
		press(m, k, "enter")
		d := m.dialogs[0].(*decisionDialog)
		if d.stage != stageEdit || !strings.Contains(d.err, "rationale is required") {
			t.Fatalf("%s: stage %d err %q", k, d.stage, d.err)
		}
		press(m, "esc")
		if len(m.dialogs) != 0 || len(f.decisions()) != 0 {
			t.Fatalf("%s: esc left %d dialogs, %d decisions", k, len(m.dialogs), len(f.decisions()))
		}
		press(m, k)
		typeText(m, "needs tests")
		press(m, "enter", k)
		if ds := f.decisions(); len(ds) != 1 || ds[0].Rationale != "needs tests" {
			t.Fatalf("%s: decisions %+v", k, ds)
		}
	}
}

// TestGracePeriod: a dialog opened asynchronously while the user types
// ignores keys until the typing pauses.
func TestGracePeriod(t *testing.T) {
	f := newFixture(t)
	now := base
	m := newModel(t, recordingSource{Source: f.src, f: f}, 80, 24)
	m.now = func() time.Time { return now }
	press(m, "/") // the user is typing a filter…
	typeText(m, "dep")
	rs := m.reviews
	// …when a gate arrives through the sink.
	now = now.Add(50 * time.Millisecond)
	m.Update(reviewMsg(rs[0]))
	if len(m.dialogs) != 1 {
		t.Fatal("the sink's gate did not open a dialog")
	}
	d := m.dialogs[0].(*decisionDialog)
	// Keys typed in the same burst are ignored: "a" would have chosen approve.
	for _, k := range []string{"a", "a", "x"} {
		now = now.Add(100 * time.Millisecond)
		press(m, k)
	}
	if d.stage != stageChoose || d.outcome != "" {
		t.Fatalf("keys during the grace period were taken: stage %d outcome %q", d.stage, d.outcome)
	}
	// After a pause the keys are armed.
	now = now.Add(DefaultGraceQuiet + time.Millisecond)
	press(m, "r")
	if d.stage != stageEdit || d.outcome != review.Revise {
		t.Fatalf("key after the pause ignored: stage %d outcome %q", d.stage, d.outcome)
	}
	if len(f.decisions()) != 0 {
		t.Fatal("a decision was made")
	}
}

// TestGraceMaxDelay: continuous typing cannot hold the dialog disarmed for
// longer than GraceMax.
func TestGraceMaxDelay(t *testing.T) {
	g := &grace{openedAt: base}
	last := base
	for now := base.Add(100 * time.Millisecond); now.Before(base.Add(DefaultGraceMax)); now = now.Add(100 * time.Millisecond) {
		if !g.blocks(now, last, DefaultGraceQuiet, DefaultGraceMax) {
			t.Fatalf("armed at %v during continuous typing", now.Sub(base))
		}
		last = now
	}
	if g.blocks(base.Add(DefaultGraceMax), last, DefaultGraceQuiet, DefaultGraceMax) {
		t.Fatal("still disarmed after GraceMax")
	}
}

// TestNoGraceWhenIdle: a dialog opened while the user is idle takes the first key.
func TestNoGraceWhenIdle(t *testing.T) {
	f := newFixture(t)
	now := base
	m := newModel(t, f.src, 80, 24)
	m.now = func() time.Time { return now }
	now = now.Add(time.Minute)
	m.Update(reviewMsg(m.reviews[0]))
	now = now.Add(10 * time.Millisecond)
	press(m, "a")
	if d := m.dialogs[0].(*decisionDialog); d.stage != stageEdit || d.outcome != review.Approve {
		t.Fatalf("first key ignored although the user was idle: %+v", d.stage)
	}
}

func TestHelpToggle(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	press(m, "?")
	if !strings.Contains(m.View(), "enter never decides") {
		t.Fatal("? did not show the help")
	}
	press(m, "?")
	if len(m.dialogs) != 0 {
		t.Fatal("? did not close the help")
	}
	press(m, "?", "esc")
	if len(m.dialogs) != 0 {
		t.Fatal("esc did not close the help")
	}
}

func TestFilter(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	press(m, "/")
	typeText(m, "hunt")
	flows, _ := paneOf[*flowsPane](t, m)
	if n := flows.Len(&m.common); n != 1 {
		t.Fatalf("filter hunt: %d flows", n)
	}
	press(m, "enter")
	if m.inputMode != inputNone || flows.filter != "hunt" || !strings.Contains(m.View(), "/hunt") {
		t.Fatal("enter did not keep the filter")
	}
	// q typed in the filter is text, not quit.
	press(m, "/", "q")
	if m.quitting {
		t.Fatal("q in the filter quit")
	}
	press(m, "esc")
	if flows.Len(&m.common) != 3 {
		t.Fatal("esc did not clear the filter")
	}
}

func TestCommandBar(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	press(m, ":")
	typeText(m, "gates")
	press(m, "enter")
	if _, gates := paneOf[*gatesPane](t, m); m.focus != gates {
		t.Fatalf(":gates focused pane %d", m.focus)
	}
	press(m, ":")
	typeText(m, "bogus")
	press(m, "enter")
	if !m.statusErr || !strings.Contains(m.status, "unknown command") {
		t.Fatalf("status %q", m.status)
	}
	press(m, "q")
	if !m.quitting {
		t.Fatal("q did not quit")
	}
}

func TestCheckpointCommitAndRevertConfirm(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	press(m, "down", "4") // the hunt flow
	if m.focusFlowID() != f.huntID {
		t.Fatalf("focus flow %s, want hunt %s", m.focusFlowID(), f.huntID)
	}
	press(m, "n", "enter")
	if d, ok := m.dialogs[0].(*labelDialog); !ok || d.err == "" {
		t.Fatal("an empty label was accepted")
	}
	typeText(m, "gate-reached")
	press(m, "enter")
	st, _ := f.svc.Query().Get(context.Background(), f.huntID)
	if st.Checkpoints["gate-reached"] == nil {
		t.Fatalf("commit not recorded: %v (%s)", st.Checkpoints, m.status)
	}
	// Revert asks first; n cancels.
	press(m, "v", "n")
	st, _ = f.svc.Query().Get(context.Background(), f.huntID)
	if st.Status != "awaiting_gate" {
		t.Fatalf("cancelled revert changed the flow: %s", st.Status)
	}
	press(m, "v", "y") // the first checkpoint: before-hunt
	st, _ = f.svc.Query().Get(context.Background(), f.huntID)
	if st.Status != "running" || len(st.Iterations["hunt"]) != 0 {
		t.Fatalf("revert to before-hunt: status %s, iterations %v (%s)", st.Status, st.Iterations, m.status)
	}
}

func TestKeyMapOverrides(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("STRATUM_HOME", dir)
	path := filepath.Join(dir, "config.yaml")
	load := func() (KeyMap, error) {
		cfg, err := config.Load("")
		if err != nil {
			return KeyMap{}, err
		}
		return KeyMapFrom(cfg.Keys)
	}
	if err := os.WriteFile(path, []byte("keys:\n  approve: A\n  quit: [Q, ctrl+q]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	km, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if !key.Matches(keyMsg("A"), km.Approve) || key.Matches(keyMsg("a"), km.Approve) || !key.Matches(keyMsg("Q"), km.Quit) {
		t.Fatalf("overrides not applied: %v %v", km.Approve.Keys(), km.Quit.Keys())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := load(); err != nil {
		t.Fatalf("missing config: %v", err)
	}
	for _, bad := range []string{"keys:\n  approov: A\n", "keys:\n  approve: []\n", "keys: [\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := load(); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: error %v, want one naming the file", bad, err)
		}
	}

	// A remapped key drives the model.
	f, _ := gateModel(t)
	km2 := DefaultKeyMap()
	if err := km2.ApplyOverrides(map[string][]string{"approve": {"A"}}); err != nil {
		t.Fatal(err)
	}
	m := New(Options{Source: f.src, Keys: km2, Reviewer: "bob", Styles: DefaultStyles(NewRenderer(os.Stdout, true)), Tick: -1})
	drive(m, m.Init())
	press(m, "3", "a")
	if len(m.dialogs) != 0 {
		t.Fatal("a still approves after remapping to A")
	}
	press(m, "A", "enter", "A")
	if s := f.gateStatus(t, m.reviews[0].FlowID); s == "" {
		t.Fatal("no status")
	}
	if !strings.Contains(m.status, "approved") {
		t.Fatalf("remapped approve: %q", m.status)
	}
}

// TestDialogClosesWhenDecidedElsewhere: a gate decided by someone else
// while its dialog is open never gets a second decision: a dialog with
// nothing typed closes; one with a rationale typed stays, read-only,
// keeping the text and saying who decided (TestRationaleKept).
func TestDialogClosesWhenDecidedElsewhere(t *testing.T) {
	f, m := gateModel(t)
	gates, _ := paneOf[*gatesPane](t, m)
	r, _ := gates.selected(&m.common)
	press(m, "a")
	round := r.Round
	resp, err := f.svc.GateResolve(context.Background(), r.FlowID, review.Decision{StepID: r.StepID, Round: &round,
		Outcome: review.Kill, Rationale: "theirs", Reviewer: "carol", ResolvedBy: review.Human, Channel: review.ChannelCLI})
	if err != nil {
		t.Fatalf("decide elsewhere: %v %v", resp, err)
	}
	drive(m, m.handleEngineEvents(nil)) // what Source.Watch would deliver
	if len(m.dialogs) != 0 || !strings.Contains(m.status, "decided elsewhere") {
		t.Fatalf("dialogs %d, status %q", len(m.dialogs), m.status)
	}
	for _, g := range m.reviews {
		if g.ReviewID == r.ReviewID {
			t.Fatal("the decided gate is still listed")
		}
	}
	if len(f.decisions()) != 0 {
		t.Fatal("the console decided too")
	}
}

// TestCheckpointRefusedOnOwnedFlow: a flow a runner owns refuses the TUI's
// commit and revert (flow_owned), and the status line says so.
func TestCheckpointRefusedOnOwnedFlow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.svc.Leases().Claim(ctx, f.huntID, state.Lease{ID: "runner-9", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, f.src, 80, 24)
	press(m, "down", "4") // the hunt flow
	press(m, "v", "y")    // revert to before-hunt
	st, _ := f.svc.Query().Get(ctx, f.huntID)
	if st.Status != "awaiting_gate" || !strings.Contains(m.status, "flow_owned") {
		t.Fatalf("revert of an owned flow: status %s, status line %q", st.Status, m.status)
	}
	press(m, "n")
	typeText(m, "mine")
	press(m, "enter")
	st, _ = f.svc.Query().Get(ctx, f.huntID)
	if st.Checkpoints["mine"] != nil || !strings.Contains(m.status, "flow_owned") {
		t.Fatalf("commit on an owned flow: checkpoints %v, status line %q", checkpointLabels(st), m.status)
	}
}

func checkpointLabels(st *state.FlowState) []string {
	var out []string
	for l := range st.Checkpoints {
		out = append(out, l)
	}
	return out
}
