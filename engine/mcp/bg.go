package mcp

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
	"github.com/stratum-go/stratum/specs/exprlang"
)

// Background runs (stratum_flow_run_bg, _bg_poll, _cancel_bg), the
// original's server-driven flow execution on our runner: the server resumes
// the flow with a run.Runner inside this process, holding the flow's lease
// (its id starts with "bg-", so listings and a next server can tell a
// background run), until it completes, stops at a gate nobody may decide
// here (paused_gate: decide it with stratum_gate_resolve or in the TUI, then
// re-arm), stops at a step it cannot execute (handoff: the agent does it),
// fails, exhausts its budget, or is cancelled (the flow stays resumable).
// Unlike the original's first cut the runner also runs fan-outs, pipelines
// and sub-flows. Steps that would go to an LLM provider under `stratum run`
// (infer functions, inline steps without agent: or run:) go to the claude
// agent CLI, as the original's background runs send them; without that CLI
// on PATH they are handed off.
//
// A server that stops leaves its runs' leases to expire instead of
// releasing them; a server (this one later, or another sharing the store)
// adopts a background run whose holder is gone (adoptOrphans) and drives it
// on from its last recorded step.

// bgLeasePrefix starts the lease id of a background run.
const bgLeasePrefix = "bg"

// bgDefaultAgent runs the steps that `stratum run` gives an LLM provider.
const bgDefaultAgent = "claude"

// Poll statuses (the original's).
const (
	bgRunning         = "running"
	bgPausedGate      = "paused_gate"
	bgComplete        = "complete"
	bgError           = "error"
	bgBudgetExhausted = "budget_exhausted"
	bgCancelled       = "cancelled"
	bgNotFound        = "not_found"
	bgIdle            = "idle"
	bgHandoffPrefix   = "handoff:"
)

// bgLeaseTTL is how long a background run's lease lives without renewal.
var bgLeaseTTL = run.DefaultLeaseTTL

// bgRun is one background run in this process.
type bgRun struct {
	done      chan struct{}
	cancel    context.CancelFunc
	cancelled bool // stratum_flow_cancel_bg asked (under bgMu)
	out       *run.Outcome
	err       error
}

// bgEnd is how this process's last background run of a flow ended.
type bgEnd struct {
	status string // a poll status
	reason string // paused_reason
	stepID string // the step it stopped at ("" when none)
}

// bgState is the server's background runs.
type bgState struct {
	mu       sync.Mutex
	runs     map[string]*bgRun
	ends     map[string]bgEnd
	wg       sync.WaitGroup
	stopping bool
}

type bgArgs struct {
	FlowID string `json:"flow_id" jsonschema:"the flow id from stratum_plan"`
}

func (s *server) registerBgTools(srv *mcp.Server) {
	addTool(srv, s, &mcp.Tool{Name: "stratum_flow_run_bg", Description: `Start server-driven background execution of an existing flow. Input: flow_id (str).
The server drives the flow from where it stands with stratum's in-process runner, holding the flow's lease (no other driver may report into it meanwhile): it runs command, agent, infer (through the claude agent CLI), fan-out, pipeline and sub-flow steps itself, pauses at gates (decide them with stratum_gate_resolve or in the TUI, then call this again) and hands back steps it cannot run. Idempotent.
Returns {status: "bg_started", flow_id, total_steps}, or {status, flow_id} with bg_already_running (a driver holds the flow), complete, not_found, or the flow's terminal status. Poll with stratum_flow_bg_poll.`},
		s.flowRunBg)
	addTool(srv, s, &mcp.Tool{Name: "stratum_flow_bg_poll", Annotations: readOnly(), Description: `Poll a background (server-driven) flow's progress. Input: flow_id (str).
Returns {status, flow_id, flow_mode, current_step, steps_completed, total_steps, terminal_status, paused_reason}. status is running / paused_gate / handoff:<mode> / complete / error / budget_exhausted / cancelled / idle / not_found.`},
		s.flowBgPoll)
	addTool(srv, s, &mcp.Tool{Name: "stratum_flow_cancel_bg", Description: `Cancel a running background (server-driven) flow. Input: flow_id (str).
Stops the driver (a step under way is stopped) and releases the flow, which stays resumable: drive it yourself (stratum_resume) or call stratum_flow_run_bg again. Returns {status, flow_id}: usually "cancelled", "not_found" when no background run of this server drives the flow, or the run's real outcome if it ended first (e.g. "complete").`},
		s.flowCancelBg)
}

