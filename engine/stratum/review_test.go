package stratum

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

// chanSink hands every review it is told about to a channel.
type chanSink struct{ ch chan PendingReview }

func (s chanSink) Emit(_ context.Context, p PendingReview) error {
	s.ch <- p
	return nil
}

func newChanSink() chanSink { return chanSink{ch: make(chan PendingReview, 8)} }

func (s chanSink) next(t *testing.T) PendingReview {
	t.Helper()
	select {
	case p := <-s.ch:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no review was opened")
	}
	return PendingReview{}
}

// storeRuntime is a Runtime over the shared store of a temporary
// STRATUM_HOME (the working directory a temporary one too), with sinks.
func storeRuntime(t *testing.T, sinks ...ReviewSink) (*Runtime, context.Context, *engine.Service, string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("STRATUM_HOME", home)
	t.Setenv("STRATUM_STORE", "")
	t.Chdir(t.TempDir())
	st := openShared(t)
	rt, err := New(Options{Store: st, Sinks: sinks, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt, WithRuntime(context.Background(), rt), &engine.Service{Store: st, ParseSpec: exprlang.ParseSpec}, home
}

type awaited[T any] struct {
	d   HumanDecision[T]
	err error
	at  time.Time
}

// await runs AwaitHuman in a goroutine.
func await[T any](ctx context.Context, r Review[T]) chan awaited[T] {
	ch := make(chan awaited[T], 1)
	go func() {
		d, err := AwaitHuman(ctx, r)
		ch <- awaited[T]{d, err, time.Now()}
	}()
	return ch
}

func result[T any](t *testing.T, ch chan awaited[T]) awaited[T] {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(20 * time.Second):
		t.Fatal("AwaitHuman did not return")
	}
	return awaited[T]{}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// stratumBinary builds the stratum command once per test binary.
func stratumBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stratum-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "stratum")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/stratum-go/stratum").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// A review decided from another process (`stratum gate approve --option`)
// returns the typed value; values that do not fit, and revise, are refused
// with a clear message and the review stays open.
func TestAwaitHumanDecidedWithStratumGate(t *testing.T) {
	bin := stratumBinary(t)
	sink := newChanSink()
	_, ctx, svc, _ := storeRuntime(t, sink)
	type plan struct {
		Name  string `json:"name"`
		Risky bool   `json:"risky"`
	}
	flow := NewFlow("deploy", Budget{}, func(ctx context.Context, _ struct{}) (HumanDecision[plan], error) {
		return AwaitHuman(ctx, Review[plan]{Question: "Which plan?", Trigger: "debate_disagreement",
			Options: []plan{{"canary", false}, {"big-bang", true}}, Artifacts: map[string]any{"diff": "+1 -1"}})
	})
	done := make(chan awaited[plan], 1)
	go func() {
		d, err := flow.Run(ctx, struct{}{})
		done <- awaited[plan]{d, err, time.Now()}
	}()
	p := sink.next(t)
	flowID, step, ok := splitReviewID(p.ReviewID)
	if !ok || step != "review-1" || len(p.Options) != 2 || p.Trigger != "debate_disagreement" {
		t.Fatalf("pending review %+v", p)
	}
	gate := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"gate"}, args...)...)
		out, _ := cmd.Output()
		return string(out), cmd.ProcessState.ExitCode()
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"approve", flowID, step, "--option", "3"}, 1, "option 3 is out of range: review 'review-1' has options 1–2"},
		{[]string{"approve", flowID, step, "--value", `{"name": "yolo", "risky": true}`}, 1, "is not one of the options"},
		{[]string{"approve", flowID, step}, 1, "needs a value: pick an option (1–2)"},
		{[]string{"revise", flowID, step, "--note", "again"}, 1, "cannot be revised"},
	} {
		out, code := gate(c.args...)
		if code != c.code || !strings.Contains(out, c.want) || !strings.Contains(out, "stays open") && c.args[0] == "approve" {
			t.Errorf("stratum gate %s: exit %d %s, want exit %d and %q", strings.Join(c.args, " "), code, out, c.code, c.want)
		}
	}
	if prs, _ := svc.Query().PendingReviews(context.Background()); len(prs) != 1 {
		t.Fatalf("the review did not stay open: %d pending", len(prs))
	}
	out, code := gate("approve", flowID[:8], step, "--option", "1", "--note", "the safer one", "--reviewer", "ann")
	decided := time.Now()
	if code != 0 {
		t.Fatalf("stratum gate approve --option 1: exit %d %s", code, out)
	}
	a := result(t, done)
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.d.Value != (plan{"canary", false}) || a.d.Reviewer != "ann" || a.d.Rationale != "the safer one" || a.d.Channel != "cli" || a.d.ReviewID != p.ReviewID {
		t.Errorf("decision %+v", a.d)
	}
	t.Logf("the program continued %s after `stratum gate` exited", a.at.Sub(decided).Round(time.Millisecond))
	if out, code := gate("approve", flowID, step, "--option", "2"); code != 2 || !strings.Contains(out, `"conflict": true`) {
		t.Errorf("second decision: exit %d %s", code, out)
	}
	st, _ := svc.Query().Get(context.Background(), flowID)
	if st.Status != state.StatusComplete || st.Library.Reviews[0].Decision.Option != 1 {
		t.Errorf("flow %s, review %+v", st.Status, st.Library.Reviews[0].Decision)
	}
}

