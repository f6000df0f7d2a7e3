package engine

import (
	"fmt"
	"maps"
	"strings"

	"github.com/stratum-go/stratum/engine/internal/fanout"
	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// parallelDone is stratum_parallel_done, the consumer path of a
// parallel_dispatch step (upstream-behavior §2.15). It builds the aggregate
// {tasks, merge_status, completed, failed, outcome} — completed and failed
// are the task lists, a task being complete only when its status is
// "complete" — which goes through the normal check/retry handling; when the
// checks pass but the merge (conflict, reported first) or `require` fail,
// the attempt fails as ensure_failed with the original's violation texts.
//
// mergeStatus is "clean" / "conflict" or {status, bounced_tasks}.
func parallelDone(st *state.FlowState, env transitionEnv, stepID string, taskResults []any, mergeStatus any) (transitionResult, error) {
	return parallelDoneDetailed(st, env, ParallelReport{StepID: stepID, TaskResults: taskResults, MergeStatus: mergeStatus})
}

// parallelDoneDetailed is parallelDone; details follow a merge or require
// violation (ParallelReport.Details).
func parallelDoneDetailed(st *state.FlowState, env transitionEnv, r ParallelReport) (transitionResult, error) {
	ensureMaps(st)
	step, e := reportable(st, env, r.StepID, parallelDoneReport)
	if e != nil {
		return refused(e), nil
	}
	if step.Kind == specs.KindPipeline && !r.Executed && hasFanoutRegion(step) {
		return refused(refusal(ErrTypeFanoutServerOnly, "Pipeline step '%s' uses fanout/join — fanned-out pipelines are server-dispatched only (use stratum_parallel_start, not stratum_parallel_done).", step.ID)), nil
	}
	tasks := r.TaskResults
	if tasks == nil {
		tasks = []any{}
	}
	tasks, certNotes := checkTaskCertificates(step, tasks)
	ms := mergeStatusString(r.MergeStatus)
	bounced := bouncedTasks(st, step, r.MergeStatus)
	certNotes = append(certNotes, bounceViolations(bounced)...)
	var agg map[string]any
	var requireViolation string
	if step.Kind == specs.KindPipeline {
		var err error
		agg, requireViolation, err = pipelineAggregate(st, step, tasks, ms)
		if err != nil {
			if e := AsError(err); e != nil {
				return refused(e), nil
			}
			return transitionResult{}, err
		}
	} else {
		agg, requireViolation = parallelAggregate(step, tasks, ms)
	}
	var violations []string
	switch {
	case ms == "conflict":
		violations = []string{"merge conflict: merge_status='conflict'"}
	case requireViolation != "":
		violations = []string{requireViolation}
	}
	outcome := "complete"
	if len(violations) > 0 {
		outcome = "failed"
		violations = append(violations, r.Details...)
	}
	agg["outcome"] = outcome
	if len(bounced) > 0 {
		agg["bounced_tasks"] = bounced
	}
	keepConflictBounces(st, step, r.MergeStatus)
	res, err := processResult(st, env, step, agg, "", func(any) []string { return violations }, certNotes)
	if n := NotesOf(res.Outcome); n != nil && (n.Failure != "" || n.RoutedFrom != "") {
		n.BouncedTasks = bounced
	}
	if e := res.Err; e != nil && e.Type == ErrTypeRetriesExhausted {
		e.BouncedTasks = bounced
	}
	return res, err
}

// bouncedTasks are the fan-out's tasks bounced before merge, as the
// original unifies them: the gate_bounce of each task of the current
// dispatch that failed its pre_merge_verify gate, then the bounced_tasks
// of a {status, bounced_tasks} merge_status (a consumer's merge
// conflicts). Never nil.
func bouncedTasks(st *state.FlowState, step *specs.Step, mergeStatus any) []any {
	out := []any{}
	tasks := st.TasksOf(step.ID)
	for _, id := range sortedKeys(tasks) {
		if t := tasks[id]; t.GateBounce != nil && t.State == state.TaskFailed {
			out = append(out, t.GateBounce)
		}
	}
	if m, ok := mergeStatus.(map[string]any); ok {
		if l, ok := m["bounced_tasks"].([]any); ok {
			out = append(out, l...)
		}
	}
	return out
}

// keepConflictBounces records a consumer's merge-conflict bounces
// ({status, bounced_tasks}) on the tasks of the current dispatch they
// name, as the original's advance does, so a run of the step's next
// attempt tells each task why it bounced.
func keepConflictBounces(st *state.FlowState, step *specs.Step, mergeStatus any) {
	m, ok := mergeStatus.(map[string]any)
	if !ok {
		return
	}
	l, _ := m["bounced_tasks"].([]any)
	key := st.DispatchKey(step.ID)
	for _, b := range l {
		bm, _ := b.(map[string]any)
		id, _ := bm["task_id"].(string)
		rec, _ := st.ParallelTasks[id].(map[string]any)
		if rec == nil || rec["step_id"] != step.ID || rec["dispatch"] != key {
			continue
		}
		// A new record, not the old one changed: states share records
		// (state.FlowState.ShareWith).
		rec = maps.Clone(rec)
		rec["gate_bounce"] = bm
		st.ParallelTasks[id] = rec
	}
}

// PriorBounces are the bounce records left on stepID's tasks by an
// earlier dispatch (the attempt before): task id → record, for the next
// run of each task to be told why its last attempt was not merged.
func PriorBounces(st *state.FlowState, stepID string) map[string]map[string]any {
	out := map[string]map[string]any{}
	key := st.DispatchKey(stepID)
	for id, raw := range st.ParallelTasks {
		rec, _ := raw.(map[string]any)
		if rec == nil || rec["step_id"] != stepID || rec["dispatch"] == key {
			continue
		}
		if b, ok := rec["gate_bounce"].(map[string]any); ok {
			out[id] = b
		}
	}
	return out
}

// ResolvePreMergeVerify is a fan-out step's pre_merge_verify as the
// commands to run (the original's resolve_pre_merge_verify): a list of
// strings as written, a "$…" reference resolved against the flow (a
// reference that does not resolve is no gate), any other string one
// command; empty commands are dropped.
func ResolvePreMergeVerify(st *state.FlowState, step *specs.Step) []string {
	v := step.PreMergeVerify
	if s, ok := v.(string); ok {
		if !strings.HasPrefix(s, "$") {
			v = []any{s}
		} else if r, err := resolveValue(st, s); err == nil {
			v = r
		} else {
			return nil
		}
	}
	var out []string
	switch l := v.(type) {
	case []any:
		for _, c := range l {
			if s, ok := c.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		}
	case []string:
		for _, s := range l {
			if strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// bounceViolations are the violation texts of bounce records (the
// original's).
func bounceViolations(bounced []any) []string {
	var out []string
	for _, b := range bounced {
		m, _ := b.(map[string]any)
		if m == nil {
			continue
		}
		id, _ := m["task_id"].(string)
		if id == "" {
			id = "?"
		}
		switch m["reason"] {
		case "gate_failed":
			code := "None"
			if c, ok := m["exit_code"]; ok && c != nil {
				code = fmt.Sprint(c)
			}
			out = append(out, fmt.Sprintf("task '%s' failed pre-merge gate `%v` (exit %s) — diff NOT merged", id, m["command"], code))
		case "merge_conflict":
			files := "(unknown files)"
			if fs, ok := m["files"].([]any); ok && len(fs) > 0 {
				parts := make([]string, len(fs))
				for i, f := range fs {
					parts[i] = fmt.Sprint(f)
				}
				files = strings.Join(parts, ", ")
			}
			out = append(out, fmt.Sprintf("task '%s' merge conflict on %s", id, files))
		}
	}
	return out
}

// ParallelAggregate is the result a fan-out step's tasks make (without
// its outcome) and whether its require is met: what stratum_parallel_done
// judges, for stratum_parallel_poll to show before it reports. A
// pipeline's counts items.
func ParallelAggregate(st *state.FlowState, step *specs.Step, results []any, mergeStatus string) (map[string]any, bool, error) {
	if step.Kind == specs.KindPipeline {
		agg, v, err := pipelineAggregate(st, step, results, mergeStatus)
		return agg, v == "", err
	}
	agg, v := parallelAggregate(step, results, mergeStatus)
	return agg, v == "", nil
}

// stageCerts reports whether a pipeline stage has its own
// task_reasoning_template.
func stageCerts(step *specs.Step) bool {
	for _, st := range step.Stages {
		if st.TaskReasoningTemplate != nil {
			return true
		}
	}
	return false
}

// taskCert is the certificate template task id is checked against (nil:
// none). A parallel_dispatch's tasks: the step's, on claude steps only (as
// the original's parallel_done). A pipeline's (the original's
// effective_pipeline_task_cert): its stage's template, whatever the agent;
// else the step's, when the stage's agent (or the step's) is claude.
func taskCert(step *specs.Step, id string) any {
	if step.Kind != specs.KindPipeline {
		if a := step.Agent; a != "" && !strings.HasPrefix(a, "claude") {
			return nil
		}
		return step.TaskReasoningTemplate
	}
	_, j, _, ok := fanout.ParsePipelineTaskID(step.ID, id)
	if !ok || j >= len(step.Stages) {
		return nil
	}
	st := step.Stages[j]
	if st.TaskReasoningTemplate != nil {
		return st.TaskReasoningTemplate
	}
	agent := st.Agent
	if agent == "" {
		agent = step.Agent
	}
	if agent != "" && !strings.HasPrefix(agent, "claude") {
		return nil
	}
	return step.TaskReasoningTemplate
}

// parallelAggregate is a parallel_dispatch step's result from its tasks'
// results ({tasks, merge_status, completed, failed}; a task is complete
// only when its status is "complete") and the require's failure text (""
// when satisfied).
func parallelAggregate(step *specs.Step, tasks []any, ms string) (map[string]any, string) {
	completed, failed := []any{}, []any{}
	for _, t := range tasks {
		if m, ok := t.(map[string]any); ok {
			if s, _ := m["status"].(string); s == "complete" {
				completed = append(completed, t)
				continue
			}
		}
		failed = append(failed, t)
	}
	agg := map[string]any{"tasks": tasks, "merge_status": ms, "completed": completed, "failed": failed}
	require := orStr(step.Require, "all")
	if fanout.RequireSatisfied(require, len(completed), len(failed)) {
		return agg, ""
	}
	return agg, fmt.Sprintf("require='%s' not satisfied: %d completed, %d failed", require, len(completed), len(failed))
}

// checkTaskCertificates validates the task_reasoning_template of a
// parallel step against every complete task's result, as the original: a
// task that fails is flipped to status "failed" with error "cert validation:
// …" and cert_violations (on a copy; the caller's maps are not modified), and
// a note "task '<id>' cert: …" is returned for the failure violations. The
// template of a task is taskCert's.
func checkTaskCertificates(step *specs.Step, tasks []any) ([]any, []string) {
	if step.TaskReasoningTemplate == nil && !stageCerts(step) {
		return tasks, nil
	}
	out := make([]any, len(tasks))
	var notes []string
	for i, task := range tasks {
		out[i] = task
		m, ok := task.(map[string]any)
		if !ok || m["status"] != "complete" {
			continue
		}
		id, _ := m["task_id"].(string)
		t, ok := parseCertTemplate(taskCert(step, id))
		if !ok {
			continue
		}
		res := m["result"]
		if res == nil {
			res = map[string]any{}
		}
		vs := t.violations(res)
		if len(vs) == 0 {
			continue
		}
		c := make(map[string]any, len(m)+2)
		for k, v := range m {
			c[k] = v
		}
		joined := strings.Join(vs, "; ")
		c["status"] = "failed"
		c["error"] = "cert validation: " + joined
		c["cert_violations"] = vs
		out[i] = c
		if id == "" {
			id = "?"
		}
		notes = append(notes, fmt.Sprintf("task '%s' cert: %s", id, joined))
	}
	return out, notes
}

func mergeStatusString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		s, _ := x["status"].(string)
		return s
	}
	return "clean"
}
