package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/specs"
)

// executorKind says which executor runs a step.
type executorKind int

const (
	execCommand executorKind = iota
	execInfer
	execAgent
	execJudge
	execUnsupported
)

func kindOf(step *specs.Step) executorKind {
	switch step.Kind {
	case specs.KindFunction:
		if step.Fn != nil && step.Fn.Mode == specs.ModeCompute {
			return execCommand
		}
		return execInfer
	case specs.KindInline, specs.KindDecompose, specs.KindParallelDispatch, specs.KindPipeline:
		switch {
		case step.Run != nil:
			return execCommand
		case step.Agent != "" || stagesNameAgents(step):
			return execAgent
		}
		return execInfer
	case specs.KindJudge:
		return execJudge
	}
	return execUnsupported
}

// stagesNameAgents reports whether a pipeline step's stages all name their
// agent (its tasks need no LLM).
func stagesNameAgents(step *specs.Step) bool {
	for _, st := range step.Stages {
		if st.Agent == "" {
			return false
		}
	}
	return len(step.Stages) > 0
}

func (r *Runner) executor(k executorKind) engine.Executor {
	switch k {
	case execCommand:
		return r.opts.Command
	case execAgent:
		return r.opts.Agent
	case execInfer:
		return r.opts.Infer
	case execJudge:
		return r.judgeExecutor()
	}
	return nil
}

// judgeExecutor runs judge steps with the agents the runner's agent
// executor has (so a configured "judge" agent is the verifier), recording
// each turn under the runner's lease.
func (r *Runner) judgeExecutor() engine.Executor {
	if r.opts.Judge != nil {
		return r.opts.Judge
	}
	v := &AgentVerifier{}
	if ae, ok := r.opts.Agent.(*AgentExecutor); ok {
		v.Agents = ae.Agents
	}
	return &JudgeExecutor{Verifier: v, Record: func(ctx context.Context, t engine.JudgeTurn) error {
		t.ReportOptions = r.report()
		_, err := r.svc.RecordJudge(ctx, t)
		return err
	}}
}

// beginCall notes attempt of step (in the flow's round) as the one under
// way; the first attempt, or another step's, starts a new call (its budget
// envelope and clock).
func (r *Runner) beginCall(fc *flowCtx, stepID string, attempt int) {
	if fc.call.stepID != stepID || attempt == 1 {
		fc.call = callState{stepID: stepID, start: time.Now()}
	}
	fc.call.attempt = attempt
}