// A program waiting on its review takes the decision, value included,
// from the review's gate_resolved event: once decided (by another
// Service, as another process would), it reads no flow until AwaitHuman
// returns.
func TestAwaitHumanTakesTheDecisionFromItsEvent(t *testing.T) {
	sink := newChanSink()
	_, ctx, svc, _ := storeRuntime(t, sink)
	counting := svc.Store.(*countingStore)
	readsAtReturn := make(chan int64, 1)
	flow := NewFlow("ship", Budget{}, func(ctx context.Context, _ struct{}) (HumanDecision[string], error) {
		d, err := AwaitHuman(ctx, Review[string]{Question: "Ship?"})
		readsAtReturn <- counting.flowReads.Load()
		return d, err
	})
	done := make(chan awaited[string], 1)
	go func() {
		d, err := flow.Run(ctx, struct{}{})
		done <- awaited[string]{d, err, time.Now()}
	}()
	p := sink.next(t)
	flowID, step, _ := splitReviewID(p.ReviewID)
	other := &engine.Service{Store: counting.Opened}
	before := counting.flowReads.Load()
	_, err := other.GateResolve(context.Background(), flowID, review.Decision{StepID: step, Outcome: review.Approve,
		Value: json.RawMessage(`"yes"`), Reviewer: "ann", Rationale: "lgtm", ResolvedBy: review.Human, Channel: review.ChannelCLI})
	if err != nil {
		t.Fatal(err)
	}
	a := result(t, done)
	if a.err != nil || a.d.Value != "yes" || a.d.Reviewer != "ann" || a.d.Rationale != "lgtm" || a.d.Channel != "cli" || a.d.DecidedAt.IsZero() {
		t.Fatalf("AwaitHuman = %+v, %v", a.d, a.err)
	}
	if n := <-readsAtReturn - before; n != 0 {
		t.Errorf("the waiter read %d flows after the decision; its event carries it", n)
	}
}

// `stratum gate approve --value` decides a review without options with a
// value checked against T's schema.
func TestAwaitHumanValueFromStratumGate(t *testing.T) {
	bin := stratumBinary(t)
	sink := newChanSink()
	_, ctx, _, _ := storeRuntime(t, sink)
	type verdict struct {
		Ship  bool   `json:"ship"`
		Notes string `json:"notes"`
	}
	ch := await(ctx, Review[verdict]{Question: "Ship?"})
	p := sink.next(t)
	flowID, step, _ := splitReviewID(p.ReviewID)
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"gate", "approve", flowID, step}, args...)...)
		out, _ := cmd.Output()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := run("--value", `{"ship": "yes", "notes": ""}`); code != 1 || !strings.Contains(out, "does not fit the type of review") {
		t.Errorf("a value of the wrong type: exit %d %s", code, out)
	}
	if out, code := run("--value", `{"ship": true}`); code != 1 || !strings.Contains(out, "notes") {
		t.Errorf("a value missing a field: exit %d %s", code, out)
	}
	if out, code := run("--value", `{"ship": true, "notes": "lgtm"}`); code != 0 {
		t.Fatalf("exit %d %s", code, out)
	}
	a := result(t, ch)
	if a.err != nil || a.d.Value != (verdict{true, "lgtm"}) {
		t.Errorf("AwaitHuman = %+v, %v", a.d, a.err)
	}
}

