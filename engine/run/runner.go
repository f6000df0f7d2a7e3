package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Exit codes of `stratum run` (DESIGN.md §10).
const (
	ExitComplete    = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitKilled      = 3
	ExitGate        = 4
	ExitBudget      = 5
	ExitInterrupted = 130
)

// Final statuses of a run (Outcome.Status). The first five are flow statuses.
const (
	EndComplete    = engine.StatusComplete
	EndFailed      = engine.StatusFailed
	EndKilled      = engine.StatusKilled
	EndBudget      = engine.StatusBudgetExhausted
	EndGate        = engine.StatusAwaitingGate // stopped at a gate nobody may resolve
	EndInterrupted = "interrupted"
	EndInvalid     = "invalid" // the flow could not start: invalid spec or inputs
	EndError       = "error"   // an executor or store error; the flow stays resumable
)

// Cache modes (seed 000 §8.3) for steps that declare `cache: true`.
const (
	CacheNone    = "none"
	CacheSession = "session"
	CacheGlobal  = "global"
)

// Options configure a Runner. Service is required; everything else has a
// default.
type Options struct {
	Service *engine.Service
	// Command runs compute functions and `run:` steps (default
	// &CommandExecutor{}).
	Command engine.Executor
	// Infer runs infer functions and inline steps without agent/run; nil
	// means no LLM provider is configured (such steps stop the run with a
	// clear message).
	Infer engine.Executor
	// InferUnavailable explains why Infer is nil (shown to the user).
	InferUnavailable string
	// Agent runs inline steps with `agent:` (default: an AgentExecutor over
	// DefaultAgents).
	Agent engine.Executor
	// Gates decides how gates are resolved.
	Gates GatePolicy
	// Console is the terminal prompt sink (used when Gates.OnGate is
	// "prompt").
	Console *Console
	// Progress receives progress events (default: none).
	Progress Progress
	// Tracer receives spans (default: none).
	Tracer Tracer
	// Cache is the cache mode of steps with `cache: true` (default session).
	Cache string
	// LeaseTTL is how long the runner's lease lives without a heartbeat
	// (default 30s; heartbeats every TTL/3).
	LeaseTTL time.Duration
	// PollInterval is how often `--on-gate wait` polls the store (default 1s).
	PollInterval time.Duration
}

// Outcome is how a run ended.
type Outcome struct {
	FlowID   string
	FlowName string
	Status   string // one of the End* constants
	ExitCode int
	// Final is the engine's last response (completion payload, error
	// envelope, budget_exhausted…).
	Final engine.Response
	// Gate is the gate the run stopped at (EndGate).
	Gate *review.PendingReview
	// Message explains failures and stops in one line.
	Message string
	// Steps are per-step results in first-run order (for JUnit).
	Steps []*StepReport
	// Spec is the parsed spec of the flow (nil for EndInvalid).
	Spec *specs.Spec
}

// StepReport summarises one step of the run.
type StepReport struct {
	FlowID     string
	StepID     string
	Line       int
	Status     string // passed | failed | skipped | killed | pending
	Attempts   int
	Duration   time.Duration
	CostUSD    float64
	CostKnown  bool
	Violations []string
	CacheHit   bool
}

// Runner drives flows in-process. A Runner may run one flow at a time.
type Runner struct {
	svc  *engine.Service
	opts Options

	lease engine.Lease
	beat  sync.Mutex // held by a heartbeat round and by releases
	mu    sync.Mutex
	held  map[string]bool // flows under our lease

	session map[string]any // session cache (key includes the flow id)
	reports map[string]*StepReport
	order   []*StepReport
}