// runStep executes one attempt (or, for an iterating step, the iteration
// loop) of the dispatched step and reports it; it returns the engine's next
// answer.
func (r *Runner) runStep(ctx context.Context, fc *flowCtx, d *engine.StepDispatch) (turn, error) {
	step := fc.flow.Step(d.StepID)
	if step == nil {
		return stop(&endState{status: EndError, out: d, message: fmt.Sprintf("dispatched step %q is not in flow %q", d.StepID, fc.flow.Name)})
	}
	kind := kindOf(step)
	if kind == execUnsupported {
		return stop(&endState{status: EndError, out: d, handoff: &Handoff{StepID: step.ID, Mode: step.StepMode()}, message: fmt.Sprintf(
			"step '%s' is a %s step, which `stratum run` does not execute in-process; the flow stays running: drive it through MCP (stratum_resume %s)", step.ID, step.Kind, fc.id)})
	}
	ex := r.executor(kind)
	if ex == nil {
		msg := fmt.Sprintf("step '%s' needs an LLM (infer) but no provider is configured", step.ID)
		if r.opts.InferUnavailable != "" {
			msg += ": " + r.opts.InferUnavailable
		}
		msg += "; " + r.resumable(fc)
		return stop(&endState{status: EndError, out: d, handoff: &Handoff{StepID: step.ID, Mode: step.StepMode()}, message: msg})
	}
	attempt := d.Attempt(step.Retries)
	r.beginCall(fc, step.ID, attempt)
	req := engine.StepRequest{
		FlowID: fc.id, Spec: fc.spec, Flow: fc.flow, Step: step, Dispatch: d, Inputs: d.Inputs,
		Attempt: attempt, Dir: fc.dir,
	}
	if d.Failure != "" {
		// A retry: only the previous attempt's violations (an on_fail
		// target is a fresh step, not a retry).
		req.Violations = d.Violations
	}
	if step.MaxIterations > 0 {
		return r.iterate(ctx, fc, step, kind, ex, req)
	}
	rep := r.stepReport(fc, step)
	view, reason, err := r.budgetView(ctx, fc, step, kind)
	if err != nil {
		return turn{}, err
	}
	if reason != "" {
		return r.exhaust(ctx, fc, step, reason)
	}
	req.Budget = view
	r.emit(Event{Kind: EventStepStarted, FlowID: fc.id, Step: step, Attempt: attempt, Round: fc.round, Spec: fc.spec})

	cacheKey := ""
	if len(req.Violations) == 0 {
		// A retry never reuses the cache: the cached result may be what failed.
		cacheKey = r.cacheKey(fc, step, kind, d.Inputs)
	}
	start := time.Now()
	var out engine.StepOutcome
	var execErr error
	if v, ok, err := r.cacheGet(ctx, fc, cacheKey); err != nil {
		return turn{}, err
	} else if ok {
		out = engine.StepOutcome{Output: v, CacheHit: true}
	} else {
		out, execErr = ex.Execute(r.traceStep(ctx, fc, step.ID, attempt), req)
		execErr = r.redactErr(execErr)
	}
	if execErr == nil {
		execErr = taskGraphError(step, out.Output)
	}
	if execErr == nil {
		execErr = contractError(fc.spec, step, out.Output)
	}
	elapsed := time.Since(start)
	rep.Attempts++
	rep.Duration += elapsed
	fc.call.dur += elapsed
	if out.CacheHit {
		rep.CacheHit = true
	}
	fc.call.cached = out.CacheHit
	call := r.callRecord(fc, step, kind, attempt, elapsed, out, execErr)
	if err := r.recordAncestors(context.WithoutCancel(ctx), fc, call); err != nil {
		return turn{}, err
	}
	if execErr != nil {
		if deadlineSpent(view, execErr) {
			if err := r.book(ctx, fc.id, call); err != nil {
				return turn{}, err
			}
			return r.exhaust(ctx, fc, step, deadlineReason(fc, step))
		}
		return r.attemptFailed(ctx, fc, step, execErr, &call)
	}
	return r.reportResult(ctx, fc, step, cacheKey, out, call)
}

// reportResult reports an attempt's result with its call to the engine
// (StepDone); a fresh result is cached when the step accepts it — in the
// same commit when the global cache takes the entry there (StepReport.Cache),
// else after it.
func (r *Runner) reportResult(ctx context.Context, fc *flowCtx, step *specs.Step, cacheKey string, out engine.StepOutcome, call engine.CallRecord) (turn, error) {
	fresh := cacheKey != "" && !out.CacheHit
	rep := engine.StepReport{FlowID: fc.id, StepID: step.ID, Result: out.Output, Call: &call, ReportOptions: r.report()}
	if out.CacheHit {
		rep.FromCache = cacheKey
	}
	inCommit := false // the global cache's entry is written with the step's state, if accepted
	if fresh {
		var cached []byte
		if cached, inCommit = r.globalCacheValue(cacheKey, out.Output); inCommit {
			rep.Cache = &engine.CacheEntry{Key: cacheKey, Value: cached}
		}
	}
	next, err := answered(r.svc.StepDone(ctx, rep))
	if err != nil {
		return turn{}, err
	}
	accepted := r.noteStepResult(fc, step, next, nil)
	if accepted && fresh && !inCommit {
		if err := r.cachePut(ctx, fc, cacheKey, out.Output); err != nil {
			return turn{}, err
		}
	}
	return next, nil
}

func rootID(fc *flowCtx) string {
	for fc.parent != nil {
		fc = fc.parent
	}
	return fc.id
}

