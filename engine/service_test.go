package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/enginetest"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newService() (*engine.Service, *enginetest.Store, *clock) {
	c := &clock{t: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
	st := enginetest.New()
	st.Now = c.Now
	n := 0
	var mu sync.Mutex
	return &engine.Service{ParseSpec: exprlang.ParseSpec, Store: st, Now: c.Now, NewID: func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("f%d", n)
	}}, st, c
}

const svcSpec = `version: "0.2"
functions:
  g:
    mode: gate
    timeout: 30
flows:
  child:
    input: {}
    steps:
      - id: c1
        intent: "child"
  main:
    input: {}
    steps:
      - id: a
        intent: "A"
        ensure: ["result.ok == True"]
        retries: 2
      - id: b
        intent: "B"
        inputs: {v: "$.steps.a.output.v"}
        depends_on: [a]
      - id: review
        function: g
        depends_on: [b]
        on_approve: ~
        on_revise: a
        on_kill: ~
`

// wireOf renders a service answer as a client sees it: an outcome, or the
// envelope of an *engine.Error; other errors (store failures) are returned.
func wireOf(out engine.Outcome, err error) (engine.Response, error) {
	if err != nil && engine.AsError(err) == nil {
		return nil, err
	}
	return engine.Wire(out, err), nil
}

func must(t *testing.T) func(engine.Outcome, error) engine.Response {
	return func(out engine.Outcome, err error) engine.Response {
		t.Helper()
		r, err := wireOf(out, err)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

func TestServiceFlow(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newService()
	r := must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{SpecFile: "x.stratum.yaml"}))
	if r["status"] != "execute_step" || r["flow_id"] != "f1" {
		t.Fatalf("plan: %v", r)
	}
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "zz", Result: map[string]any{}}))
	if r["error_type"] != "execution_error" {
		t.Fatalf("wrong step: %v", r)
	}
	st, err := s.Query().Get(ctx, "f1")
	if err != nil || st.Version != 1 {
		t.Fatalf("an unchanged transition wrote: version %d err %v", st.Version, err)
	}
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": false}}))
	if r["status"] != "ensure_failed" || r["retries_remaining"] != 1 {
		t.Fatalf("ensure: %v", r)
	}
	// A dispatch error rolls the whole transition back.
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true}}))
	if r["error_type"] != "execution_error" || !strings.Contains(r["message"].(string), "Key 'v' not found") {
		t.Fatalf("ref error: %v", r)
	}
	st, _ = s.Query().Get(ctx, "f1")
	if st.Attempts["a"] != 1 || st.Version != 2 {
		t.Fatalf("rolled-back transition persisted: attempts %v version %d", st.Attempts, st.Version)
	}
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 7}}))
	if r["step_id"] != "b" {
		t.Fatalf("advance: %v", r)
	}
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "b", Result: map[string]any{"out": 1}}))
	if r["status"] != "await_gate" {
		t.Fatalf("gate: %v", r)
	}
	gates, err := s.Query().PendingGates(ctx)
	if err != nil || len(gates) != 1 || gates[0].Gate.StepID != "review" || gates[0].Gate.Deadline == nil {
		t.Fatalf("pending gates %+v %v", gates, err)
	}
	clk.Add(10 * time.Second)
	r = must(t)(s.GateResolve(ctx, "f1", review.Decision{StepID: "review", Outcome: review.Approve, ResolvedBy: review.Human, Channel: review.ChannelCLI}))
	if r["status"] != "complete" {
		t.Fatalf("approve: %v", r)
	}
	// Completed flows are kept and auditable.
	st, err = s.Query().Get(ctx, "f1")
	if err != nil || st.Status != state.StatusComplete {
		t.Fatalf("completed flow: %v %v", st, err)
	}
	a := must(t)(s.Audit(ctx, "f1"))
	if a["status"] != "complete" || a["flow_id"] != "f1" {
		t.Fatalf("audit %v", a)
	}
	gates, _ = s.Query().PendingGates(ctx)
	if len(gates) != 0 {
		t.Fatalf("gate still pending: %+v", gates)
	}
	// Events: strictly increasing sequence numbers, typed.
	evs, _ := s.Query().FlowEvents(ctx, "f1")
	var types []string
	for i, e := range evs {
		if i > 0 && e.Seq <= evs[i-1].Seq {
			t.Fatalf("sequence not increasing at %d", i)
		}
		types = append(types, string(e.Type))
	}
	want := []string{"flow_created", "step_dispatched", "step_failed", "step_dispatched", "step_done", "step_dispatched",
		"step_done", "step_dispatched", "gate_opened", "gate_resolved", "flow_finished"}
	if strings.Join(types, ",") != strings.Join(want, ",") {
		t.Errorf("events\n got %v\nwant %v", types, want)
	}
}