func (s *server) flowRunBg(ctx context.Context, _ *mcp.CallToolRequest, in bgArgs) (engine.Response, error) {
	if err := required("flow_id", in.FlowID); err != nil {
		return nil, err
	}
	return s.startBg(ctx, in.FlowID)
}

// startBg starts a background run of a flow (stratum_flow_run_bg, and the
// adoption of an orphaned one).
func (s *server) startBg(ctx context.Context, flowID string) (engine.Response, error) {
	st, sum, err := s.bgFlow(ctx, flowID)
	if isNotFound(err) {
		return engine.Response{"status": bgNotFound, "flow_id": flowID}, nil
	} else if err != nil {
		return nil, err
	}
	if st.Status.Finished() {
		return engine.Response{"status": string(st.Status), "flow_id": flowID}, nil
	}
	if st.ParentFlowID != nil {
		return engine.Response{"status": "error", "error_type": "child_flow", "flow_id": flowID,
			"message": fmt.Sprintf("flow %s is a child flow; run its parent %s in the background", flowID, *st.ParentFlowID)}, nil
	}
	if st.IsLibrary() {
		return engine.Response{"status": "error", "error_type": "flow_owned", "flow_id": flowID,
			"message": fmt.Sprintf("flow %s is run by a Go program (driver library); only that program drives it", flowID)}, nil
	}
	s.bgs.mu.Lock()
	if s.bgs.stopping {
		s.bgs.mu.Unlock()
		return engine.Response{"status": "error", "error_type": "server_stopping", "flow_id": flowID, "message": "the server is stopping"}, nil
	}
	if _, live := s.bgs.runs[flowID]; live {
		s.bgs.mu.Unlock()
		return engine.Response{"status": "bg_already_running", "flow_id": flowID}, nil
	}
	b := &bgRun{done: make(chan struct{})}
	s.bgs.runs[flowID] = b
	delete(s.bgs.ends, flowID)
	s.bgs.mu.Unlock()

	r, closeX := s.bgRunner(st)
	var runCtx context.Context
	runCtx, b.cancel = context.WithCancel(s.bg)
	s.bgs.wg.Add(1)
	go s.driveBg(runCtx, b, r, closeX, flowID)
	// Answer once the runner holds the flow (or failed to take it), so a
	// poll right after sees it running and a refused lease is told now.
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		if cur, err := s.svc.Query().Get(ctx, flowID); err == nil && cur.Owner != nil && cur.Owner.ID == r.LeaseID() {
			break
		}
		select {
		case <-b.done:
			if b.out != nil && b.out.NotRun {
				return engine.Response{"status": "bg_already_running", "flow_id": flowID, "message": b.out.Message}, nil
			}
		case <-deadline.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
			continue
		}
		break
	}
	return engine.Response{"status": "bg_started", "flow_id": flowID, "total_steps": sum.TotalSteps}, nil
}

// bgFlow reads a flow and its summary (the spec's step count and the
// current step).
func (s *server) bgFlow(ctx context.Context, flowID string) (*state.FlowState, state.FlowSummary, error) {
	st, err := s.svc.Query().Get(ctx, flowID)
	if err != nil {
		return nil, state.FlowSummary{}, err
	}
	var flow *specs.Flow
	if sp, ds := specs.Parse(st.SpecFile, []byte(st.RawSpec), exprlang.Compile); sp != nil && !ds.HasErrors() {
		flow = sp.Flows[st.FlowName]
	}
	return st, engine.Summarize(st, flow), nil
}

// bgRunner builds the runner of a background run: the executors of the
// project's configuration (next to the spec), infer-kind steps through the
// claude agent CLI, gates left open (paused_gate).
func (s *server) bgRunner(st *state.FlowState) (*run.Runner, func()) {
	opts := run.Options{Service: s.svc, Gates: review.Policy{OnGate: review.OnGateExit}, LeaseTTL: bgLeaseTTL,
		LeasePrefix: bgLeasePrefix, Log: io.Discard, KeepLeaseOnStop: s.bgStopping, HandBack: true}
	closeX := func() {}
	cfg, err := config.Load(run.ProjectDir(st.SpecFile))
	if err != nil {
		opts.InferUnavailable = err.Error()
		opts.Agent = &run.AgentExecutor{}
		return run.New(opts), closeX
	}
	if x, err := run.NewExecutors(cfg, "", ""); err == nil {
		opts.Tracer, closeX = x.Tracer, func() { x.Close(s.opts.Log) }
	}
	agents := run.Agents(cfg.Agents)
	ag := &run.AgentExecutor{Agents: agents}
	opts.Agent = ag
	if why := agentMissing(agents, bgDefaultAgent); why != "" {
		opts.InferUnavailable = why
	} else {
		opts.Infer = asAgent{ex: ag, name: bgDefaultAgent}
	}
	return run.New(opts), closeX
}