// attemptFailed maps an executor error onto the state machine: an
// AttemptError spends an attempt; budget exhaustion ends the flow; a
// configuration error stops the run (resumable) without spending one.
func (r *Runner) attemptFailed(ctx context.Context, fc *flowCtx, step *specs.Step, execErr error, call *engine.CallRecord) (turn, error) {
	var ae *engine.AttemptError
	spends := errors.As(execErr, &ae) && ae.Kind != engine.AttemptConfig && ctx.Err() == nil
	if call != nil && !spends {
		// The spend is recorded on its own; nothing else is reported.
		if err := r.book(context.WithoutCancel(ctx), fc.id, *call); err != nil {
			return turn{}, err
		}
		call = nil
	}
	if ctx.Err() != nil {
		return stop(&endState{status: EndInterrupted})
	}
	if errors.Is(execErr, engine.ErrBudgetExhausted) {
		return r.exhaust(ctx, fc, step, execErr.Error())
	}
	if ae == nil {
		return stop(&endState{status: EndError, message: fmt.Sprintf("step '%s': %v; %s", step.ID, execErr, r.resumable(fc))})
	}
	if ae.Kind == engine.AttemptConfig {
		return stop(&endState{status: EndError, message: fmt.Sprintf("step '%s': %s; %s", step.ID, ae.Error(), r.resumable(fc))})
	}
	vs := ae.Violations
	if len(vs) == 0 {
		vs = []string{ae.Error()}
	}
	next, err := answered(r.svc.StepAttemptFailed(ctx, engine.AttemptFailure{FlowID: fc.id, StepID: step.ID, Violations: vs, Call: call, ReportOptions: r.report()}))
	if err != nil {
		return turn{}, err
	}
	r.noteStepResult(fc, step, next, vs)
	return next, nil
}

// noteStepResult updates the step report from the engine's answer to a
// report of step and emits progress; it says whether the result was
// accepted (the step completed).
func (r *Runner) noteStepResult(fc *flowCtx, step *specs.Step, next turn, execViolations []string) bool {
	rep := r.stepReport(fc, step)
	if e := next.err; e != nil && e.Type != engine.ErrTypeOutputContract {
		// (A flow whose output fails its contract failed after this step
		// passed: the step is reported passed, the run failed.)
		if e.Type == engine.ErrTypeRetriesExhausted {
			rep.Status = "failed"
			rep.Violations = e.Violations
			r.emit(Event{Kind: EventStepFailed, FlowID: fc.id, Step: step, Attempt: fc.call.attempt, Round: fc.round, Violations: rep.Violations, Spec: fc.spec})
		}
		return false
	}
	if n := engine.NotesOf(next.out); n != nil {
		if n.Failure != "" && dispatchedStep(next.out) == step.ID {
			rep.Violations = n.Violations
			r.emit(Event{Kind: EventAttemptFailed, FlowID: fc.id, Step: step, Attempt: fc.call.attempt, Round: fc.round, Violations: rep.Violations, Spec: fc.spec})
			return false
		}
		if n.RoutedFrom == step.ID {
			rep.Status = "failed"
			rep.Violations = n.Violations
			r.emit(Event{Kind: EventStepFailed, FlowID: fc.id, Step: step, Attempt: fc.call.attempt, Round: fc.round, Violations: rep.Violations, Spec: fc.spec, Message: "routed to on_fail"})
			return false
		}
	}
	rep.Status = "passed"
	rep.Violations = nil
	r.emit(Event{Kind: EventStepDone, FlowID: fc.id, Step: step, Attempt: fc.call.attempt, Round: fc.round, Elapsed: fc.call.dur, CostUSD: callCost(fc), Tokens: fc.call.tokens, CacheHit: fc.call.cached, Spec: fc.spec})
	return true
}

// callCost is the cost of the step's call (its attempts in this round):
// nil when an attempt spent tokens at an unknown price.
func callCost(fc *flowCtx) *float64 {
	if fc.call.unpriced {
		return nil
	}
	c := fc.call.usd
	return &c
}

func costPtr(rep *StepReport) *float64 {
	if !rep.CostKnown {
		return nil
	}
	c := rep.CostUSD
	return &c
}

