package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/specs/exprlang"

	"github.com/stratum-go/stratum/engine/state"
	"github.com/stratum-go/stratum/review"
	"github.com/stratum-go/stratum/specs"
)

// Arguments of the original's tools. Field names are the original's
// parameter names; a field without omitempty is required. Free-form values
// (result, inputs, draft, …) are `any` so the inferred schema accepts every
// JSON value; the handlers check their shape.

type validateArgs struct {
	Spec string `json:"spec" jsonschema:"the spec as inline YAML text (not a file path)"`
}

type planArgs struct {
	Spec   string `json:"spec" jsonschema:"the spec as inline YAML text (not a file path)"`
	Flow   string `json:"flow" jsonschema:"name of the flow to run (a key under flows:)"`
	Inputs any    `json:"inputs,omitempty" jsonschema:"the flow's inputs as a JSON object (default {})"`
}

type flowArgs struct {
	FlowID string `json:"flow_id" jsonschema:"the flow_id returned by stratum_plan"`
}

type stepDoneArgs struct {
	FlowID string `json:"flow_id" jsonschema:"the flow_id returned by stratum_plan"`
	StepID string `json:"step_id" jsonschema:"the step_id of the dispatch being reported"`
	Result any    `json:"result" jsonschema:"the step's output: a JSON object with the dispatch's output_fields"`
	Usage  any    `json:"usage,omitempty" jsonschema:"what the attempt spent, charged to the flow's budget: {input_tokens, output_tokens, model} (priced from stratum's table) or {tokens, dollars}"`
}

type parallelDoneArgs struct {
	FlowID      string `json:"flow_id" jsonschema:"the flow_id of the parallel_dispatch"`
	StepID      string `json:"step_id" jsonschema:"the step_id of the parallel_dispatch"`
	TaskResults any    `json:"task_results" jsonschema:"one entry per task: [{task_id, result, status}]"`
	MergeStatus any    `json:"merge_status" jsonschema:"\"clean\" or \"conflict\" (or {status, bounced_tasks})"`
}

type gateResolveArgs struct {
	FlowID     string `json:"flow_id" jsonschema:"the flow waiting at the gate"`
	StepID     string `json:"step_id" jsonschema:"the gate step's id (the step_id of the await_gate dispatch)"`
	Outcome    string `json:"outcome" jsonschema:"approve, revise or kill"`
	Rationale  string `json:"rationale" jsonschema:"why: recorded in the trace with the decision"`
	ResolvedBy string `json:"resolved_by" jsonschema:"who decided: human, agent or system"`
	// Value is the decided value of a Go program's review (any JSON value,
	// not a string holding JSON), with outcome approve.
	Value any `json:"value,omitempty" jsonschema:"a Go program's review only (step_id review-N): the value decided with outcome approve, any JSON value (one of the review's options, or a value of its type)"`
}

type stepReasonArgs struct {
	FlowID string `json:"flow_id" jsonschema:"the flow"`
	StepID string `json:"step_id" jsonschema:"the current step's id"`
	Reason string `json:"reason" jsonschema:"why: recorded in the trace"`
}

type stepArgs struct {
	FlowID string `json:"flow_id" jsonschema:"the flow"`
	StepID string `json:"step_id" jsonschema:"the current step's id"`
}

type iterationReportArgs struct {
	FlowID string `json:"flow_id" jsonschema:"the flow"`
	StepID string `json:"step_id" jsonschema:"the step whose iteration loop is running"`
	Result any    `json:"result" jsonschema:"this iteration's result (a JSON object)"`
}

type labelArgs struct {
	FlowID string `json:"flow_id" jsonschema:"the flow"`
	Label  string `json:"label" jsonschema:"the checkpoint's name"`
}

type compileArgs struct {
	TasksDir string `json:"tasks_dir" jsonschema:"directory of spec-kit task files (*.md)"`
	FlowName string `json:"flow_name,omitempty" jsonschema:"name of the generated flow (default \"tasks\")"`
}

