package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// libraryFixture is a store holding a Go program's flow (engine/stratum):
// a call, then two reviews open at once — one with options, one that takes
// any value of its type.
func libraryFixture(t *testing.T) (*engine.Service, string) {
	t.Helper()
	svc, _ := tickingService(time.Second, fixedID("0000000a-0000-4000-8000-000000000000"))
	ctx := context.Background()
	lease := state.Lease{ID: "lib-1", ExpiresAt: base.Add(time.Hour)}
	id, err := engine.NewLibrary(svc).StartFlow(ctx, engine.LibraryFlowOptions{Name: "release", Inputs: map[string]any{"version": "1.4"}, Owner: &lease})
	if err != nil {
		t.Fatal(err)
	}
	cost := 0.0021
	if err := engine.NewLibrary(svc).RecordCall(ctx, id, engine.LibraryCall{Function: "plan", Attempts: 2, DurationMS: 1200, Tokens: 840, CostUSD: &cost,
		Trace: &state.TraceRecord{Function: "plan", Model: "openai/gpt-4o-mini", Attempts: 2}}); err != nil {
		t.Fatal(err)
	}
	opts := []json.RawMessage{json.RawMessage(`{"name":"canary","risk":"low"}`), json.RawMessage(`{"name":"big-bang","risk":"high"}`)}
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Which rollout plan?", Trigger: "debate_disagreement",
		Artifacts: map[string]any{"agents": 3}, Options: opts, Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"ship": map[string]any{"type": "boolean"}},
		"required": []any{"ship"}, "additionalProperties": false}
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Ship it?", Schema: schema, Approver: "human"}); err != nil {
		t.Fatal(err)
	}
	return svc, id
}

// The Gates pane lists each review of a Go program (one row each) with its
// question, trigger, artifacts and numbered options; the reviewer picks an
// option by its number, adds a rationale and confirms: three keys plus the
// text. Golden frames at 80×24, colour off.
func TestLibraryReviewInGatesPane(t *testing.T) {
	svc, id := libraryFixture(t)
	m := newModel(t, ServiceSource(svc), 80, 24)
	press(m, "3")
	frame := m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "library_gates_80x24", frame)
	if !strings.Contains(frame, "Gates(2)") {
		t.Errorf("two open reviews, one row each: %s", frame)
	}

	// The Trace pane (the selected gate's flow): the Call with its
	// attempts, duration, tokens and cost, then the reviews opening.
	press(m, "2")
	trace := m.View()
	for _, want := range []string{"· plan#1 2 attempts · 1.2s 840 tokens $0.0021 [openai/gpt-4o-mini]", "⏸ gate review-1 opened: Which rollout plan?", "⏸ gate review-2 opened: Ship it?"} {
		if !strings.Contains(trace, want) {
			t.Errorf("the Trace pane lacks %q:\n%s", want, trace)
		}
	}
	press(m, "3")

	press(m, "a")
	press(m, "5") // no option 5
	if !strings.Contains(m.View(), "option 5 is out of range") {
		t.Errorf("an option out of range was not refused:\n%s", m.View())
	}
	press(m, "2")
	typeText(m, "risk is fine")
	press(m, "enter")
	frame = m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "library_confirm_80x24", frame)
	press(m, "a")
	r, err := engine.NewLibrary(svc).Review(context.Background(), id, "review-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != state.ReviewApproved || r.Decision.Option != 2 || r.Decision.Channel != "tui" || r.Decision.Reviewer != "alice" || r.Decision.Rationale != "risk is fine" {
		t.Fatalf("review-1 after the TUI's decision: %s %+v", r.Status, r.Decision)
	}

	// The other review takes a typed value, checked against its type.
	m = newModel(t, ServiceSource(svc), 80, 24)
	press(m, "3", "a")
	typeText(m, `{"ship": "yes"}`)
	press(m, "enter")
	if v := m.View(); !strings.Contains(v, "does not fit the type") {
		t.Errorf("a value of the wrong type was not refused:\n%s", v)
	}
	for range len(`{"ship": "yes"}`) {
		press(m, "backspace")
	}
	typeText(m, `{"ship": true}`)
	press(m, "enter")
	press(m, "enter", "a")
	r, _ = engine.NewLibrary(svc).Review(context.Background(), id, "review-2")
	var v struct{ Ship bool }
	if r.Status != state.ReviewApproved || json.Unmarshal(r.Decision.Value, &v) != nil || !v.Ship {
		t.Fatalf("review-2: %s %+v", r.Status, r.Decision)
	}
	st, _ := svc.Query().Get(context.Background(), id)
	if st.Status != state.StatusRunning || st.Gate != nil {
		t.Errorf("flow after both reviews: %s gate %v", st.Status, st.Gate)
	}
}

