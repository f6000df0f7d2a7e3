package engine

import (
	"time"

	"github.com/stratum-go/stratum/engine/internal/contract"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Dispatch statuses.
const (
	dispatchExecuteStep = "execute_step"
	dispatchAwaitGate   = "await_gate"
	dispatchExecuteFlow = "execute_flow"
	dispatchParallel    = "parallel_dispatch"
)

// Gate policies.
const (
	policyGate   = "gate"
	policyFlag   = "flag"
	policySkip   = "skip"
	policySkipIf = "skip_if" // the effective_policy of a gate auto-approved by skip_if
)

// currentDispatch computes what the flow does now: applies skip_if at the
// cursor (writing SkipRecords, advancing, repeatedly), the policy loop
// (auto-resolving flag/skip gates with PolicyRecords, with the visited-set
// cycle guard), answers cacheable steps of an agent-driven flow from the
// result cache (resultcache.go), creates child flows for flow: steps, and returns the dispatch
// of the current step, or the completion/killed payload when the cursor is
// past the end. It updates st.Status / st.Gate / st.DispatchedAt.
//
// An error is an execution_error *Error (a $-reference that does not
// resolve, an unknown child flow): the caller answers it and discards the
// state.
func currentDispatch(st *state.FlowState, env transitionEnv) (transitionResult, error) {
	ensureMaps(st)
	var res transitionResult
	visited := map[string]bool{}
	failedPolicy := "" // the policy that could not approve the gate the loop stopped at
	for !pastEnd(st, env) {
		step := currentStep(st, env)
		if step.SkipIf != nil && !visited[step.ID] && skipIfTrue(st, env, step) {
			if step.IsGate() {
				visited[step.ID] = true
				if humanOnly(step) {
					failedPolicy = policySkipIf
					break
				}
				rationale := step.SkipReason
				if rationale == "" {
					rationale = "skip_if: " + step.SkipIf.Source
				}
				st.StepOutputs[step.ID] = nil
				autoApprove(st, env, step, policySkipIf, rationale, &res)
				continue
			}
			reason := step.SkipReason
			if reason == "" {
				reason = "skip_if: " + step.SkipIf.Source
			}
			skipCurrent(st, env, step, reason, &res)
			continue
		}
		if step.IsGate() && (step.Policy == policyFlag || step.Policy == policySkip) && !visited[step.ID] {
			visited[step.ID] = true
			if humanOnly(step) {
				failedPolicy = step.Policy
				break
			}
			autoApprove(st, env, step, step.Policy, "policy: "+step.Policy+" — auto-approved", &res)
			continue
		}
		if answeredFromCache(st, env, step, &res) {
			continue
		}
		break
	}
	if pastEnd(st, env) {
		if e := outputContractFailure(st, env, &res); e != nil {
			res.Err = e
			return res, nil
		}
		res.Outcome = finish(st, env, &res)
		return res, nil
	}
	step := currentStep(st, env)
	out, err := dispatchStep(st, env, step, &res)
	if err != nil {
		return transitionResult{}, err
	}
	if failedPolicy != "" {
		notePolicyFallback(&res, step.ID, failedPolicy)
	}
	res.Outcome = out
	return res, nil
}

// humanOnly reports whether a gate may be decided by a human only
// (approver: human): no policy — flag, skip, a true skip_if — may approve
// it. Such a policy fails, and the gate falls back to waiting for a
// reviewer (policy_fallback: gate, the only fallback that can apply; the
// validator requires it to be written for flag and skip).
func humanOnly(step *specs.Step) bool {
	return step.IsGate() && step.Fn != nil && step.Fn.Approver == string(review.HumanApprover)
}

// notePolicyFallback marks the gate_opened event of a gate whose policy
// failed with the policy and why, for the trace and the reviewer.
func notePolicyFallback(res *transitionResult, stepID, policy string) {
	for i := len(res.Events) - 1; i >= 0; i-- {
		if ev := &res.Events[i]; ev.Type == EventGateOpened && ev.StepID == stepID {
			if p, ok := ev.Data.(GateOpened); ok {
				p.Policy, p.PolicyFailed = policy, "approver: human"
				ev.Data = p
			}
			return
		}
	}
}

// skipIfTrue evaluates a step's skip_if; any evaluation error means "don't
// skip" (upstream-behavior §2.9).
func skipIfTrue(st *state.FlowState, env transitionEnv, step *specs.Step) bool {
	ok, err := evalBool(env.context(), step.SkipIf, specs.EvalEnv{Refs: refResolver(st), Root: env.Root})
	return err == nil && ok
}

// skipCurrent records a skip of the current (non-gate) step, sets its output
// to null and advances.
func skipCurrent(st *state.FlowState, env transitionEnv, step *specs.Step, reason string, res *transitionResult) {
	rec := newRecord(st, env, state.RecordSkip, step.ID)
	rec.SkipReason = reason
	st.Records = append(st.Records, rec)
	st.StepOutputs[step.ID] = nil
	delete(st.DispatchedAt, step.ID)
	if st.ActiveIteration != nil && st.ActiveIteration.StepID == step.ID {
		st.ActiveIteration = nil
	}
	if step.Kind == specs.KindFlow {
		st.ActiveChildFlowID = nil
	}
	res.Events = append(res.Events, event(st, env, step.ID, StepSkipped{Reason: reason}))
	advanceLinear(st, env)
}

// autoApprove resolves a gate without a human: a PolicyRecord (never a
// GateRecord), then on_approve (null → the flow completes).
func autoApprove(st *state.FlowState, env transitionEnv, step *specs.Step, policy, rationale string, res *transitionResult) {
	rec := newRecord(st, env, state.RecordPolicy, step.ID)
	rec.EffectivePolicy = policy
	rec.ResolvedOutcome = string("approve")
	rec.Rationale = rationale
	st.Records = append(st.Records, rec)
	delete(st.DispatchedAt, step.ID)
	if st.Gate != nil && st.Gate.StepID == step.ID {
		st.Gate = nil
	}
	res.Events = append(res.Events, event(st, env, step.ID, GateResolved{
		Outcome: string(review.Approve), Channel: "policy", Policy: policy, Rationale: rationale, Round: st.Round,
	}))
	jumpOrEnd(st, env, step.OnApprove)
}

// jumpOrEnd moves the cursor to the named step, or past the end when target
// is "" (or, defensively, unknown).
func jumpOrEnd(st *state.FlowState, env transitionEnv, target string) {
	if target == "" {
		st.CurrentIdx = totalSteps(env)
		return
	}
	if i := stepIndex(env, target); i >= 0 {
		st.CurrentIdx = i
		return
	}
	st.CurrentIdx = totalSteps(env)
}

// stampDispatch records when a step was dispatched (once per dispatch: the
// entry is dropped when the step reports, fails an attempt or is cleared) and
// reports whether this call stamped it.
func stampDispatch(st *state.FlowState, env transitionEnv, stepID string) bool {
	if _, ok := st.DispatchedAt[stepID]; ok {
		return false
	}
	st.DispatchedAt[stepID] = env.Now
	return true
}

// dispatchStep builds the dispatch of a step (upstream-behavior §2.3).
func dispatchStep(st *state.FlowState, env transitionEnv, step *specs.Step, res *transitionResult) (Outcome, error) {
	idx := st.CurrentIdx
	if stampDispatch(st, env, step.ID) {
		res.Events = append(res.Events, event(st, env, step.ID, StepDispatched{StepMode: step.StepMode()}))
	}
	if step.IsGate() {
		return dispatchGate(st, env, step, res), nil
	}
	st.Status = state.StatusRunning
	st.Gate = nil
	switch step.Kind {
	case specs.KindFlow:
		return dispatchChild(st, env, step, res)
	case specs.KindParallelDispatch, specs.KindPipeline:
		tasks, err := resolveValue(st, step.Source)
		if err != nil {
			return nil, err
		}
		var stages []any
		if step.Kind == specs.KindPipeline {
			tasks, stages = pipelineDispatchTasks(step, tasks), pipelineStages(step)
		}
		d := &ParallelDispatch{
			FlowID:           st.FlowID,
			StepNumber:       idx + 1,
			TotalSteps:       totalSteps(env),
			StepID:           step.ID,
			StepMode:         step.StepMode(),
			Tasks:            tasks,
			Agent:            step.Agent,
			MaxConcurrent:    orInt(step.MaxConcurrent, 3),
			Isolation:        orStr(step.Isolation, "worktree"),
			Require:          orStr(step.Require, "all"),
			Merge:            orStr(step.Merge, "sequential_apply"),
			IntentTemplate:   step.IntentTemplate,
			Ensure:           ensureSources(step),
			RetriesRemaining: retriesRemaining(st, step),
		}
		if cmds := ResolvePreMergeVerify(st, step); len(cmds) > 0 {
			d.PreMergeVerify = cmds
		}
		if step.Kind == specs.KindPipeline {
			d.Pipeline, d.Stages = true, stages
		}
		d.ReviseFeedback = reviseFeedback(st, step)
		return d, nil
	}
	inputs, err := resolveInputs(st, step)
	if err != nil {
		return nil, err
	}
	d := &StepDispatch{
		FlowID:           st.FlowID,
		StepNumber:       idx + 1,
		TotalSteps:       totalSteps(env),
		StepID:           step.ID,
		StepMode:         step.StepMode(),
		Agent:            step.Agent,
		Inputs:           inputs,
		OutputContract:   step.OutputContract,
		OutputFields:     outputFields(env, step),
		Ensure:           ensureSources(step),
		RetriesRemaining: retriesRemaining(st, step),
	}
	switch step.Kind {
	case specs.KindFunction:
		d.Function = step.Function
		if step.Fn != nil {
			d.Mode = string(step.Fn.Mode)
		}
		d.Intent = step.Intent
	case specs.KindInline:
		d.Intent = stepIntent(step)
		d.Model = step.Model
	case specs.KindJudge:
		d.Judge = step.Judge
		d.OutputFields = nil
	default: // decompose
		d.Intent = stepIntent(step)
	}
	d.ReviseFeedback = reviseFeedback(st, step)
	return d, nil
}

// reviseFeedback is the decision that sent the flow back to step: the
// revise gate record of the previous round, while step is the round's
// start (the on_revise target) and has not completed in this round yet.
func reviseFeedback(st *state.FlowState, step *specs.Step) *ReviseFeedback {
	if st.Round == 0 || st.RoundStartStepID == nil || *st.RoundStartStepID != step.ID || len(st.Rounds) == 0 {
		return nil
	}
	for _, r := range st.Records {
		if r.Type == state.RecordStep && r.StepID == step.ID {
			return nil
		}
	}
	prev := st.Rounds[len(st.Rounds)-1]
	for i := len(prev) - 1; i >= 0; i-- {
		if r := prev[i]; r.Type == state.RecordGate && r.Outcome == string(review.Revise) {
			return &ReviseFeedback{Gate: r.StepID, Round: r.Round, Rationale: r.Rationale, Reviewer: r.Reviewer, Channel: r.Channel}
		}
	}
	return nil
}

// dispatchGate builds await_gate and opens (or keeps) the persisted pending
// gate. The deadline is stamped when the gate of this round is first
// dispatched and never re-stamped (a resume does not reset it).
//
// Besides the original's keys the dispatch carries two of ours (the only
// additions to any dispatch object): deadline (the persisted absolute
// deadline, RFC 3339, null without a timeout) and approver ("any" or
// "human": a human gate refuses decisions through MCP).
func dispatchGate(st *state.FlowState, env transitionEnv, step *specs.Step, res *transitionResult) *GateDispatch {
	st.Status = state.StatusAwaitingGate
	if st.Gate == nil || st.Gate.StepID != step.ID || st.Gate.Round != st.Round {
		g := &state.PendingGate{StepID: step.ID, Round: st.Round, DispatchedAt: env.Now, OnTimeout: "kill", Approver: "any"}
		if step.Fn != nil {
			if step.Fn.Timeout > 0 {
				d := specs.After(env.Now, int64(step.Fn.Timeout), time.Second)
				g.Deadline = &d
			}
			g.OnTimeout = orStr(step.Fn.OnTimeout, "kill")
			g.Approver = orStr(step.Fn.Approver, "any")
		}
		st.Gate = g
		data := GateOpened{Round: st.Round, Approver: g.Approver}
		if g.Deadline != nil {
			dl := g.Deadline.UTC()
			data.Deadline = &dl
		}
		res.Events = append(res.Events, event(st, env, step.ID, data))
	}
	d := &GateDispatch{
		FlowID:     st.FlowID,
		StepNumber: st.CurrentIdx + 1,
		TotalSteps: totalSteps(env),
		StepID:     step.ID,
		Function:   step.Function,
		Agent:      step.Agent,
		OnApprove:  step.OnApprove,
		OnRevise:   step.OnRevise,
		OnKill:     step.OnKill,
		Approver:   review.Approver(st.Gate.Approver),
	}
	if step.Fn != nil && step.Fn.Timeout > 0 {
		d.Timeout = step.Fn.Timeout
	}
	if st.Gate.Deadline != nil {
		dl := *st.Gate.Deadline
		d.Deadline = &dl
	}
	return d
}

// finish builds the payload of a flow whose cursor is past the end and marks
// it finished: {status, flow_id, output, trace, total_duration_ms}, status =
// terminal_status or "complete" (README, "Deliberate differences": all-skipped flows complete too).
func finish(st *state.FlowState, env transitionEnv, res *transitionResult) *Completion {
	status := state.StatusComplete
	if killedMode(st) {
		status = state.StatusKilled
	}
	if st.Status != status {
		st.Status = status
		res.Events = append(res.Events, event(st, env, "", FlowFinished{Status: string(status)}))
	}
	st.Gate = nil
	st.ActiveChildFlowID = nil
	return completionPayload(st, env, status)
}

// outputContractFailure checks the output of a flow about to complete
// against the flow's `output:` contract (seed 000: a flow's declared return
// type). An output that does not fit ends the flow failed, as an exhausted
// step does, with error output_contract_failed and the violations; nil when
// it fits, when the flow declares no contract or ends killed. The original
// server never compares them (README, "Deliberate differences").
func outputContractFailure(st *state.FlowState, env transitionEnv, res *transitionResult) *Error {
	if env.Flow == nil || env.Flow.Output == "" || env.Spec == nil || killedMode(st) {
		return nil
	}
	c := contract.Of(env.Spec, env.Flow.Output)
	vs := c.Check(flowOutput(st, env))
	if len(vs) == 0 {
		return nil
	}
	st.Status = state.StatusFailed
	st.Gate = nil
	st.ActiveChildFlowID = nil
	res.Events = append(res.Events, event(st, env, "", FlowFinished{Status: string(state.StatusFailed)}))
	e := refusal(ErrTypeOutputContract, "Flow '%s' output does not fit its output contract '%s'", env.Flow.Name, c.Name())
	e.FlowID, e.Violations = st.FlowID, vs
	return e
}

// completionPayload is the completion object. output is the output of the
// last ordered step whose output is non-null; trace is the current round's
// records.
func completionPayload(st *state.FlowState, env transitionEnv, status state.FlowStatus) *Completion {
	return &Completion{
		Status:          status,
		FlowID:          st.FlowID,
		Output:          flowOutput(st, env),
		HasOutput:       true,
		Trace:           copyRecords(st.Records),
		TotalDurationMS: durationMS(st.FlowStart, env.Now),
	}
}

// killedPayload is the answer to a kill with no cleanup step (no output).
func killedPayload(st *state.FlowState, env transitionEnv) *Completion {
	return &Completion{
		Status:          state.StatusKilled,
		FlowID:          st.FlowID,
		Trace:           copyRecords(st.Records),
		TotalDurationMS: durationMS(st.FlowStart, env.Now),
	}
}

// flowOutput is the output of the last ordered step with a non-null output.
func flowOutput(st *state.FlowState, env transitionEnv) any {
	for i := totalSteps(env) - 1; i >= 0; i-- {
		s := stepAt(env, i)
		if s == nil {
			continue
		}
		if v, ok := st.StepOutputs[s.ID]; ok && v != nil {
			return v
		}
	}
	return nil
}

// stepIntent is the intent an agent is given for a step: step.Intent, with
// the original's reasoning-certificate instruction block appended for claude
// steps (agent unset, "claude" or "claude:<profile>") that declare a
// reasoning_template. StepDone checks such a step's result.artifact for the
// certificate's sections, so in-process executors should prompt with this.
func stepIntent(step *specs.Step) string {
	if t, ok := stepCertTemplate(step); ok {
		return t.inject(step.Intent)
	}
	return step.Intent
}

func ensureSources(step *specs.Step) []string {
	out := make([]string, 0, len(step.Ensure))
	for _, e := range step.Ensure {
		if e != nil {
			out = append(out, e.Source)
		}
	}
	return out
}

func retriesRemaining(st *state.FlowState, step *specs.Step) int {
	return maxRetries(step) - st.Attempts[step.ID]
}

// maxRetries is the step's total number of attempts (at least 1).
func maxRetries(step *specs.Step) int {
	if step.Retries < 1 {
		return 1
	}
	return step.Retries
}

// outputFields is {field: type} of the step's output contract ({} if none).
func outputFields(env transitionEnv, step *specs.Step) map[string]string {
	if env.Spec != nil && step.OutputContract != "" {
		if c := env.Spec.Contracts[step.OutputContract]; c != nil {
			return c.FieldTypes()
		}
	}
	return map[string]string{}
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}
