package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/internal/redact"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Exit codes of `stratum run` (RUN.md, "Exit status").
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
	EndComplete    = string(state.StatusComplete)
	EndFailed      = string(state.StatusFailed)
	EndKilled      = string(state.StatusKilled)
	EndBudget      = string(state.StatusBudgetExhausted)
	EndGate        = string(state.StatusAwaitingGate) // stopped at a gate nobody may resolve
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
	// Redact masks configured secrets in executors' errors before they are
	// recorded or shown (nil: none).
	Redact *redact.Redactor
	// Command runs compute functions and `run:` steps (default
	// &CommandExecutor{}).
	Command engine.Executor
	// Infer runs infer functions and inline steps without agent/run; nil
	// means no LLM provider is configured (such steps stop the run with a
	// clear message).
	Infer engine.Executor
	// InferUnavailable explains why Infer is nil (shown to the user).
	InferUnavailable string
	// Invocation runs this stratum in the next steps the run prints
	// (Invoked.Invocation; "stratum" when empty).
	Invocation string
	// Agent runs inline steps with `agent:` (default: an AgentExecutor over
	// DefaultAgents).
	Agent engine.Executor
	// Judge runs judge steps (default: a JudgeExecutor whose verifier is
	// an AgentVerifier over Agent's agents, recording each turn).
	Judge engine.Executor
	// Gates decides how gates are resolved: --approve, --on-gate (its
	// Reviewer, recorded with every decision of the run, defaults to
	// review.CurrentUser).
	Gates review.Policy
	// Console is the terminal prompt handler (used when Gates.OnGate is
	// review.OnGatePrompt).
	Console *review.Console
	// Progress receives progress events (default: none).
	Progress Progress
	// Tracer receives spans (default: none).
	Tracer Tracer
	// Cache is the cache mode of steps with `cache: true` (default session).
	Cache string
	// LeaseTTL is how long the runner's lease lives without a heartbeat
	// (default DefaultLeaseTTL; heartbeats every TTL/3).
	LeaseTTL time.Duration
	// LeasePrefix starts the id of the runner's lease (default "run"), so
	// a listing can tell who drives a flow (the MCP server's background
	// runs use "bg").
	LeasePrefix string
	// KeepLeaseOnStop, when it returns true as an interrupted run ends,
	// leaves the run's leases to expire instead of releasing them: the
	// holder is going away and another process may take the flow over
	// (the MCP server's background runs when the server stops). Nil:
	// released.
	KeepLeaseOnStop func() bool
	// HandBack gives the flows back to agents when the run ends (driver
	// "agent", engine.Leases.HandBack) instead of leaving them a runner's:
	// the MCP server's background runs drive flows for an agent.
	HandBack bool
	// WorktreeRoot is where fan-out tasks get their git worktrees (default
	// $STRATUM_HOME/worktrees); KeepWorktrees leaves them (and their
	// branches) in place, their paths printed to Log.
	WorktreeRoot  string
	KeepWorktrees bool
	Log           io.Writer
}

// Outcome is how a run ended.
type Outcome struct {
	FlowID   string
	FlowName string
	Status   string // one of the End* constants
	ExitCode int
	// Final is the engine's last answer: an outcome (the completion,
	// budget_exhausted…) or FinalErr (an error envelope such as
	// retries_exhausted or an invalid plan).
	Final    engine.Outcome
	FinalErr error
	// Gate is the gate the run stopped at (EndGate).
	Gate *review.PendingReview
	// Message explains failures and stops in one line.
	Message string
	// Steps are per-step results in first-run order (for JUnit).
	Steps []*StepReport
	// Spec is the parsed spec of the flow (nil for EndInvalid).
	Spec *specs.Spec
	// NotRun: the run never started driving the flow (EndInvalid, or a
	// resume refused because another runner holds the lease); no progress
	// line said why, so Conclude prints Message.
	NotRun bool
	// Handoff is the step the run stopped at because it cannot execute it
	// in-process (no executor for its kind, or no LLM provider): an agent
	// can do it through MCP and the flow goes on (Status is EndError).
	Handoff *Handoff
}