// rolloutFixture is a Go program's flow with one review open: n options
// (each with a note too long for one line at 80 columns) and long
// artifacts (a paragraph, a 40-line log, an object, a one-liner).
func rolloutFixture(t *testing.T, n int) (*engine.Service, string) {
	t.Helper()
	st := enginetest.New()
	clock := func() time.Time { return base.Add(time.Second) }
	st.Now = clock
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st, Now: clock, NewID: func() string { return "0000000b-0000-4000-8000-000000000000" }}
	ctx := context.Background()
	lease := state.Lease{ID: "lib-2", ExpiresAt: base.Add(time.Hour)}
	id, err := engine.NewLibrary(svc).StartFlow(ctx, engine.LibraryFlowOptions{Name: "release", Owner: &lease})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"canary", "big-bang", "blue-green", "ring", "dark-launch", "shadow", "feature-flag"}
	var opts []json.RawMessage
	for i := range n {
		opts = append(opts, json.RawMessage(fmt.Sprintf(`{"name":%q,"risk":%q,"note":"roll out to %d%% of the fleet first, then watch the error budget for an hour"}`,
			names[i%len(names)], []string{"low", "high", "medium"}[i%3], 10*(i+1))))
	}
	if _, err := engine.NewLibrary(svc).OpenReview(ctx, id, engine.ReviewRequest{Question: "Which rollout plan for 1.4.0?", Trigger: "debate_disagreement",
		Artifacts: map[string]any{
			"summary":   "The three agents disagreed on the rollout: two prefer a gradual rollout because the migration touches the billing tables, one argues the change is small enough to ship at once.",
			"diff_stat": "14 files changed, 512 insertions(+), 87 deletions(-)",
			"tests":     map[string]any{"passed": 1204, "failed": 0, "skipped": 3},
			"log":       strings.Repeat("step ok\n", 40),
		}, Options: opts, Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return svc, id
}

// A review at 80×24: the question, the trigger, every option numbered and
// the first line of each artifact show without scrolling (3 and 7 options;
// at 7, each option on one line); nothing is JSON; the footer offers only
// what acts on a review (reject, no revise); enter unfolds it all.
func TestReviewAt80x24(t *testing.T) {
	for _, n := range []int{3, 7} {
		t.Run(fmt.Sprintf("%d options", n), func(t *testing.T) {
			svc, _ := rolloutFixture(t, n)
			m := newModel(t, ServiceSource(svc), 80, 24)
			press(m, "3")
			frame := m.View()
			checkFrame(t, frame, 80, 24)
			golden(t, fmt.Sprintf("review_%d_options_80x24", n), frame)
			want := []string{"Which rollout plan for 1.4.0?", "trigger debate_disagreement", "Options (a, then 1–" + fmt.Sprint(n) + ")",
				"  diff_stat: 14 files changed", "  log: step ok (+39 lines)", "  summary: The three agents disagreed", "  tests: failed: 0 · passed: 1204 · skipped: 3"}
			for i := range n {
				want = append(want, fmt.Sprintf("  %d. name: ", i+1))
			}
			for _, w := range want {
				if !strings.Contains(frame, w) {
					t.Errorf("the review lacks %q without scrolling:\n%s", w, frame)
				}
			}
			for _, bad := range []string{`{"`, "lines 1–", "r revise"} {
				if strings.Contains(frame, bad) {
					t.Errorf("the review shows %q:\n%s", bad, frame)
				}
			}
			footer := frame[strings.LastIndex(frame, "\n")+1:]
			for _, w := range []string{"a approve", "x reject", "enter expand", "o pager"} {
				if !strings.Contains(footer, w) {
					t.Errorf("footer %q lacks %q", footer, w)
				}
			}
			press(m, "enter")
			frame = m.View()
			if !strings.Contains(frame, "watch the error budget for an hour") || !strings.Contains(frame, "enter fold") {
				t.Errorf("enter did not unfold the review:\n%s", frame)
			}
			press(m, "G")
			if frame := m.View(); !strings.Contains(frame, "rollout because the migration touches the billing tables") {
				t.Errorf("the unfolded artifacts:\n%s", frame)
			}
		})
	}
}

// The approve dialog of a review lists every option, whole; when they do
// not fit at 80×24 (7 options) the dialog's context scrolls inside it,
// and the options are picked by number as before.
func TestReviewApproveDialogScrolls(t *testing.T) {
	svc, id := rolloutFixture(t, 7)
	m := newModel(t, ServiceSource(svc), 80, 24)
	press(m, "3", "a")
	frame := m.View()
	checkFrame(t, frame, 80, 24)
	golden(t, "review_approve_80x24", frame)
	if !strings.Contains(frame, "lines 1–") || !strings.Contains(frame, "scroll") {
		t.Fatalf("7 whole options do not fit at 80×24: the dialog should scroll:\n%s", frame)
	}
	seen := map[int]bool{}
	for range 6 {
		for i := range 7 {
			if strings.Contains(m.View(), fmt.Sprintf("%d. name: ", i+1)) {
				seen[i+1] = true
			}
		}
		press(m, "pgdown")
	}
	if len(seen) != 7 {
		t.Errorf("options reachable by scrolling the dialog: %v, want 1–7", seen)
	}
	frame = m.View()
	golden(t, "review_approve_scrolled_80x24", frame)
	if !strings.Contains(frame, "then watch the error budget for an hour") {
		t.Errorf("an option is cut in the dialog:\n%s", frame)
	}
	press(m, "7")
	typeText(m, "safest")
	press(m, "enter", "a")
	r, err := engine.NewLibrary(svc).Review(context.Background(), id, "review-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != state.ReviewApproved || r.Decision.Option != 7 {
		t.Fatalf("review after picking option 7 in a scrolled dialog: %s %+v", r.Status, r.Decision)
	}
}

// Values read as key: value words, in their written order, wrapping on
// spaces with a hanging indent; a multi-line string folds to its first
// line and a count.
func TestReadableValues(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"object in order", json.RawMessage(`{"name":"canary","risk":"low","n":3}`), "name: canary · risk: low · n: 3"},
		{"nested", json.RawMessage(`{"a":{"b":1,"c":[1,2]},"d":null,"e":true}`), "a: (b: 1, c: [1, 2]) · d: null · e: true"},
		{"map sorted", map[string]any{"z": 1, "a": "x"}, "a: x · z: 1"},
		{"list", []any{"a", "b"}, "a, b"},
		{"multi-line", "first\nsecond\nthird\n", "first (+2 lines)"},
		{"empty", json.RawMessage(`{}`), "{}"},
		{"not JSON", json.RawMessage(`{oops`), "{oops"},
	} {
		if got := inlineText(readable(c.v), false); got != c.want {
			t.Errorf("%s: inlineText = %q, want %q", c.name, got, c.want)
		}
	}
	got := blockLines("summary", "one two three four five six seven", 20, "  ")
	want := []string{"  summary: one two", "      three four", "      five six seven"}
	if got := wordWrap("abcdefghijkl mn", 5, 4); strings.Join(got, "|") != "abcde|fghi|jkl|mn" {
		t.Errorf("a word longer than a line: %q", got)
	}
	if got := wordWrap("  indented text", 20, 20); got[0] != "  indented text" {
		t.Errorf("indentation: %q", got)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("blockLines wraps %q, want %q", got, want)
	}
	got = blockLines("log", "a\nb\n", 20, "  ")
	if strings.Join(got, "|") != "  log:|    a|    b" {
		t.Errorf("a multi-line string: %q", got)
	}
}

