package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/specs"
)

// stratum_parallel_poll and stratum_parallel_advance: what the server says
// of a fan-out it (or a server before it, on the same store) runs, and how
// the step moves on once its tasks are settled.

// fanStep reads the flow and the step a poll or an advance is about; resp
// is the original's answer when there is none (flow_not_found,
// unknown_step).
func (s *server) fanStep(ctx context.Context, flowID, stepID string) (*state.FlowState, *specs.Flow, *specs.Step, engine.Response, error) {
	st, _, flow, err := s.fanFlow(ctx, flowID)
	if err != nil {
		if isNotFound(err) {
			return nil, nil, nil, perr("flow_not_found", "No active flow with id '%s'", flowID), nil
		}
		return nil, nil, nil, nil, err
	}
	step := flow.Step(stepID)
	if step == nil {
		return nil, nil, nil, perr("unknown_step", "Step '%s' not found in flow", stepID), nil
	}
	return st, flow, step, nil, nil
}

// fanRun is the fan-out of the step this server runs, or nil.
func (s *server) fanRun(flowID, stepID string) *fanRun {
	s.fanMu.Lock()
	defer s.fanMu.Unlock()
	return s.fans[fanKey{flowID, stepID}]
}

// settleIfOrphaned settles the tasks a dead server left running (when its
// lease expired: orphaned) and returns the flow and its tasks as they are
// then; otherwise st and tasks as given.
func (s *server) settleIfOrphaned(ctx context.Context, st *state.FlowState, step *specs.Step, tasks []state.ParallelTask) (*state.FlowState, []state.ParallelTask, error) {
	if !orphaned(st, step.ID, tasks) {
		return st, tasks, nil
	}
	if err := s.settleOrphans(ctx, st.FlowID, step.ID); err != nil {
		return nil, nil, err
	}
	st, _, _, err := s.fanFlow(ctx, st.FlowID)
	if err != nil {
		return nil, nil, err
	}
	tasks, _ = stepTasks(st, step)
	return st, tasks, nil
}

func (s *server) parallelPoll(ctx context.Context, req *mcp.CallToolRequest, in parallelArgs) (engine.Response, error) {
	if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
		return nil, err
	}
	st, flow, step, resp, err := s.fanStep(ctx, in.FlowID, in.StepID)
	if resp != nil || err != nil {
		return resp, err
	}
	fr := s.fanRun(in.FlowID, in.StepID)
	finished := fr == nil
	if fr != nil {
		select {
		case <-fr.done:
			finished = true
		default:
		}
	}
	// Sent after the look at done: a poll that reports the fan-out
	// finished has sent every event queued before it finished.
	s.sendProgress(ctx, req, fr)
	tasks, ok := stepTasks(st, step)
	if !ok {
		return engine.Response{"error": fmt.Sprintf("step '%s' not dispatched yet; call stratum_parallel_start first", in.StepID)}, nil
	}
	if fr == nil {
		if st, tasks, err = s.settleIfOrphaned(ctx, st, step, tasks); err != nil {
			return nil, err
		}
	}
	if fr == nil && st.ParallelRunOf(in.StepID).Live(time.Now()) {
		// Another server runs the fan-out (a shared store): it has not
		// merged yet.
		finished = false
	}
	summary := map[string]int{"pending": 0, "running": 0, "complete": 0, "failed": 0, "cancelled": 0, "skipped": 0, "reparenting": 0}
	view := map[string]any{}
	allTerminal := true
	for _, t := range tasks {
		summary[t.State]++
		view[t.TaskID] = taskView(t)
		if !state.TaskTerminal(t.State) {
			allTerminal = false
		}
	}
	resp = engine.Response{"flow_id": in.FlowID, "step_id": in.StepID, "summary": summary, "tasks": view,
		"require_satisfied": false, "can_advance": false, "outcome": nil}
	if !allTerminal || !finished {
		return resp, nil
	}
	mergeStatus, details := mergeOutcome(fr, st, step, tasks)
	results := make([]any, len(tasks))
	for i, t := range tasks {
		results[i] = t.TaskResult()
	}
	agg, reqOK, err := engine.ParallelAggregate(st, step, results, mergeStatus)
	if err != nil {
		return nil, err
	}
	resp["require_satisfied"] = reqOK
	resp["can_advance"] = reqOK && mergeStatus != "conflict"
	cur := currentStep(st, flow)
	switch {
	case cur == nil || cur.ID != in.StepID:
		resp["outcome"] = map[string]any{"status": "already_advanced", "aggregate": agg}
	case step.DeferAdvance:
		resp["outcome"] = map[string]any{"status": "awaiting_consumer_advance", "aggregate": agg}
	default:
		var report any = mergeStatus
		if fr != nil && fr.res != nil && !fr.res.Interrupted {
			report = fr.res.MergeReport() // with the tasks its merge bounced
		}
		out, err := answer(s.svc.ParallelDone(ctx, engine.ParallelReport{FlowID: in.FlowID, StepID: in.StepID, TaskResults: results, MergeStatus: report, Details: details, Executed: true}))
		if err != nil {
			return nil, err
		}
		resp["outcome"] = out
		s.fanMu.Lock()
		delete(s.fans, fanKey{in.FlowID, in.StepID})
		s.fanMu.Unlock()
	}
	return resp, nil
}