// agentMissing says why the named agent cannot run here ("" when it can).
func agentMissing(agents map[string]config.Command, name string) string {
	c, ok := agents[name]
	switch {
	case !ok:
		return fmt.Sprintf("no agent %q is configured", name)
	case len(c.Argv) > 0:
		if _, err := exec.LookPath(c.Argv[0]); err != nil {
			return fmt.Sprintf("the %s agent CLI (%s) is not on PATH", name, c.Argv[0])
		}
	}
	return ""
}

// asAgent runs a step through the named agent as if it said agent: NAME.
type asAgent struct {
	ex   engine.Executor
	name string
}

func (a asAgent) Execute(ctx context.Context, req engine.StepRequest) (engine.StepOutcome, error) {
	step := *req.Step
	step.Agent = a.name
	req.Step = &step
	return a.ex.Execute(ctx, req)
}

func (s *server) bgStopping() bool {
	s.bgs.mu.Lock()
	defer s.bgs.mu.Unlock()
	return s.bgs.stopping
}

// driveBg runs a background run to its end and records how it ended.
func (s *server) driveBg(ctx context.Context, b *bgRun, r *run.Runner, closeX func(), flowID string) {
	defer s.bgs.wg.Done()
	defer closeX()
	out, err := r.Resume(ctx, flowID)
	end := bgEndOf(out, err)
	s.bgs.mu.Lock()
	b.out, b.err = out, err
	if b.cancelled && (out == nil || out.Status == run.EndInterrupted) {
		end = bgEnd{status: bgCancelled, reason: "cancelled by stratum_flow_cancel_bg"}
	}
	if err != nil {
		s.log.Error("background run failed", "flow_id", flowID, "error", err.Error())
	}
	delete(s.bgs.runs, flowID)
	if out == nil || !out.NotRun {
		s.bgs.ends[flowID] = end
	}
	s.bgs.mu.Unlock()
	close(b.done)
}

// bgEndOf maps a run's outcome to a poll status.
func bgEndOf(out *run.Outcome, err error) bgEnd {
	if err != nil || out == nil {
		msg := "the run stopped"
		if err != nil {
			msg = err.Error()
		}
		return bgEnd{status: bgError, reason: msg}
	}
	switch out.Status {
	case run.EndComplete, run.EndKilled:
		return bgEnd{status: bgComplete}
	case run.EndBudget:
		return bgEnd{status: bgBudgetExhausted, reason: out.Message}
	case run.EndGate:
		step := ""
		if out.Gate != nil {
			step = out.Gate.StepID
		}
		return bgEnd{status: bgPausedGate, reason: "gate:" + step, stepID: step}
	case run.EndInterrupted:
		return bgEnd{status: bgRunning, reason: out.Message} // the server stopped: resumable
	}
	if h := out.Handoff; h != nil {
		return bgEnd{status: bgHandoffPrefix + h.Mode, reason: bgHandoffPrefix + h.Mode + ":" + h.StepID, stepID: h.StepID}
	}
	return bgEnd{status: bgError, reason: out.Message}
}

func (s *server) flowBgPoll(ctx context.Context, _ *mcp.CallToolRequest, in bgArgs) (engine.Response, error) {
	if err := required("flow_id", in.FlowID); err != nil {
		return nil, err
	}
	st, sum, err := s.bgFlow(ctx, in.FlowID)
	if isNotFound(err) {
		return engine.Response{"status": bgNotFound, "flow_id": in.FlowID}, nil
	} else if err != nil {
		return nil, err
	}
	s.bgs.mu.Lock()
	_, live := s.bgs.runs[in.FlowID]
	end, ended := s.bgs.ends[in.FlowID]
	s.bgs.mu.Unlock()
	bgOwned := st.LeaseLive(s.now()) && strings.HasPrefix(st.Owner.ID, bgLeasePrefix+"-")
	cur := any(nil)
	if sum.CurrentStep != "" {
		cur = sum.CurrentStep
	}
	status, reason := bgIdle, any(nil)
	switch {
	case live || bgOwned:
		status = bgRunning
	case st.Status == state.StatusComplete || st.Status == state.StatusKilled:
		status = bgComplete
	case st.Status == state.StatusBudgetExhausted:
		status = bgBudgetExhausted
	case st.Status == state.StatusFailed:
		status = bgError
	case st.Status == state.StatusAwaitingGate:
		status, reason = bgPausedGate, "gate:"+sum.CurrentStep
	case ended && (end.stepID == "" || end.stepID == sum.CurrentStep) && end.status != bgRunning && end.status != bgPausedGate:
		status = end.status
	}
	if ended && reason == nil && end.reason != "" && status == end.status {
		reason = end.reason
	}
	mode := any(nil)
	if live || bgOwned || ended {
		mode = "server_driven"
	}
	terminal := any(nil)
	if st.Status.Finished() {
		terminal = string(st.Status)
	}
	completed, total := 0, sum.TotalSteps
	if a, err := s.svc.Audit(ctx, in.FlowID); err == nil {
		completed, total = a.StepsCompleted, a.TotalSteps
	}
	return engine.Response{"status": status, "flow_id": in.FlowID, "flow_mode": mode, "current_step": cur,
		"steps_completed": completed, "total_steps": total, "terminal_status": terminal, "paused_reason": reason}, nil
}