// `stratum gate reject` declines: AwaitHuman returns a *ReviewRejectedError
// with the rationale. A review outside Flow.Run gets a flow of its own.
func TestAwaitHumanRejected(t *testing.T) {
	bin := stratumBinary(t)
	sink := newChanSink()
	_, ctx, svc, _ := storeRuntime(t, sink)
	ch := await(ctx, Review[string]{Question: "Merge?", Options: []string{"yes", "no"}})
	p := sink.next(t)
	flowID, step, _ := splitReviewID(p.ReviewID)
	sums, _ := svc.Query().List(context.Background(), engine.ListFilter{})
	if len(sums) != 1 || sums[0].FlowID != flowID || sums[0].Driver != state.DriverLibrary || sums[0].Status != state.StatusAwaitingGate {
		t.Fatalf("flows %+v", sums)
	}
	cmd := exec.Command(bin, "gate", "reject", flowID, step, "--note", "tests are red")
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	a := result(t, ch)
	var rej *ReviewRejectedError
	if !errors.As(a.err, &rej) || rej.Rationale != "tests are red" || rej.ReviewID != p.ReviewID || !errors.Is(a.err, ErrStratum) {
		t.Fatalf("AwaitHuman error %v", a.err)
	}
	st, _ := svc.Query().Get(context.Background(), flowID)
	if st.Status != state.StatusFailed {
		t.Errorf("the review's own flow is %s", st.Status)
	}
}

// Rule 14: the timeout is wall clock and persisted; OnTimeout decides its
// value (reviewer auto), else a *ReviewTimeoutError.
func TestAwaitHumanTimeouts(t *testing.T) {
	sink := newChanSink()
	_, ctx, svc, _ := storeRuntime(t, sink)
	fallback := "no"
	start := time.Now()
	ch := await(ctx, Review[string]{Question: "Deploy?", Options: []string{"yes", "no"}, Timeout: 300 * time.Millisecond, OnTimeout: &fallback})
	p := sink.next(t)
	if p.ExpiresAt.Before(start.Add(300*time.Millisecond)) || p.ExpiresAt.After(time.Now().Add(300*time.Millisecond)) {
		t.Errorf("expires at %s", p.ExpiresAt)
	}
	flowID, _, _ := splitReviewID(p.ReviewID)
	// Persisted: another process reads the same deadline.
	other := &engine.Service{Store: svc.Store}
	if g, _ := other.Query().PendingGates(context.Background()); len(g) != 1 || g[0].Gate.Deadline == nil || !g[0].Gate.Deadline.Equal(p.ExpiresAt) {
		t.Errorf("stored gate %+v, want deadline %s", g, p.ExpiresAt)
	}
	a := result(t, ch)
	if a.err != nil || a.d.Value != "no" || a.d.Reviewer != "auto" || a.d.Rationale != "timeout" || a.d.Channel != "auto" {
		t.Errorf("OnTimeout: %+v, %v", a.d, a.err)
	}
	if waited := a.at.Sub(start); waited < 300*time.Millisecond {
		t.Errorf("decided after %s, before the timeout", waited)
	}
	st, _ := svc.Query().Get(context.Background(), flowID)
	if st.Library.Reviews[0].Status != state.ReviewTimedOut {
		t.Errorf("stored review %s", st.Library.Reviews[0].Status)
	}

	ch = await(ctx, Review[string]{Question: "Deploy again?", Timeout: 100 * time.Millisecond})
	sink.next(t)
	a = result(t, ch)
	var te *ReviewTimeoutError
	if !errors.As(a.err, &te) || te.Question != "Deploy again?" {
		t.Errorf("no OnTimeout: %v", a.err)
	}
}