// New returns a Runner.
func New(opts Options) *Runner {
	if opts.Command == nil {
		opts.Command = &CommandExecutor{}
	}
	if opts.Agent == nil {
		opts.Agent = &AgentExecutor{}
	}
	if opts.Progress == nil {
		opts.Progress = nopProgress{}
	}
	if opts.Cache == "" {
		opts.Cache = CacheSession
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 30 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.Gates.OnGate == "" {
		opts.Gates.OnGate = OnGateExit
	}
	host, _ := os.Hostname()
	return &Runner{
		svc:     opts.Service,
		opts:    opts,
		lease:   engine.Lease{ID: "run-" + engine.NewUUID(), PID: os.Getpid(), Host: host},
		held:    map[string]bool{},
		session: map[string]any{},
		reports: map[string]*StepReport{},
	}
}

// LeaseID is the id of the runner's lease.
func (r *Runner) LeaseID() string { return r.lease.ID }

func (r *Runner) now() time.Time {
	if r.svc.Now != nil {
		return r.svc.Now()
	}
	return time.Now().UTC()
}

func (r *Runner) report() engine.ReportOptions { return engine.ReportOptions{Actor: r.lease.ID} }

func (r *Runner) freshLease() engine.Lease {
	l := r.lease
	now := r.now()
	l.Heartbeat = now
	l.ExpiresAt = now.Add(r.opts.LeaseTTL)
	return l
}

// flowCtx is one flow being driven (a child flow has a parent).
type flowCtx struct {
	id     string
	spec   *specs.Spec
	flow   *specs.Flow
	dir    string
	parent *flowCtx
	call   callState
}

// callState is the per-call budget envelope of the step being executed
// (all attempts of one dispatch of the step).
type callState struct {
	stepID string
	start  time.Time
	usd    float64
	tokens int64
}

// Start plans flowName of sp with inputs (validated by the engine, workflow
// defaults applied) under the runner's lease and drives it to its end, a
// gate stop, or an interruption. sp.File should be the spec's path (its
// directory is the commands' default working directory).
func (r *Runner) Start(ctx context.Context, sp *specs.Spec, flowName string, inputs map[string]any) (*Outcome, error) {
	lease := r.freshLease()
	specFile := sp.File
	if specFile != "" {
		if abs, err := filepath.Abs(specFile); err == nil {
			specFile = abs
		}
	}
	resp, err := r.svc.Plan(ctx, string(sp.Source), flowName, inputs, engine.PlanOptions{
		SpecFile: specFile, Driver: engine.DriverRunner, Owner: &lease,
	})
	if err != nil {
		return nil, err
	}
	if resp["status"] == "error" {
		msg, _ := resp["message"].(string)
		return &Outcome{FlowName: flowName, Status: EndInvalid, ExitCode: ExitUsage, Final: resp, Message: msg, Spec: sp}, nil
	}
	flowID := responseFlowID(resp)
	fc := &flowCtx{id: flowID, spec: sp, flow: sp.Flows[flowName], dir: specDir(specFile)}
	r.hold(flowID)
	r.emit(Event{Kind: EventFlowStarted, FlowID: flowID, FlowName: flowName, Spec: sp})
	return r.driveRoot(ctx, fc, resp)
}

// Resume continues a flow whose runner died or was interrupted (or that an
// agent drove so far): it takes the lease (a live lease of a process that no
// longer exists on this host is taken over), then drives the flow from its
// current dispatch. Steps whose completion was recorded are never run again.
func (r *Runner) Resume(ctx context.Context, flowID string) (*Outcome, error) {
	st, err := r.svc.Get(ctx, flowID)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return &Outcome{FlowID: flowID, Status: EndInvalid, ExitCode: ExitUsage, Message: fmt.Sprintf("no flow with id %q", flowID)}, nil
		}
		return nil, err
	}
	if st.ParentFlowID != nil {
		return &Outcome{FlowID: flowID, Status: EndInvalid, ExitCode: ExitUsage,
			Message: fmt.Sprintf("flow %s is a child flow; resume its parent %s", flowID, *st.ParentFlowID)}, nil
	}
	sp, ds := specs.Parse(st.SpecFile, []byte(st.RawSpec))
	if sp == nil || ds.HasErrors() {
		return &Outcome{FlowID: flowID, Status: EndInvalid, ExitCode: ExitUsage, Message: "the flow's stored spec no longer parses: " + ds.Error()}, nil
	}
	flow := sp.Flows[st.FlowName]
	if flow == nil {
		return &Outcome{FlowID: flowID, Status: EndInvalid, ExitCode: ExitUsage, Message: fmt.Sprintf("flow %q not in the stored spec", st.FlowName)}, nil
	}
	if err := r.claim(ctx, st); err != nil {
		return &Outcome{FlowID: flowID, FlowName: st.FlowName, Status: EndError, ExitCode: ExitFailed, Message: err.Error(), Spec: sp}, nil
	}
	r.hold(flowID)
	resp, err := r.svc.Resume(ctx, flowID)
	if err != nil {
		r.releaseAll()
		return nil, err
	}
	fc := &flowCtx{id: flowID, spec: sp, flow: flow, dir: specDir(st.SpecFile)}
	r.emit(Event{Kind: EventFlowStarted, FlowID: flowID, FlowName: st.FlowName, Spec: sp, Resumed: true})
	return r.driveRoot(ctx, fc, resp)
}