func (s *server) flowCancelBg(ctx context.Context, _ *mcp.CallToolRequest, in bgArgs) (engine.Response, error) {
	if err := required("flow_id", in.FlowID); err != nil {
		return nil, err
	}
	if _, err := s.svc.Query().Get(ctx, in.FlowID); isNotFound(err) {
		return engine.Response{"status": bgNotFound, "flow_id": in.FlowID}, nil
	} else if err != nil {
		return nil, err
	}
	s.bgs.mu.Lock()
	b := s.bgs.runs[in.FlowID]
	if b != nil {
		b.cancelled = true
	}
	s.bgs.mu.Unlock()
	if b == nil {
		return engine.Response{"status": bgNotFound, "flow_id": in.FlowID}, nil
	}
	b.cancel()
	select {
	case <-b.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.bgs.mu.Lock()
	end := s.bgs.ends[in.FlowID]
	s.bgs.mu.Unlock()
	return engine.Response{"status": end.status, "flow_id": in.FlowID}, nil
}

// stopBg stops this server's background runs as the server stops: their
// leases are left to expire so that the next server adopts the flows.
func (s *server) stopBg() {
	s.bgs.mu.Lock()
	s.bgs.stopping = true
	runs := make([]*bgRun, 0, len(s.bgs.runs))
	for _, b := range s.bgs.runs {
		runs = append(runs, b)
	}
	s.bgs.mu.Unlock()
	for _, b := range runs {
		b.cancel()
	}
	s.bgs.wg.Wait()
}

// adoptOrphans starts a background run of every running flow whose
// background run's holder is gone: its lease expired, or its process no
// longer exists on this host. The runner's claim decides between servers
// racing for one flow.
func (s *server) adoptOrphans(ctx context.Context) {
	host, _ := os.Hostname()
	now := s.now()
	var after state.ListCursor
	for {
		page, err := s.svc.Query().List(ctx, engine.ListFilter{Status: state.StatusRunning, Limit: 500, After: after})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("adopting background runs", "error", err.Error())
			}
			return
		}
		for _, f := range page {
			o := f.Owner
			if o == nil || !strings.HasPrefix(o.ID, bgLeasePrefix+"-") || f.ParentFlowID != "" {
				continue
			}
			if o.ExpiresAt.After(now) && (o.Host != host || run.ProcessAlive(o.PID)) {
				continue
			}
			s.bgs.mu.Lock()
			_, mine := s.bgs.runs[f.FlowID]
			s.bgs.mu.Unlock()
			if mine {
				continue
			}
			if resp, err := s.startBg(ctx, f.FlowID); err != nil {
				s.log.Error("adopting a background run", "flow_id", f.FlowID, "error", err.Error())
			} else if resp["status"] == "bg_started" {
				s.log.Info("adopted a background run", "flow_id", f.FlowID, "previous_lease", o.ID)
			}
		}
		if len(page) < 500 {
			return
		}
		after = page[len(page)-1].Cursor()
	}
}

// adoptLoop adopts orphaned background runs now and every third of the
// lease's term until ctx ends.
func (s *server) adoptLoop(ctx context.Context) {
	t := time.NewTicker(bgLeaseTTL / 3)
	defer t.Stop()
	for {
		s.adoptOrphans(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *server) now() time.Time {
	if s.svc.Now != nil {
		return s.svc.Now()
	}
	return time.Now().UTC()
}