// callRecord builds the ledger/trace record of one attempt and updates the
// step report and the per-call envelope.
func (r *Runner) callRecord(fc *flowCtx, step *specs.Step, kind executorKind, attempt int, elapsed time.Duration, out engine.StepOutcome, execErr error) engine.CallRecord {
	tokens := out.Usage.Total()
	rep := r.stepReport(fc, step)
	rep.Tokens += tokens
	if out.CostUSD != nil {
		rep.CostUSD += *out.CostUSD
		rep.CostKnown = true
	} else if kind == execCommand {
		rep.CostKnown = true // commands cost nothing
	}
	fc.call.usd += deref(out.CostUSD)
	fc.call.tokens += tokens
	if out.CostUSD == nil && kind != execCommand && tokens > 0 {
		fc.call.unpriced = true
	}
	c := engine.CallRecord{StepID: step.ID, Attempt: attempt, DurationMS: elapsed.Milliseconds(), Tokens: tokens,
		Agent: kind == execAgent, Trace: out.Trace, Executor: executorName(kind), CacheHit: out.CacheHit}
	var ae *engine.AttemptError
	if errors.As(execErr, &ae) {
		c.ErrorKind, c.Violations = ae.Kind, ae.Violations
	}
	cost := out.CostUSD
	if cost == nil && kind == execCommand {
		zero := 0.0
		cost = &zero
	}
	c.CostUSD = cost
	return c
}

// recordAncestors adds a call's spend to the ledgers of the flow's
// ancestors (their flow budgets cover their children): the spend, the
// executor and the child flow that made the call, without its trace record.
func (r *Runner) recordAncestors(ctx context.Context, fc *flowCtx, c engine.CallRecord) error {
	c = engine.CallRecord{StepID: c.StepID, Attempt: c.Attempt, DurationMS: c.DurationMS, Tokens: c.Tokens,
		CostUSD: c.CostUSD, Agent: c.Agent, Executor: c.Executor, ChildFlowID: fc.id}
	for f := fc.parent; f != nil; f = f.parent {
		if err := r.book(ctx, f.id, c); err != nil {
			return err
		}
	}
	return nil
}

// recordCall writes a call's record into the flow and its ancestors.
func (r *Runner) recordCall(ctx context.Context, fc *flowCtx, c engine.CallRecord) error {
	if err := r.book(ctx, fc.id, c); err != nil {
		return err
	}
	return r.recordAncestors(ctx, fc, c)
}