// claim takes the lease of a stored flow. A live lease held by a process
// that no longer exists on this host is taken over.
func (r *Runner) claim(ctx context.Context, st *engine.FlowState) error {
	err := r.svc.Claim(ctx, st.FlowID, r.freshLease())
	if !errors.Is(err, engine.ErrLeaseHeld) {
		return err
	}
	host, _ := os.Hostname()
	o := st.Owner
	if o == nil || o.Host != host || processAlive(o.PID) {
		return fmt.Errorf("%w; another `stratum run` is driving it (wait for it, or for its lease to expire)", err)
	}
	// The owner died (kill -9): take its lease over, only if it is still
	// the same lease.
	return r.svc.Store.Update(ctx, func(tx engine.Tx) error {
		cur, err := tx.Get(st.FlowID)
		if err != nil {
			return err
		}
		if cur.Owner != nil && cur.Owner.ID != o.ID && cur.Owner.ExpiresAt.After(r.now()) {
			return fmt.Errorf("flow %s: %w", st.FlowID, engine.ErrLeaseHeld)
		}
		l := r.freshLease()
		cur.Owner = &l
		cur.Driver = engine.DriverRunner
		return tx.Put(cur)
	})
}

func (r *Runner) hold(flowID string) {
	r.mu.Lock()
	r.held[flowID] = true
	r.mu.Unlock()
}

func (r *Runner) unhold(ctx context.Context, flowID string) {
	// Hold beat so that no heartbeat round renews the lease after its release.
	r.beat.Lock()
	defer r.beat.Unlock()
	r.mu.Lock()
	delete(r.held, flowID)
	r.mu.Unlock()
	_ = r.svc.Release(ctx, flowID, r.lease.ID)
}

func (r *Runner) releaseAll() {
	r.mu.Lock()
	ids := make([]string, 0, len(r.held))
	for id := range r.held {
		ids = append(ids, id)
	}
	r.held = map[string]bool{}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range ids {
		_ = r.svc.Release(ctx, id, r.lease.ID)
	}
}

// heartbeat renews the lease of every held flow until ctx ends. Losing a
// lease (another runner took it after it expired) cancels the run.
func (r *Runner) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) {
	t := time.NewTicker(r.opts.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if lost := r.beatOnce(ctx); lost != nil {
			cancel(lost)
			return
		}
	}
}

// beatOnce renews the lease of every held flow; it returns an error when a
// lease was lost (another runner took it after it expired).
func (r *Runner) beatOnce(ctx context.Context) error {
	r.beat.Lock()
	defer r.beat.Unlock()
	r.mu.Lock()
	ids := make([]string, 0, len(r.held))
	for id := range r.held {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, id := range ids {
		err := r.svc.Claim(ctx, id, r.freshLease())
		if errors.Is(err, engine.ErrLeaseHeld) {
			return fmt.Errorf("lost the lease of flow %s: %w", id, err)
		}
	}
	return nil
}

// driveRoot drives the root flow with heartbeats and turns its end into an
// Outcome. The lease is released at the end (also on interruption: the flow
// is resumable at once).
func (r *Runner) driveRoot(ctx context.Context, fc *flowCtx, resp engine.Response) (*Outcome, error) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hbCtx, hbStop := context.WithCancel(runCtx)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		r.heartbeat(hbCtx, cancel)
	}()
	end, err := r.drive(runCtx, fc, resp)
	hbStop()
	<-hbDone
	r.markRemaining(fc, "pending")
	r.releaseAll()
	if err != nil && runCtx.Err() == nil {
		return nil, err
	}
	if err != nil || end.status == EndInterrupted {
		msg := "interrupted; the flow is saved: stratum run --resume " + fc.id
		if c := context.Cause(runCtx); c != nil && !errors.Is(c, context.Canceled) {
			msg = c.Error() + "; " + msg
		}
		end = &endState{status: EndInterrupted, message: msg}
	}
	out := &Outcome{FlowID: fc.id, FlowName: fc.flow.Name, Status: end.status, Final: end.resp, Gate: end.gate,
		Message: end.message, Steps: r.order, Spec: fc.spec}
	out.ExitCode = exitCode(end.status)
	var endStep *specs.Step
	if id, ok := end.resp["step_id"].(string); ok {
		endStep = findStep(fc.spec, id)
	}
	r.emit(Event{Kind: EventFlowFinished, FlowID: fc.id, FlowName: fc.flow.Name, Step: endStep, Status: end.status, Message: end.message, Gate: end.gate, Spec: fc.spec})
	return out, nil
}