// Ten options or more: an option's number is picked at its last digit
// ("1" waits for a second digit or enter when there are 12), so every
// option can be picked.
func TestReviewPicksTwoDigitOptions(t *testing.T) {
	for _, c := range []struct {
		keys []string
		want int
	}{
		{[]string{"1", "2"}, 12},
		{[]string{"1", "enter"}, 1},
		{[]string{"3"}, 3},
		{[]string{"1", "3", "1", "0"}, 10}, // 13 is out of range: start again
	} {
		svc, id := rolloutFixture(t, 12)
		m := newModel(t, ServiceSource(svc), 80, 24)
		press(m, "3", "a")
		press(m, c.keys...)
		press(m, "enter", "a")
		r, err := engine.NewLibrary(svc).Review(context.Background(), id, "review-1")
		if err != nil {
			t.Fatal(err)
		}
		if r.Decision == nil || r.Decision.Option != c.want {
			t.Errorf("keys %q: decision %+v, want option %d", c.keys, r.Decision, c.want)
		}
	}
}

// The Gates pane's footer offers only the keys that act on the selected
// gate: revise and the outputs where they apply (the fixture's deploy);
// no revise once the flow's max_rounds are spent (the engine would refuse
// it), nor on a Go program's review (TestReviewAt80x24).
func TestGatesFooterOnlyActingKeys(t *testing.T) {
	f := newFixture(t)
	m := newModel(t, f.src, 80, 24)
	press(m, "3")
	frame := m.View()
	footer := frame[strings.LastIndex(frame, "\n")+1:]
	if !strings.Contains(footer, "r revise") || !strings.Contains(footer, "enter outputs") {
		t.Errorf("footer of a gate with on_revise and outputs: %q", footer)
	}

	const spec = `version: "0.2"
functions:
  approval:
    mode: gate
flows:
  ship:
    input: {}
    max_rounds: 1
    steps:
      - id: build
        intent: "Build it"
      - id: review
        function: approval
        depends_on: [build]
        on_approve: ~
        on_revise: build
        on_kill: ~
`
	svc := &engine.Service{ParseSpec: exprlang.ParseSpec, Store: enginetest.New()}
	ctx := context.Background()
	out, err := svc.Plan(ctx, spec, "ship", map[string]any{}, engine.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := engine.FlowIDOf(out)
	steps := []func() (engine.Outcome, error){
		func() (engine.Outcome, error) {
			return svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "build", Result: map[string]any{"ok": true}})
		},
		func() (engine.Outcome, error) {
			return svc.GateResolve(ctx, id, review.Decision{StepID: "review", Outcome: review.Revise, Rationale: "again", ResolvedBy: "human"})
		},
		func() (engine.Outcome, error) {
			return svc.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "build", Result: map[string]any{"ok": true}})
		},
	}
	for _, step := range steps {
		if _, err := step(); err != nil {
			t.Fatal(err)
		}
	}
	m = newModel(t, ServiceSource(svc), 80, 24)
	press(m, "3")
	frame = m.View()
	footer = frame[strings.LastIndex(frame, "\n")+1:]
	if !strings.Contains(frame, "no rounds left") || strings.Contains(footer, "revise") || !strings.Contains(footer, "x kill") {
		t.Errorf("a gate whose rounds are spent offers revise:\n%s", frame)
	}
}