type draftArgs struct {
	Draft      any    `json:"draft" jsonschema:"the pipeline draft (a JSON object)"`
	ProjectDir string `json:"project_dir,omitempty" jsonschema:"project directory (default \".\"); the draft goes to <project_dir>/.stratum/pipeline-draft.json"`
}

type workflowsArgs struct {
	WorkflowsDir string `json:"workflows_dir,omitempty" jsonschema:"directory to scan, not recursively (default \".\")"`
}

func readOnly() *mcp.ToolAnnotations { return &mcp.ToolAnnotations{ReadOnlyHint: true} }

// registerCoreTools adds the original's seventeen tools, in its order.
func (s *server) registerCoreTools(srv *mcp.Server) {
	s.registerFlowTools(srv)
	s.registerGateTools(srv)
	s.registerLoopTools(srv)
	s.registerSpecTools(srv)
}

// registerFlowTools adds the tools that start, drive and read a flow:
// stratum_validate, stratum_plan, stratum_resume, stratum_step_done,
// stratum_parallel_done and stratum_audit.
func (s *server) registerFlowTools(srv *mcp.Server) {
	svc := s.svc
	addTool(srv, s, &mcp.Tool{Name: "stratum_validate", Annotations: readOnly(), Description: `Check a stratum spec (inline YAML text, not a path) without creating a flow.
Returns {valid: bool, errors: [...]}: every error found (not only the first), each {error_type (ir_parse_error | ir_validation_error | ir_semantic_error), path, message, suggestion (or null), line, column (1-based, 0 = unknown), code, severity: "error", success:false}; valid is true exactly when errors is empty. Warnings (worth fixing, the spec stays valid) come apart, in warnings: [...] (the same objects, severity "warning"), present only when there are some.`},
		func(_ context.Context, _ *mcp.CallToolRequest, in validateArgs) (engine.Response, error) {
			return validate(in.Spec), nil
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_plan", Description: `Start a flow execution: validate the spec (inline YAML), create the flow in the shared store and return its first dispatch.
Call it once per run, then loop on stratum_step_done. Returns a dispatch with flow_id (keep it):
- execute_step: do the step yourself. Keys: flow_id, step_id, step_number, total_steps, step_mode (function | inline | decompose), function, intent, inputs (resolved), output_contract, output_fields ({field: type}), ensure (expressions your result must satisfy), retries_remaining, agent, model.
- await_gate: a review gate (see stratum_wait_gate / stratum_gate_resolve).
- execute_flow: a sub-flow (child_flow_id, child_step is its first dispatch); parallel_dispatch: tasks to run, report with stratum_parallel_done.
- complete: nothing to do (all steps skipped).
Errors: {status:"error", error_type, message}: ir_parse_error / ir_validation_error / ir_semantic_error (invalid spec, with path, suggestion and diagnostics: all of them), invalid_input (inputs do not match the flow's input params), execution_error (e.g. unknown flow).`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in planArgs) (engine.Response, error) {
			inputs, err := objectArg("inputs", in.Inputs, true)
			if err != nil {
				return nil, err
			}
			return answer(svc.Plan(ctx, in.Spec, in.Flow, inputs, engine.PlanOptions{Driver: state.DriverAgent}))
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_resume", Description: `Return the current dispatch of an existing flow (after a restart, a lost context, or a decision made elsewhere). Reads the shared store; changes nothing unless the flow must advance.
Returns the same shapes as stratum_plan (execute_step, await_gate, execute_flow, parallel_dispatch), or the completion {status:"complete"|"killed", flow_id, output, trace, total_duration_ms}, or {status:"failed"|"budget_exhausted", flow_id}. Unknown id: {status:"error", error_type:"flow_not_found"}.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in flowArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			return answer(svc.Resume(ctx, in.FlowID))
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_step_done", Description: `Report the result of the step you were dispatched. The engine checks it (output_schema, guardrails, every ensure expression) and answers:
- execute_step / await_gate / execute_flow / parallel_dispatch: the next dispatch.
- ensure_failed | schema_failed | guardrail_blocked: the same step again with violations: [str] and retries_remaining decremented; fix exactly those and report again.
- a recovery step's dispatch with routed_from and violations (on_fail routing).
- complete: {status:"complete", flow_id, output, trace, total_duration_ms}.
- budget_exhausted: {status, flow_id, step_id, reason, output, trace, total_duration_ms, budget_state} when the usage you report spends the flow's budget.
Optional usage charges the flow's run budget for this attempt (every outcome): {input_tokens, output_tokens, model} priced from stratum's table, or pre-priced {tokens, dollars}; an agent step also counts one agent dispatch. Ignored on flows without a budget.
Errors: retries_exhausted (with violations), wrong/unknown step (execution_error), gate_step_requires_gate_resolve, flow_not_found, flow_owned (an in-process runner owns the flow: agents may not report into it).`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in stepDoneArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			usage, err := usageArg(in.Usage)
			if err != nil {
				return nil, err
			}
			return answer(svc.StepDone(ctx, engine.StepReport{FlowID: in.FlowID, StepID: in.StepID, Result: in.Result, Usage: usage}))
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_parallel_done", Description: `Report the results of a parallel_dispatch step: task_results is [{task_id, result, status ("complete" | "failed")}], merge_status "clean" or "conflict" (or {status, bounced_tasks}).
Returns like stratum_step_done: the next dispatch, ensure_failed with violations, the completion, or an error (flow_complete, step_mismatch, wrong_step_type, flow_not_found, flow_owned).`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in parallelDoneArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
				return nil, err
			}
			tasks, ok := in.TaskResults.([]any)
			if !ok {
				return nil, badArgs("task_results must be a JSON array of {task_id, result, status}, got %s", jsonKind(in.TaskResults))
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			return answer(svc.ParallelDone(ctx, engine.ParallelReport{FlowID: in.FlowID, StepID: in.StepID, TaskResults: tasks, MergeStatus: in.MergeStatus}))
		})

	addJSONTool(srv, s, &mcp.Tool{Name: "stratum_audit", Annotations: readOnly(), Description: `Return the audit snapshot of a flow (running or finished; finished flows are kept): flow_id, flow_name, status, steps_completed, total_steps, trace (step, gate and skip records with attempts, duration_ms, round; cache_hit and cache_key on a step answered from the result cache), cache_hits, budget_state ({caps, consumed} of the flow's budget, or null), round, rounds, iterations, archived_iterations, child_audits, total_duration_ms. Unknown id: flow_not_found.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in flowArgs) (json.RawMessage, error) {
			if err := required("flow_id", in.FlowID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); err != nil || resp != nil {
				if err != nil {
					return nil, err
				}
				return marshalResponse(resp)
			}
			return answerJSON(svc.Audit(ctx, in.FlowID))
		})
}

// registerGateTools adds stratum_gate_resolve, stratum_check_timeouts and
// stratum_skip_step.
func (s *server) registerGateTools(srv *mcp.Server) {
	svc := s.svc
	addTool(srv, s, &mcp.Tool{Name: "stratum_gate_resolve", Description: `Decide the gate a flow is waiting at (status await_gate): outcome approve (continue, or on_approve), revise (back to on_revise for another round) or kill (on_kill, or end the flow killed). The decision is recorded with rationale and resolved_by (human | agent | system), first writer wins across every stratum process.
Only decide if you are the reviewer. A gate with approver: human refuses this tool (error_type gate_requires_human): wait for a person with stratum_wait_gate instead.
Returns the next dispatch, the completion, {status:"killed", …}, or an error: invalid_outcome, invalid_resolved_by, wrong_step, not_a_gate_step, flow_already_complete, max_rounds_exceeded, gate_requires_human, flow_not_found.
A review opened by a Go program (step_id review-N, stratum query gates shows its question and options) is approved with value (a JSON value: one of its options, or a value of its type) or declined with kill; a value that does not fit is invalid_review_value and the review stays open.`},
		func(ctx context.Context, req *mcp.CallToolRequest, in gateResolveArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			d := review.Decision{FlowID: in.FlowID, StepID: in.StepID, Outcome: review.Outcome(in.Outcome), Rationale: in.Rationale,
				Reviewer: clientName(req), ResolvedBy: review.ResolvedBy(in.ResolvedBy), Channel: review.ChannelMCP}
			if in.Value != nil {
				b, err := json.Marshal(in.Value)
				if err != nil {
					return nil, fmt.Errorf("value: %w", err)
				}
				d.Value = b
			}
			// The engine applies the rationale rule by channel: over MCP an
			// empty rationale is accepted, as in the original.
			return answer(svc.GateResolve(ctx, d.FlowID, d))
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_check_timeouts", Description: `Apply the waiting gate's timeout if it has expired (the gate's on_timeout: kill by default). Gate deadlines are also enforced in the background by every running stratum process.
Returns {status:"no_timeout", message | remaining_seconds}, {status:"killed", reason:"timeout", …}, the next dispatch (on_timeout approve/revise), or flow_not_found.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in flowArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			return answer(svc.CheckTimeouts(ctx, in.FlowID))
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_skip_step", Description: `Skip the current step (not a gate) with a reason recorded in the trace. Returns the next dispatch or the completion, or an error (wrong step, gate steps cannot be skipped, flow_not_found, flow_owned).`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in stepReasonArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			return answer(svc.SkipStep(ctx, in.FlowID, in.StepID, in.Reason, engine.ReportOptions{}))
		})
}

// registerLoopTools adds the iteration protocol (stratum_iteration_start,
// _report, _abort) and the checkpoints (stratum_commit, stratum_revert).
func (s *server) registerLoopTools(srv *mcp.Server) {
	svc := s.svc
	addTool(srv, s, &mcp.Tool{Name: "stratum_iteration_start", Description: `Start the iteration loop of the current step (the step must declare max_iterations). Returns {status:"iteration_started", flow_id, step_id, max_iterations, exit_criterion, …}; then report each pass with stratum_iteration_report.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in stepArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			return answer(svc.IterationStart(ctx, in.FlowID, in.StepID, engine.ReportOptions{}))
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_iteration_report", Description: `Report one pass of the running iteration loop. The engine evaluates exit_criterion and counts iterations. Returns {status:"iteration_continue", iteration, …} (do another pass) or {status:"iteration_exit", outcome, …} (the loop ended; then report the step with stratum_step_done).`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in iterationReportArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			return answer(svc.IterationReport(ctx, in.FlowID, in.StepID, in.Result, engine.ReportOptions{}))
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_iteration_abort", Description: `Abort the running iteration loop of a step with a reason. Returns {status:"iteration_aborted", …}.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in stepReasonArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			return answer(svc.IterationAbort(ctx, in.FlowID, in.StepID, in.Reason, engine.ReportOptions{}))
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_commit", Description: `Save a named checkpoint of the flow's current state (to come back to with stratum_revert). Returns {status:"committed", flow_id, label, step_number, current_step_id, checkpoints: [labels]}, or invalid_label / flow_not_found.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in labelArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			return answer(svc.Commit(ctx, in.FlowID, in.Label, engine.ReportOptions{Channel: review.ChannelMCP}))
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_revert", Description: `Roll the flow back to a checkpoint saved with stratum_commit. Returns the dispatch at that point plus reverted_to: label (or the completion), or {status:"error", error_type:"checkpoint_not_found", available: [labels]}.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in labelArgs) (engine.Response, error) {
			if err := required("flow_id", in.FlowID); err != nil {
				return nil, err
			}
			if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
				return resp, err
			}
			return answer(svc.Revert(ctx, in.FlowID, in.Label, engine.ReportOptions{Channel: review.ChannelMCP}))
		})
}

// registerSpecTools adds the tools that need no flow:
// stratum_compile_speckit, stratum_draft_pipeline and
// stratum_list_workflows (stratum_validate is registered first, with the
// flow tools, in the original's order).
func (s *server) registerSpecTools(srv *mcp.Server) {
	addTool(srv, s, &mcp.Tool{Name: "stratum_compile_speckit", Annotations: readOnly(), Description: `Compile a spec-kit tasks directory (one *.md file per task with "## Acceptance Criteria" checkboxes) into a stratum spec: one step per task, criteria as ensure expressions.
Returns {status:"ok", yaml, flow_name, steps: [{id, title, parallel, ensures, judgment}]}; pass yaml to stratum_plan. Errors: directory_not_found, no_tasks, step_id_collision, compile_error.`},
		func(_ context.Context, _ *mcp.CallToolRequest, in compileArgs) (engine.Response, error) {
			return compileSpeckit(in)
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_draft_pipeline", Description: `Save a pipeline draft (a JSON object) for the pipeline editor: writes <project_dir>/.stratum/pipeline-draft.json, replacing any previous draft. Returns {status:"saved", path (absolute)}.`},
		func(_ context.Context, _ *mcp.CallToolRequest, in draftArgs) (engine.Response, error) {
			return draftPipeline(in)
		})

	addTool(srv, s, &mcp.Tool{Name: "stratum_list_workflows", Annotations: readOnly(), Description: `List the workflows registered in a directory: every *.stratum.yaml directly in workflows_dir that has a workflow: block.
Returns {workflows: [{name, description, input, path}], errors: ["<file>: <message>", duplicate names, …]}. Run one by reading its file and calling stratum_plan.`},
		func(_ context.Context, _ *mcp.CallToolRequest, in workflowsArgs) (engine.Response, error) {
			dir := in.WorkflowsDir
			if dir == "" {
				dir = "."
			}
			list, err := specs.DiscoverWorkflows(dir, exprlang.Compile)
			if err != nil {
				return engine.Response{"workflows": []specs.WorkflowInfo{}, "errors": []string{fmt.Sprintf("cannot read workflows_dir %q", dir)}}, nil
			}
			return engine.Response{"workflows": list.Workflows, "errors": list.Errors}, nil
		})
}

// answer renders an engine answer for a tool: the outcome, or the envelope
// of an *engine.Error (engine.Wire); any other error is an unexpected
// failure that call turns into internal_error.
func answer(out engine.Outcome, err error) (engine.Response, error) {
	if err != nil && engine.AsError(err) == nil {
		return nil, err
	}
	return engine.Wire(out, err), nil
}

// answerJSON is the JSON of answer(out, err) (engine.WireJSON).
func answerJSON(out engine.Outcome, err error) (json.RawMessage, error) {
	if err != nil && engine.AsError(err) == nil {
		return nil, err
	}
	return engine.WireJSON(out, err)
}

// validate is stratum_validate with every diagnostic: errors in errors,
// warnings in warnings (the same objects), so a valid spec answers
// {valid: true, errors: []} exactly as the original does; warnings is
// there only when there are some.
func validate(spec string) engine.Response {
	sp, ds := specs.Parse("", []byte(spec), exprlang.Compile)
	resp := engine.Response{"valid": sp != nil && !ds.HasErrors(), "errors": diagnosticObjects(ds.Errors())}
	if warns := ds.Warnings(); len(warns) > 0 {
		resp["warnings"] = diagnosticObjects(warns)
	}
	return resp
}

// diagnosticObjects are diagnostics as stratum_validate lists them: the
// original's error objects plus line, column, code and severity.
func diagnosticObjects(ds specs.Diagnostics) []map[string]any {
	out := make([]map[string]any, 0, len(ds))
	for _, d := range ds {
		var sugg any
		if d.Suggestion != "" {
			sugg = d.Suggestion
		}
		out = append(out, map[string]any{
			"success": false, "error_type": string(d.ErrorType), "path": d.Path, "message": d.Message,
			"suggestion": sugg, "line": d.Line, "column": d.Column, "code": d.Code, "severity": string(d.Severity),
		})
	}
	return out
}

// compileSpeckit is stratum_compile_speckit.
func compileSpeckit(in compileArgs) (engine.Response, error) {
	if err := required("tasks_dir", in.TasksDir); err != nil {
		return nil, err
	}
	name := in.FlowName
	if name == "" {
		name = specs.DefaultTaskFlow
	}
	c, err := specs.CompileTasks(in.TasksDir, name, exprlang.Compile)
	if err != nil {
		var ce *specs.CompileError
		if errors.As(err, &ce) {
			return engine.Response{"status": "error", "error_type": ce.Type, "message": ce.Message}, nil
		}
		return engine.Response{"status": "error", "error_type": specs.CompileFailed, "message": err.Error()}, nil
	}
	steps := c.Steps
	if steps == nil {
		steps = []specs.TaskStep{}
	}
	return engine.Response{"status": "ok", "yaml": c.YAML, "flow_name": c.FlowName, "steps": steps}, nil
}

// draftFile is where stratum_draft_pipeline writes, under the project dir.
var draftFile = filepath.Join(".stratum", "pipeline-draft.json")

// draftPipeline is stratum_draft_pipeline: it writes the draft atomically.
func draftPipeline(in draftArgs) (engine.Response, error) {
	draft, err := objectArg("draft", in.Draft, false)
	if err != nil {
		return nil, err
	}
	dir := in.ProjectDir
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, badArgs("project_dir %q: %v", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, badArgs("project_dir %q is not an existing directory", dir)
	}
	b, err := json.MarshalIndent(draft, "", "  ")
	if err != nil {
		return nil, badArgs("draft cannot be encoded as JSON: %v", err)
	}
	path := filepath.Join(abs, draftFile)
	if err := writeFileAtomic(path, append(b, '\n'), 0o644); err != nil {
		return engine.Response{"status": "error", "success": false, "error_type": engine.ErrTypeExecution,
			"message": fmt.Sprintf("cannot write %s: %v", path, errors.Unwrap(err))}, nil
	}
	return engine.Response{"status": "saved", "path": path}, nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory (creating the directory) and a rename.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// required checks that string arguments (name, value pairs) are non-empty.
func required(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return badArgs("%s is required and must be a non-empty string", pairs[i])
		}
	}
	return nil
}

// objectArg checks that v is a JSON object (or null/absent when optional).
func objectArg(name string, v any, optional bool) (map[string]any, error) {
	switch x := v.(type) {
	case map[string]any:
		return x, nil
	case nil:
		if optional {
			return map[string]any{}, nil
		}
	}
	return nil, badArgs("%s must be a JSON object, got %s", name, jsonKind(v))
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, json.Number, int, int64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// clientName identifies the reviewer of an MCP decision: the client's name
// from its initialisation, or "mcp".
func clientName(req *mcp.CallToolRequest) string {
	if req == nil || req.Session == nil {
		return "mcp"
	}
	p := req.Session.InitializeParams()
	if p == nil || p.ClientInfo == nil || p.ClientInfo.Name == "" {
		return "mcp"
	}
	return "mcp:" + p.ClientInfo.Name
}

// usageArg reads stratum_step_done's usage as the original does: pre-priced
// {tokens, dollars} when either is there, else {input_tokens,
// output_tokens, model} priced from the table. A value that is not a
// non-negative finite number counts 0, so bad usage can neither fail an
// accepted report nor credit the ledger back.
func usageArg(v any) (*engine.Usage, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badArgs("usage must be a JSON object, got %s", jsonKind(v))
	}
	if m["tokens"] != nil || m["dollars"] != nil {
		usd := nonNegFloat(m["dollars"])
		return &engine.Usage{Tokens: nonNegInt(m["tokens"]), USD: &usd}, nil
	}
	in, out := nonNegInt(m["input_tokens"]), nonNegInt(m["output_tokens"])
	model, _ := m["model"].(string)
	u := &engine.Usage{Tokens: in + out, USD: run.UsageCost(model, in, out)}
	if u.USD == nil && u.Tokens == 0 {
		zero := 0.0
		u.USD = &zero
	}
	return u, nil
}

func nonNegFloat(v any) float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case json.Number:
		f, _ = x.Float64()
	case string:
		f, _ = strconv.ParseFloat(strings.TrimSpace(x), 64)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0
	}
	return f
}

func nonNegInt(v any) int64 {
	f := nonNegFloat(v)
	if f >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(f)
}