// book records a call's spend on one flow (no report of its result). A
// refusal (the flow is gone, or its lease was lost) books nothing and is not
// an error here: the run notices it at its next report.
func (r *Runner) book(ctx context.Context, flowID string, c engine.CallRecord) error {
	_, err := r.svc.RecordCall(ctx, flowID, c, r.report())
	if engine.AsError(err) != nil {
		return nil
	}
	return err
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func executorName(k executorKind) string {
	switch k {
	case execCommand:
		return "command"
	case execInfer:
		return "infer"
	case execAgent:
		return "agent"
	case execJudge:
		return "judge"
	}
	return "unsupported"
}

// iterate runs an iterating step (max_iterations): it starts the loop (or
// continues the active one after a resume), executes one attempt per
// iteration and reports it, until the engine's exit outcome; then it reports
// the final result with step_done. A failed execution spends an attempt of
// the step (the loop restarts on the retry).
func (r *Runner) iterate(ctx context.Context, fc *flowCtx, step *specs.Step, kind executorKind, ex engine.Executor, req engine.StepRequest) (turn, error) {
	rep := r.stepReport(fc, step)
	st, err := r.svc.Query().Get(ctx, fc.id)
	if err != nil {
		return turn{}, err
	}
	iteration := 0
	switch {
	case st.ActiveIteration != nil && st.ActiveIteration.StepID == step.ID:
		iteration = st.ActiveIteration.Count
	case st.IterationOutcome[step.ID] != "":
		// The loop ended but step_done was not recorded (the runner died).
		hist := st.Iterations[step.ID]
		var last any
		if len(hist) > 0 {
			last = hist[len(hist)-1].Result
		}
		next, err := answered(r.svc.StepDone(ctx, engine.StepReport{FlowID: fc.id, StepID: step.ID, Result: last, ReportOptions: r.report()}))
		if err != nil {
			return turn{}, err
		}
		r.noteStepResult(fc, step, next, nil)
		return next, nil
	default:
		started, err := answered(r.svc.IterationStart(ctx, fc.id, step.ID, r.report()))
		if err != nil || started.err != nil {
			return started, err
		}
	}
	for {
		iteration++
		view, reason, err := r.budgetView(ctx, fc, step, kind)
		if err != nil {
			return turn{}, err
		}
		if reason != "" {
			return r.exhaust(ctx, fc, step, reason)
		}
		req.Budget = view
		req.Iteration = iteration
		r.emit(Event{Kind: EventStepStarted, FlowID: fc.id, Step: step, Attempt: req.Attempt, Round: fc.round, Iteration: iteration, Spec: fc.spec})
		start := time.Now()
		out, execErr := ex.Execute(r.traceStep(ctx, fc, step.ID, req.Attempt), req)
		execErr = r.redactErr(execErr)
		if execErr == nil {
			execErr = contractError(fc.spec, step, out.Output)
		}
		elapsed := time.Since(start)
		rep.Duration += elapsed
		fc.call.dur += elapsed
		call := r.callRecord(fc, step, kind, req.Attempt, elapsed, out, execErr)
		if execErr != nil {
			if err := r.recordAncestors(context.WithoutCancel(ctx), fc, call); err != nil {
				return turn{}, err
			}
			if deadlineSpent(view, execErr) {
				if err := r.book(ctx, fc.id, call); err != nil {
					return turn{}, err
				}
				return r.exhaust(ctx, fc, step, deadlineReason(fc, step))
			}
			rep.Attempts++
			return r.attemptFailed(ctx, fc, step, execErr, &call)
		}
		if err := r.recordCall(ctx, fc, call); err != nil {
			return turn{}, err
		}
		res, err := r.svc.IterationReport(ctx, fc.id, step.ID, out.Output, r.report())
		if e := engine.AsError(err); e != nil {
			return stop(&endState{status: EndError, err: e, message: fmt.Sprintf("iteration report of step '%s' refused: %s", step.ID, e.Message)})
		}
		if err != nil {
			return turn{}, err
		}
		rp, ok := res.(*engine.IterationReported)
		if !ok {
			return stop(&endState{status: EndError, out: res, message: fmt.Sprintf("iteration report of step '%s': unexpected answer %q", step.ID, res.WireStatus())})
		}
		r.emit(Event{Kind: EventIteration, FlowID: fc.id, Step: step, Iteration: iteration, Spec: fc.spec, Message: rp.Outcome})
		if !rp.Exited() {
			continue
		}
		rep.Attempts++
		next, err := answered(r.svc.StepDone(ctx, engine.StepReport{FlowID: fc.id, StepID: step.ID, Result: rp.FinalResult, ReportOptions: r.report()}))
		if err != nil {
			return turn{}, err
		}
		r.noteStepResult(fc, step, next, nil)
		return next, nil
	}
}

// redactErr masks configured secrets (Options.Redact) in an executor's
// error before it becomes violations in the store, progress lines and the
// report: a provider or agent may echo a key back.
func (r *Runner) redactErr(err error) error {
	red := r.opts.Redact
	if err == nil || red.Empty() {
		return err
	}
	var ae *engine.AttemptError
	if errors.As(err, &ae) {
		vs := make([]string, len(ae.Violations))
		for i, v := range ae.Violations {
			vs[i] = red.String(v)
		}
		return &engine.AttemptError{Violations: vs, Kind: ae.Kind}
	}
	if msg := err.Error(); red.String(msg) != msg {
		return &redactedError{msg: red.String(msg), err: err}
	}
	return err
}

// redactedError is an error whose message had secrets masked; errors.Is
// and errors.As still see the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