// Handoff names a step a run left to an agent.
type Handoff struct {
	StepID string
	Mode   string // the step's mode (specs.Step.StepMode)
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
	Tokens     int64 // spent by the step's attempts (LLM calls)
	Violations []string
	CacheHit   bool
}

// Runner drives flows in-process. A Runner may run one flow at a time.
type Runner struct {
	svc  *engine.Service
	opts Options

	holder *Holder
	beat   sync.Mutex // held by a heartbeat round and by releases
	mu     sync.Mutex
	held   map[string]bool // flows under our lease

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
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.Gates.OnGate == "" {
		opts.Gates.OnGate = review.OnGateExit
	}
	if opts.LeasePrefix == "" {
		opts.LeasePrefix = "run"
	}
	r := &Runner{
		svc:     opts.Service,
		opts:    opts,
		held:    map[string]bool{},
		session: map[string]any{},
		reports: map[string]*StepReport{},
	}
	r.holder = NewHolder(opts.LeasePrefix, opts.LeaseTTL, r.now)
	return r
}

// LeaseID is the id of the runner's lease.
func (r *Runner) LeaseID() string { return r.holder.ID() }

func (r *Runner) now() time.Time {
	if r.svc.Now != nil {
		return r.svc.Now()
	}
	return time.Now().UTC()
}

func (r *Runner) report() engine.ReportOptions { return engine.ReportOptions{Actor: r.holder.ID()} }

// flowCtx is one flow being driven (a child flow has a parent).
type flowCtx struct {
	id     string
	spec   *specs.Spec
	flow   *specs.Flow
	dir    string
	parent *flowCtx
	call   callState
	// round is the flow's round (the revises of its gates so far): the
	// progress lines name it once a revise sent the flow back.
	round int
}

// callState is the per-call budget envelope of the step being executed
// (all attempts of one dispatch of the step).
type callState struct {
	stepID string
	start  time.Time
	usd    float64
	tokens int64
	// attempt is the attempt under way, counted in the flow's round as the
	// engine counts it (retries, STRATUM_ATTEMPT): the one counter the
	// progress lines show. dur, unpriced and cached are the call's time,
	// whether an attempt spent at an unknown price, and whether its result
	// came from the cache: its result line counts this call, not the run.
	attempt  int
	dur      time.Duration
	unpriced bool
	cached   bool
}

// Start plans flowName of sp with inputs (validated by the engine, workflow
// defaults applied) under the runner's lease and drives it to its end, a
// gate stop, or an interruption. sp.File should be the spec's path (its
// directory is the commands' default working directory).
func (r *Runner) Start(ctx context.Context, sp *specs.Spec, flowName string, inputs map[string]any) (*Outcome, error) {
	if out := r.refuseUnpriced(sp, flowName); out != nil {
		return out, nil
	}
	lease := r.holder.Lease()
	specFile := sp.File
	if specFile != "" {
		if abs, err := filepath.Abs(specFile); err == nil {
			specFile = abs
		}
	}
	out, err := r.svc.Plan(ctx, string(sp.Source), flowName, inputs, engine.PlanOptions{
		SpecFile: specFile, Driver: state.DriverRunner, Owner: &lease,
	})
	if e := engine.AsError(err); e != nil {
		return &Outcome{FlowName: flowName, Status: EndInvalid, ExitCode: ExitUsage, FinalErr: e, Message: e.Message, Spec: sp}, nil
	}
	if err != nil {
		return nil, err
	}
	flowID := engine.FlowIDOf(out)
	fc := &flowCtx{id: flowID, spec: sp, flow: sp.Flows[flowName], dir: specDir(specFile)}
	r.hold(flowID)
	r.emit(Event{Kind: EventFlowStarted, FlowID: flowID, FlowName: flowName, Spec: sp})
	return r.driveRoot(ctx, fc, out, nil)
}