// validMergeStatus: "clean", "conflict", or {status: one of them,
// bounced_tasks: a list} (the original's two forms).
func validMergeStatus(v any) bool {
	switch x := v.(type) {
	case string:
		return x == "clean" || x == "conflict"
	case map[string]any:
		st, _ := x["status"].(string)
		if b, ok := x["bounced_tasks"]; ok && b != nil {
			if _, ok := b.([]any); !ok {
				return false
			}
		}
		return st == "clean" || st == "conflict"
	}
	return false
}

func showJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func (s *server) parallelAdvance(ctx context.Context, _ *mcp.CallToolRequest, in parallelAdvanceArgs) (engine.Response, error) {
	if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
		return nil, err
	}
	st, flow, step, resp, err := s.fanStep(ctx, in.FlowID, in.StepID)
	if resp != nil || err != nil {
		return resp, err
	}
	switch {
	case !step.FansOut():
		return perr("wrong_step_type", "Step '%s' is not a parallel_dispatch step", in.StepID), nil
	case !step.DeferAdvance:
		return perr("advance_not_deferred", "Step '%s' does not have defer_advance: true. Auto-advance fires from stratum_parallel_poll; this tool is a no-op.", in.StepID), nil
	case !validMergeStatus(in.MergeStatus):
		return perr("invalid_merge_status", "merge_status must be 'clean' | 'conflict' or {status: 'clean'|'conflict', bounced_tasks?}, got %s", showJSON(in.MergeStatus)), nil
	}
	if cur := currentStep(st, flow); cur == nil || cur.ID != in.StepID {
		return engine.Response{"status": "already_advanced", "step_id": in.StepID}, nil
	}
	tasks, ok := stepTasks(st, step)
	if !ok {
		return perr("step_not_dispatched", "Step '%s' not dispatched yet; call stratum_parallel_start first", in.StepID), nil
	}
	fr := s.fanRun(in.FlowID, in.StepID)
	busy := false
	if fr != nil {
		select {
		case <-fr.done:
		default:
			busy = true
		}
	}
	if fr == nil {
		if st, tasks, err = s.settleIfOrphaned(ctx, st, step, tasks); err != nil {
			return nil, err
		}
	}
	if fr == nil && st.ParallelRunOf(in.StepID).Live(time.Now()) {
		busy = true // another server runs the fan-out
	}
	results := make([]any, len(tasks))
	for i, t := range tasks {
		if !state.TaskTerminal(t.State) {
			busy = true
		}
		results[i] = t.TaskResult()
	}
	if busy {
		return perr("tasks_not_terminal", "Step '%s' still has running tasks. Poll until outcome.status == 'awaiting_consumer_advance' before calling advance.", in.StepID), nil
	}
	mergeStatus := in.MergeStatus
	ms, details := mergeOutcome(fr, st, step, tasks)
	if ms == "conflict" { // the server's own merge conflicted: that stands
		if m, ok := mergeStatus.(map[string]any); ok {
			c := make(map[string]any, len(m))
			for k, v := range m {
				c[k] = v
			}
			c["status"] = "conflict"
			mergeStatus = c
		} else {
			mergeStatus = "conflict"
		}
	}
	out, err := answer(s.svc.ParallelDone(ctx, engine.ParallelReport{FlowID: in.FlowID, StepID: in.StepID, TaskResults: results, MergeStatus: mergeStatus, Details: details, Executed: true}))
	if err == nil {
		s.fanMu.Lock()
		delete(s.fans, fanKey{in.FlowID, in.StepID})
		s.fanMu.Unlock()
	}
	return out, err
}