func TestServiceErrors(t *testing.T) {
	ctx := context.Background()
	s, store, _ := newService()
	r := must(t)(s.Resume(ctx, "nope"))
	if r["status"] != "error" || r["error_type"] != "flow_not_found" || r["message"] != "No active flow with id 'nope'" {
		t.Fatalf("%v", r)
	}
	if _, ok := r["success"]; ok {
		t.Error("hand-built envelope has success")
	}
	r = must(t)(s.Plan(ctx, "version: \"0.2\"\nflows: [", "main", nil, engine.PlanOptions{}))
	if r["status"] != "error" || r["success"] != false || !strings.HasPrefix(r["error_type"].(string), "ir_") {
		t.Fatalf("invalid spec: %v", r)
	}
	r = must(t)(s.Plan(ctx, svcSpec, "nope", nil, engine.PlanOptions{}))
	if r["error_type"] != "execution_error" || r["message"] != "Flow 'nope' not found in spec" {
		t.Fatalf("unknown flow: %v", r)
	}
	if store.Len() != 0 {
		t.Fatal("a refused plan stored a flow")
	}
	// A stored flow whose spec no longer parses: execution_error, no panic.
	if err := store.Update(ctx, func(tx engine.Tx) error {
		st := &state.FlowState{FlowID: "bad", FlowName: "main", RawSpec: "::: not yaml", Status: state.StatusRunning}
		expect := st.Stamp(time.Now())
		return tx.Put(st, engine.Summarize(st, nil), expect)
	}); err != nil {
		t.Fatal(err)
	}
	r = must(t)(s.Resume(ctx, "bad"))
	if r["error_type"] != "execution_error" {
		t.Fatalf("bad stored spec: %v", r)
	}
}

func TestServiceLease(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newService()
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	if err := s.Leases().Claim(ctx, "f1", state.Lease{ID: "runner-1", ExpiresAt: clk.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Leases().Claim(ctx, "f1", state.Lease{ID: "runner-2", ExpiresAt: clk.Now().Add(time.Minute)}); err == nil {
		t.Fatal("second live lease granted")
	}
	r := must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	if r["error_type"] != "flow_owned" {
		t.Fatalf("agent report into an owned flow: %v", r)
	}
	r = must(t)(s.SkipStep(ctx, "f1", "a", "x", engine.ReportOptions{Actor: "someone"}))
	if r["error_type"] != "flow_owned" {
		t.Fatalf("skip into an owned flow: %v", r)
	}
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}, ReportOptions: engine.ReportOptions{Actor: "runner-1"}}))
	if r["step_id"] != "b" {
		t.Fatalf("owner report: %v", r)
	}
	clk.Add(2 * time.Minute) // lease expired
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "b", Result: map[string]any{}}))
	if r["status"] != "await_gate" {
		t.Fatalf("report after expiry: %v", r)
	}
}

func TestServiceSweepTimeouts(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newService()
	for i := 0; i < 2; i++ {
		must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	}
	for _, id := range []string{"f1", "f2"} {
		must(t)(s.StepDone(ctx, engine.StepReport{FlowID: id, StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	}
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "b", Result: map[string]any{}}))
	clk.Add(20 * time.Second)
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f2", StepID: "b", Result: map[string]any{}})) // deadline +30s from here
	clk.Add(15 * time.Second)
	n, err := s.SweepTimeouts(ctx)
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	st, _ := s.Query().Get(ctx, "f1")
	if st.Status != state.StatusKilled {
		t.Fatalf("f1 status %q", st.Status)
	}
	st, _ = s.Query().Get(ctx, "f2")
	if st.Status != state.StatusAwaitingGate {
		t.Fatalf("f2 status %q", st.Status)
	}
	// Resume does not move f2's deadline.
	must(t)(s.Resume(ctx, "f2"))
	clk.Add(16 * time.Second)
	if n, _ := s.SweepTimeouts(ctx); n != 1 {
		t.Fatalf("second sweep resolved %d", n)
	}
}

func TestServiceChildFlow(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	src := svcSpec + `  parent:
    input: {}
    steps:
      - id: sub
        flow: child
`
	r := must(t)(s.Plan(ctx, src, "parent", nil, engine.PlanOptions{}))
	childID, _ := r["child_flow_id"].(string)
	if r["status"] != "execute_flow" || childID == "" {
		t.Fatalf("%v", r)
	}
	r = must(t)(s.Resume(ctx, "f1"))
	if r["child_flow_id"] != childID {
		t.Fatalf("resume made another child: %v", r)
	}
	done := must(t)(s.StepDone(ctx, engine.StepReport{FlowID: childID, StepID: "c1", Result: map[string]any{"x": 1}}))
	if done["status"] != "complete" {
		t.Fatalf("child: %v", done)
	}
	r = must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "sub", Result: map[string]any(done)}))
	if r["status"] != "complete" || fmt.Sprint(r["output"]) != "map[x:1]" {
		t.Fatalf("parent: %v", r)
	}
	st, _ := s.Query().Get(ctx, "f1")
	if len(st.ChildAudits["sub"]) != 1 {
		t.Fatalf("child audits %v", st.ChildAudits)
	}
}