// Approver "human": an agent over MCP cannot decide (the engine refuses
// the mcp channel); a person can. Several reviews of one flow are open at
// once, each its own gate row.
func TestHumanReviewAndReviewsOpenAtOnce(t *testing.T) {
	sink := newChanSink()
	rt, ctx, svc, _ := storeRuntime(t, sink)
	var mu sync.Mutex
	got := map[string]string{}
	flow := NewFlow("pair", Budget{}, func(ctx context.Context, _ struct{}) ([]string, error) {
		ask := func(q string, approver review.Approver) Branch[string] {
			return func(ctx context.Context) (string, error) {
				d, err := AwaitHuman(ctx, Review[string]{Question: q, Approver: approver})
				mu.Lock()
				got[q] = d.Channel
				mu.Unlock()
				return d.Value, err
			}
		}
		return All(ctx, ask("first?", "human"), ask("second?", ""))
	})
	done := make(chan error, 1)
	go func() { _, err := flow.Run(ctx, struct{}{}); done <- err }()
	a, b := sink.next(t), sink.next(t)
	fa, _, _ := splitReviewID(a.ReviewID)
	fb, _, _ := splitReviewID(b.ReviewID)
	if fa != fb {
		t.Fatalf("two flows for one Flow.Run: %s %s", fa, fb)
	}
	gates, err := svc.Query().PendingGateSteps(context.Background())
	if err != nil || len(gates) != 2 || gates[0].Summary.FlowID != fa || gates[0].Summary.Gate.StepID == gates[1].Summary.Gate.StepID {
		t.Fatalf("gate rows %+v, %v", gates, err)
	}
	human := a
	if a.Question != "first?" {
		human = b
	}
	_, step, _ := splitReviewID(human.ReviewID)
	// What stratum_gate_resolve does with an agent's decision.
	_, err = review.NewService[engine.Outcome](svc).Decide(context.Background(), review.Decision{FlowID: fa, StepID: step,
		Outcome: review.Approve, Value: json.RawMessage(`"ok"`), ResolvedBy: review.Agent, Channel: review.ChannelMCP})
	if !errors.Is(err, review.ErrNotAllowed) {
		t.Fatalf("an agent decided a human review over MCP: %v", err)
	}
	// A program cannot decide it either; a person does (what `stratum
	// gate` records after the typed confirmation).
	if err := rt.Resolve(context.Background(), Resolution{ReviewID: human.ReviewID, Value: json.RawMessage(`"ok"`), Reviewer: "bob"}); !errors.Is(err, review.ErrNotAllowed) {
		t.Fatalf("a program decided a human review: %v", err)
	}
	_, err = review.NewService[engine.Outcome](svc).Decide(context.Background(), review.Decision{FlowID: fa, StepID: step,
		Outcome: review.Approve, Value: json.RawMessage(`"ok"`), Reviewer: "ann", ResolvedBy: review.Human, Channel: review.ChannelCLI})
	if err != nil {
		t.Fatal(err)
	}
	other := b
	if human.ReviewID == b.ReviewID {
		other = a
	}
	if err := rt.Resolve(context.Background(), Resolution{ReviewID: other.ReviewID, Value: json.RawMessage(`"ok"`), Reviewer: "bob"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got["first?"] != "cli" || got["second?"] != "program" {
		t.Errorf("channels %v", got)
	}
}

// Rule 14: ctx cancellation withdraws the review; the sinks are told
// only once it is persisted.
func TestAwaitHumanCancelWithdraws(t *testing.T) {
	var svc *engine.Service
	var persisted bool
	sink := sinkFunc(func(_ context.Context, p PendingReview) error {
		prs, _ := svc.Query().PendingReviews(context.Background())
		for _, pr := range prs {
			persisted = persisted || pr.ReviewID == p.ReviewID
		}
		return nil
	})
	ready := newChanSink()
	_, ctx, s, _ := storeRuntime(t, sink, ready)
	svc = s
	ctx, cancel := context.WithCancel(ctx)
	ch := await(ctx, Review[int]{Question: "How many?"})
	p := ready.next(t)
	if !persisted {
		t.Error("a sink was told before the review was persisted")
	}
	cancel()
	a := result(t, ch)
	if !errors.Is(a.err, context.Canceled) {
		t.Fatalf("AwaitHuman after cancel: %v", a.err)
	}
	flowID, step, _ := splitReviewID(p.ReviewID)
	r, err := engine.NewLibrary(svc).Review(context.Background(), flowID, step)
	if err != nil || r.Status != state.ReviewWithdrawn {
		t.Errorf("review after cancel: %+v, %v", r, err)
	}
	if prs, _ := svc.Query().PendingReviews(context.Background()); len(prs) != 0 {
		t.Errorf("%d reviews still listed", len(prs))
	}
}

type sinkFunc func(context.Context, PendingReview) error

func (f sinkFunc) Emit(ctx context.Context, p PendingReview) error { return f(ctx, p) }

// Without a store: a sink is told and Resolve decides (a value that does
// not fit is refused and the review stays open, the first decision wins).
// The console sink is tested in console_test.go.
func TestAwaitHumanWithoutStore(t *testing.T) {
	t.Setenv("STRATUM_HOME", t.TempDir())
	sink := newChanSink()
	rt, err := New(Options{Sinks: []ReviewSink{sink}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithRuntime(context.Background(), rt)
	type choice struct {
		N int `json:"n" stratum:"min=1,max=3"`
	}
	ch := await(ctx, Review[choice]{Question: "Pick"})
	p := sink.next(t)
	if err := rt.Resolve(ctx, Resolution{ReviewID: p.ReviewID, Value: json.RawMessage(`{"n": 7}`), Reviewer: "ann"}); err == nil || !strings.Contains(err.Error(), "stays open") {
		t.Errorf("out of range value: %v", err)
	}
	if err := rt.Resolve(ctx, Resolution{ReviewID: p.ReviewID, Value: json.RawMessage(`{"n": 2}`), Reviewer: "ann", Rationale: "fine"}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Resolve(ctx, Resolution{ReviewID: p.ReviewID, Value: json.RawMessage(`{"n": 3}`), Reviewer: "bob"}); err == nil {
		t.Error("a second decision was accepted")
	}
	if a := result(t, ch); a.err != nil || a.d.Value.N != 2 || a.d.Reviewer != "ann" {
		t.Errorf("AwaitHuman = %+v, %v", a.d, a.err)
	}
}