// findStep finds a step by id in any flow of the spec (nil when absent).
func findStep(sp *specs.Spec, id string) *specs.Step {
	if sp == nil || id == "" {
		return nil
	}
	for _, fn := range sp.FlowNames {
		if s := sp.Flows[fn].Step(id); s != nil {
			return s
		}
	}
	return nil
}

func exitCode(status string) int {
	switch status {
	case EndComplete:
		return ExitComplete
	case EndKilled:
		return ExitKilled
	case EndGate:
		return ExitGate
	case EndBudget:
		return ExitBudget
	case EndInterrupted:
		return ExitInterrupted
	case EndInvalid:
		return ExitUsage
	}
	return ExitFailed
}

// endState is how driving one flow ended.
type endState struct {
	status  string
	resp    engine.Response
	gate    *review.PendingReview
	message string
}

func responseFlowID(resp engine.Response) string {
	if id, ok := resp["flow_id"].(string); ok && id != "" {
		return id
	}
	id, _ := resp["parent_flow_id"].(string)
	return id
}

func specDir(file string) string {
	if file == "" {
		wd, _ := os.Getwd()
		return wd
	}
	return filepath.Dir(file)
}

// drive runs the flow from resp until it ends or the run stops.
func (r *Runner) drive(ctx context.Context, fc *flowCtx, resp engine.Response) (*endState, error) {
	for {
		if err := ctx.Err(); err != nil {
			return &endState{status: EndInterrupted}, nil
		}
		if resp == nil {
			return nil, errors.New("engine returned no response")
		}
		status, _ := resp["status"].(string)
		var err error
		switch status {
		case engine.DispatchExecuteStep, engine.StatusEnsureFailed, engine.StatusSchemaFailed, engine.StatusGuardrailBlocked:
			var end *endState
			resp, end, err = r.runStep(ctx, fc, resp)
			if end != nil {
				return end, nil
			}
		case engine.DispatchAwaitGate:
			var end *endState
			resp, end, err = r.gate(ctx, fc, resp)
			if end != nil {
				return end, nil
			}
		case engine.DispatchExecuteFlow:
			var end *endState
			resp, end, err = r.child(ctx, fc, resp)
			if end != nil {
				return end, nil
			}
		case engine.DispatchParallel:
			stepID, _ := resp["step_id"].(string)
			return &endState{status: EndError, resp: resp, message: fmt.Sprintf(
				"step '%s' is a parallel_dispatch step, which `stratum run` does not execute in-process; the flow stays running: drive it through MCP (stratum_resume %s)", stepID, fc.id)}, nil
		case engine.StatusComplete:
			r.markRemaining(fc, "skipped")
			return &endState{status: EndComplete, resp: resp}, nil
		case engine.StatusKilled:
			r.markRemaining(fc, "skipped")
			return &endState{status: EndKilled, resp: resp, message: "the flow was killed at a gate"}, nil
		case engine.StatusBudgetExhausted:
			reason, _ := resp["reason"].(string)
			return &endState{status: EndBudget, resp: resp, message: "budget exhausted: " + reason}, nil
		case engine.StatusFailed:
			return &endState{status: EndFailed, resp: resp, message: "the flow has failed"}, nil
		case "error":
			et, _ := resp["error_type"].(string)
			msg, _ := resp["message"].(string)
			if et == engine.ErrTypeRetriesExhausted {
				return &endState{status: EndFailed, resp: resp, message: msg}, nil
			}
			return &endState{status: EndError, resp: resp, message: fmt.Sprintf("%s: %s", et, msg)}, nil
		default:
			return &endState{status: EndError, resp: resp, message: fmt.Sprintf("unexpected engine response status %q", status)}, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return &endState{status: EndInterrupted}, nil
			}
			return nil, err
		}
	}
}