func TestServiceApproverHumanViaMCP(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	src := strings.Replace(svcSpec, "timeout: 30", "approver: human", 1)
	must(t)(s.Plan(ctx, src, "main", nil, engine.PlanOptions{}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "b", Result: map[string]any{}}))
	r := must(t)(s.GateResolve(ctx, "f1", review.Decision{StepID: "review", Outcome: review.Approve, ResolvedBy: review.Agent, Channel: review.ChannelMCP}))
	if r["error_type"] != "gate_requires_human" {
		t.Fatalf("%v", r)
	}
	r = must(t)(s.GateResolve(ctx, "f1", review.Decision{StepID: "review", Outcome: review.Approve, ResolvedBy: review.Human, Channel: review.ChannelTUI}))
	if r["status"] != "complete" {
		t.Fatalf("%v", r)
	}
}

// TestServiceLeaseCommitRevert: a runner-owned flow refuses checkpoints from
// anyone but the lease holder, like step reports (a revert mid-run made the
// runner fail and lost a step's result).
func TestServiceLeaseCommitRevert(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newService()
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	must(t)(s.Commit(ctx, "f1", "start", engine.ReportOptions{}))
	if err := s.Leases().Claim(ctx, "f1", state.Lease{ID: "runner-1", ExpiresAt: clk.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}, ReportOptions: engine.ReportOptions{Actor: "runner-1"}}))
	for name, call := range map[string]func() engine.Response{
		"commit": func() engine.Response { return must(t)(s.Commit(ctx, "f1", "mid", engine.ReportOptions{})) },
		"revert": func() engine.Response { return must(t)(s.Revert(ctx, "f1", "start", engine.ReportOptions{})) },
	} {
		if r := call(); r["error_type"] != "flow_owned" || r["owner"] != "runner-1" {
			t.Errorf("%s on an owned flow: %v", name, r)
		}
	}
	st, _ := s.Query().Get(ctx, "f1")
	if st.StepOutputs["a"] == nil || len(st.Checkpoints) != 1 {
		t.Fatalf("a refused checkpoint call changed the flow: outputs %v, checkpoints %v", st.StepOutputs, checkpointNames(st))
	}
	// The holder may checkpoint its own flow.
	if r := must(t)(s.Commit(ctx, "f1", "mid", engine.ReportOptions{Actor: "runner-1"})); r["status"] != "committed" {
		t.Fatalf("holder's commit: %v", r)
	}
}

func checkpointNames(st *state.FlowState) []string {
	var out []string
	for l := range st.Checkpoints {
		out = append(out, l)
	}
	return out
}

// TestServiceGateRationale: the rationale rule (review.Check) is the
// engine's, whoever calls GateResolve or Decide: a revise or kill without
// a rationale is refused on every channel but MCP, before the flow is read
// (an unknown flow answers the rule, not flow_not_found), and nothing is
// recorded; through MCP the original's empty rationale is accepted.
func TestServiceGateRationale(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newService()
	must(t)(s.Plan(ctx, svcSpec, "main", nil, engine.PlanOptions{}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "a", Result: map[string]any{"ok": true, "v": 1}}))
	must(t)(s.StepDone(ctx, engine.StepReport{FlowID: "f1", StepID: "b", Result: map[string]any{}}))
	for _, ch := range []review.Channel{review.ChannelTUI, review.ChannelCLI, review.ChannelConsole, review.ChannelPolicy} {
		for _, o := range []review.Outcome{review.Revise, review.Kill} {
			d := review.Decision{FlowID: "f1", StepID: "review", Outcome: o, Rationale: " \t", ResolvedBy: review.Human, Channel: ch}
			_, err := s.Decide(ctx, d)
			if e := engine.AsError(err); e == nil || e.Type != engine.ErrTypeRationaleRequired || !errors.Is(err, review.ErrRationaleRequired) {
				t.Fatalf("%s through %s without a rationale: %v", o, ch, err)
			}
			if _, err := s.GateResolve(ctx, "nope", d); !errors.Is(err, review.ErrRationaleRequired) {
				t.Fatalf("%s through %s of an unknown flow: %v", o, ch, err)
			}
		}
	}
	st, err := s.Query().Get(ctx, "f1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != state.StatusAwaitingGate || st.Round != 0 || len(st.Records) != 2 {
		t.Fatalf("a refused decision changed the flow: %s round %d, %d records", st.Status, st.Round, len(st.Records))
	}
	r := must(t)(s.GateResolve(ctx, "f1", review.Decision{StepID: "review", Outcome: review.Revise, ResolvedBy: review.Agent, Channel: review.ChannelMCP}))
	if r["status"] != "execute_step" || r["step_id"] != "a" {
		t.Fatalf("a revise through MCP without a rationale: %v", r)
	}
}