// Resume continues a flow whose runner died or was interrupted (or that an
// agent drove so far): it takes the lease (a live lease of a process that no
// longer exists on this host is taken over), then drives the flow from its
// current dispatch. Steps whose completion was recorded are never run again.
func (r *Runner) Resume(ctx context.Context, flowID string) (*Outcome, error) {
	st, err := r.svc.Query().Get(ctx, flowID)
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
	if st.IsLibrary() {
		return &Outcome{FlowID: flowID, FlowName: st.FlowName, Status: EndInvalid, ExitCode: ExitUsage,
			Message: fmt.Sprintf("flow %s is run by a Go program (driver library) and cannot be resumed: run the program again (a new flow); while its program runs, its open reviews are decided with stratum gate or stratum tui; once it has exited (stalled), end the flow with stratum kill %s --reason TEXT", flowID, flowID)}, nil
	}
	sp, ds := specs.Parse(st.SpecFile, []byte(st.RawSpec), exprlang.Compile)
	if sp == nil || ds.HasErrors() {
		return &Outcome{FlowID: flowID, Status: EndInvalid, ExitCode: ExitUsage, Message: "the flow's stored spec no longer parses: " + ds.Error()}, nil
	}
	flow := sp.Flows[st.FlowName]
	if flow == nil {
		return &Outcome{FlowID: flowID, Status: EndInvalid, ExitCode: ExitUsage, Message: fmt.Sprintf("flow %q not in the stored spec", st.FlowName)}, nil
	}
	if out := r.refuseUnpriced(sp, st.FlowName); out != nil {
		out.FlowID = flowID
		return out, nil
	}
	if err := r.claim(ctx, st); err != nil {
		return &Outcome{FlowID: flowID, FlowName: st.FlowName, Status: EndError, ExitCode: ExitFailed, Message: err.Error(), Spec: sp, NotRun: true}, nil
	}
	r.hold(flowID)
	out, err := r.svc.Resume(ctx, flowID)
	if err != nil && engine.AsError(err) == nil {
		r.releaseAll()
		return nil, err
	}
	fc := &flowCtx{id: flowID, spec: sp, flow: flow, dir: specDir(st.SpecFile), round: st.Round}
	r.emit(Event{Kind: EventFlowStarted, FlowID: flowID, FlowName: st.FlowName, Spec: sp, Resumed: true})
	return r.driveRoot(ctx, fc, out, engine.AsError(err))
}

// driveRoot drives the root flow with heartbeats and turns its end into an
// Outcome. The lease is released at the end (also on interruption: the flow
// is resumable at once).
func (r *Runner) driveRoot(ctx context.Context, fc *flowCtx, first engine.Outcome, firstErr *engine.Error) (*Outcome, error) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hbCtx, hbStop := context.WithCancel(runCtx)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		r.heartbeat(hbCtx, cancel)
	}()
	end, err := r.drive(runCtx, fc, first, firstErr)
	hbStop()
	<-hbDone
	r.markRemaining(fc, "pending")
	if interrupted := err != nil || end == nil || end.status == EndInterrupted; !interrupted || r.opts.KeepLeaseOnStop == nil || !r.opts.KeepLeaseOnStop() {
		r.releaseAll()
	}
	if err != nil && runCtx.Err() == nil {
		return nil, err
	}
	if err != nil || end.status == EndInterrupted {
		msg := "interrupted; the flow is saved: " + r.cmd("run --resume "+fc.id)
		if c := context.Cause(runCtx); c != nil && !errors.Is(c, context.Canceled) {
			msg = c.Error() + "; " + msg
		}
		end = &endState{status: EndInterrupted, message: msg}
	}
	out := &Outcome{FlowID: fc.id, FlowName: fc.flow.Name, Status: end.status, Final: end.out, Gate: end.gate,
		Message: end.message, Steps: r.order, Spec: fc.spec, Handoff: end.handoff}
	if end.err != nil {
		out.FinalErr = end.err
	}
	out.ExitCode = exitCode(end.status)
	if end.exit != 0 {
		out.ExitCode = end.exit
	}
	r.emit(Event{Kind: EventFlowFinished, FlowID: fc.id, FlowName: fc.flow.Name, Step: findStep(fc.spec, end.stepID()), Status: end.status, Message: end.message, Gate: end.gate, Spec: fc.spec})
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