// stepReport returns (creating) the report of a step.
func (r *Runner) stepReport(fc *flowCtx, step *specs.Step) *StepReport {
	key := fc.id + "/" + step.ID
	if rep, ok := r.reports[key]; ok {
		return rep
	}
	rep := &StepReport{FlowID: fc.id, StepID: step.ID, Line: step.Pos.Line, Status: "pending"}
	r.reports[key] = rep
	r.order = append(r.order, rep)
	return rep
}

// markRemaining reports steps never reached as skipped (or killed).
func (r *Runner) markRemaining(fc *flowCtx, status string) {
	for _, s := range fc.flow.OrderedSteps() {
		rep := r.stepReport(fc, s)
		if rep.Status == "pending" {
			rep.Status = status
		}
	}
}

// child drives the child flow of a flow: step and reports its end to the
// parent: its completion as the step's result, a kill or failure as a
// failed attempt of the step, an exhausted budget as the parent's.
func (r *Runner) child(ctx context.Context, fc *flowCtx, resp engine.Response) (engine.Response, *endState, error) {
	childID, _ := resp["child_flow_id"].(string)
	childName, _ := resp["child_flow_name"].(string)
	stepID, _ := resp["parent_step_id"].(string)
	var childResp engine.Response
	switch c := resp["child_step"].(type) {
	case engine.Response:
		childResp = c
	case map[string]any:
		childResp = c
	}
	step := fc.flow.Step(stepID)
	cflow := fc.spec.Flows[childName]
	if step == nil || cflow == nil || childID == "" {
		return nil, &endState{status: EndError, resp: resp, message: "malformed execute_flow dispatch"}, nil
	}
	rep := r.stepReport(fc, step)
	start := time.Now()
	cst, err := r.svc.Get(ctx, childID)
	if err != nil {
		return nil, nil, err
	}
	if err := r.claim(ctx, cst); err != nil {
		return nil, &endState{status: EndError, message: fmt.Sprintf("child flow %s: %v", childID, err)}, nil
	}
	r.hold(childID)
	defer r.unhold(context.WithoutCancel(ctx), childID)
	r.emit(Event{Kind: EventStepStarted, FlowID: fc.id, Step: step, Attempt: attemptOf(resp, step), Spec: fc.spec, Message: "child flow " + childName})
	cfc := &flowCtx{id: childID, spec: fc.spec, flow: cflow, dir: fc.dir, parent: fc}
	if r.opts.Tracer != nil {
		r.opts.Tracer.FlowStarted(childID, childName, fc.id)
	}
	end, err := r.drive(ctx, cfc, childResp)
	if err != nil {
		return nil, nil, err
	}
	if r.opts.Tracer != nil {
		r.opts.Tracer.FlowEnded(childID, end.status, end.message)
	}
	rep.Attempts++
	rep.Duration += time.Since(start)
	switch end.status {
	case EndComplete:
		next, err := r.svc.StepDone(ctx, fc.id, stepID, map[string]any(end.resp), r.report())
		if err != nil {
			return nil, nil, err
		}
		r.noteStepResult(fc, step, next, nil)
		return next, nil, nil
	case EndKilled, EndFailed:
		v := fmt.Sprintf("child flow '%s' (%s) ended %s", childName, childID, end.status)
		if end.message != "" {
			v += ": " + end.message
		}
		if vs := stringsOf(end.resp["violations"]); len(vs) > 0 {
			v += " (" + strings.Join(vs, "; ") + ")"
		}
		next, err := r.svc.StepAttemptFailed(ctx, fc.id, stepID, []string{v}, r.report())
		if err != nil {
			return nil, nil, err
		}
		r.noteStepResult(fc, step, next, []string{v})
		return next, nil, nil
	case EndBudget:
		next, err := r.svc.ExhaustBudget(ctx, fc.id, "child flow "+childName+": "+end.message, r.report())
		if err != nil {
			return nil, nil, err
		}
		rep.Status = "failed"
		rep.Violations = []string{end.message}
		return next, nil, nil
	}
	return nil, end, nil
}

func stringsOf(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// attemptOf is the 1-based attempt number of a dispatch.
func attemptOf(resp engine.Response, step *specs.Step) int {
	total := step.Retries
	if total < 1 {
		total = 1
	}
	rem, ok := toInt(resp["retries_remaining"])
	if !ok {
		return 1
	}
	if a := total - rem + 1; a >= 1 {
		return a
	}
	return 1
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case float64:
		return int(x), true
	}
	return 0, false
}