// endState is how driving one flow ended: the engine's last answer (out,
// or err for an error envelope), the gate it stopped at, and a message.
type endState struct {
	status  string
	out     engine.Outcome
	err     *engine.Error
	gate    *review.PendingReview
	message string
	exit    int      // the exit status when it is not the status's own (0)
	handoff *Handoff // the step the run cannot execute in-process
}

// stepID is the step the flow ended at, when the last answer names one.
func (e *endState) stepID() string {
	if id := dispatchedStep(e.out); id != "" {
		return id
	}
	if b, ok := e.out.(*engine.BudgetExhausted); ok {
		return b.StepID
	}
	if e.err != nil {
		return e.err.StepID
	}
	return ""
}

// dispatchedStep is the step a dispatch asks for ("" for other answers).
func dispatchedStep(o engine.Outcome) string {
	switch o := o.(type) {
	case *engine.StepDispatch:
		return o.StepID
	case *engine.ParallelDispatch:
		return o.StepID
	case *engine.GateDispatch:
		return o.StepID
	case *engine.ChildDispatch:
		return o.ParentStepID
	}
	return ""
}

func specDir(file string) string {
	if file == "" {
		wd, _ := os.Getwd()
		return wd
	}
	return filepath.Dir(file)
}

// drive runs the flow from its current answer until it ends or the run
// stops. Each step of the loop hands one answer to its handler, which
// reports into the engine and returns the next answer.
func (r *Runner) drive(ctx context.Context, fc *flowCtx, out engine.Outcome, failure *engine.Error) (*endState, error) {
	for {
		if err := ctx.Err(); err != nil {
			return &endState{status: EndInterrupted}, nil
		}
		if failure != nil {
			if failure.Failed() {
				msg := failure.Message
				if failure.Type == engine.ErrTypeOutputContract {
					msg += ": " + strings.Join(failure.Violations, "; ")
				}
				return &endState{status: EndFailed, err: failure, message: msg}, nil
			}
			return &endState{status: EndError, err: failure, message: fmt.Sprintf("%s: %s", failure.Type, failure.Message)}, nil
		}
		var next turn
		var err error
		switch o := out.(type) {
		case *engine.StepDispatch:
			next, err = r.runStep(ctx, fc, o)
		case *engine.GateDispatch:
			next, err = r.gate(ctx, fc, o)
		case *engine.ChildDispatch:
			next, err = r.child(ctx, fc, o)
		case *engine.ParallelDispatch:
			next, err = r.parallel(ctx, fc, o)
		case *engine.Completion:
			r.markRemaining(fc, "skipped")
			if o.Status == state.StatusKilled {
				return &endState{status: EndKilled, out: o, message: "the flow was killed at a gate"}, nil
			}
			return &endState{status: EndComplete, out: o}, nil
		case *engine.BudgetExhausted:
			return &endState{status: EndBudget, out: o, message: "budget exhausted: " + o.Reason}, nil
		case *engine.Stopped:
			if o.Status == state.StatusBudgetExhausted {
				return &endState{status: EndBudget, out: o, message: "budget exhausted"}, nil
			}
			return &endState{status: EndFailed, out: o, message: "the flow has failed"}, nil
		case nil:
			return nil, errors.New("engine returned no answer")
		default:
			return &endState{status: EndError, out: o, message: fmt.Sprintf("unexpected engine answer %q", o.WireStatus())}, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return &endState{status: EndInterrupted}, nil
			}
			return nil, err
		}
		if next.end != nil {
			return next.end, nil
		}
		out, failure = next.out, next.err
	}
}

// turn is what a handler of one answer produced: the engine's next answer
// (out, or err for an error envelope), or the end of the run.
type turn struct {
	out engine.Outcome
	err *engine.Error
	end *endState
}

// answered wraps a service call's answer: an *engine.Error becomes the
// step's err, any other error is returned.
func answered(out engine.Outcome, err error) (turn, error) {
	if e := engine.AsError(err); e != nil {
		return turn{err: e}, nil
	}
	if err != nil {
		return turn{}, err
	}
	return turn{out: out}, nil
}

// stop ends the run with an end state.
func stop(end *endState) (turn, error) { return turn{end: end}, nil }

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
