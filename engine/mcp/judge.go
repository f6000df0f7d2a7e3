package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/engine/config"
	"github.com/stratum-go/stratum/engine/internal/infer"
	"github.com/stratum-go/stratum/engine/internal/judge"
	"github.com/stratum-go/stratum/engine/run"
	"github.com/stratum-go/stratum/specs"
)

type judgeArgs struct {
	FlowID        string         `json:"flow_id" jsonschema:"the flow whose current step is the judge step"`
	StepID        string         `json:"step_id" jsonschema:"the judge step's id (the step_id of its execute_step dispatch)"`
	Predicates    any            `json:"predicates" jsonschema:"the dispatch's predicates, exactly as dispatched"`
	Artifacts     map[string]any `json:"artifacts" jsonschema:"evidence as text: {name: text}, staged as artifacts/NAME.txt"`
	ModifiedFiles []string       `json:"modified_files,omitempty" jsonschema:"files the work changed, relative to the project directory; copied into the staged turn as modified/PATH"`
	Stakes        string         `json:"stakes,omitempty" jsonschema:"the dispatch's stakes (default \"default\")"`
	Budget        any            `json:"budget,omitempty" jsonschema:"the dispatch's budget, exactly as dispatched (or absent)"`
}

// registerJudgeTools adds stratum_judge and stratum_decompose.
func (s *server) registerJudgeTools(srv *mcp.Server) {
	addTool(srv, s, &mcp.Tool{Name: "stratum_judge", Description: `Run the tiered judge of a judge step (step_mode "judge") over the evidence you staged. Tier 1 decides deterministic predicates over the staged files; tier 2 asks a verifier (an agent with read-only tools in a read-only copy of the evidence) that must cite staged files; stakes paranoid adds an adversary (tier 3) against every tier-2 met.
Inputs: flow_id, step_id, predicates, stakes and budget exactly as the dispatch gave them (a different payload is refused: predicates_mismatch, stakes_mismatch, budget_mismatch); artifacts {name: text}; modified_files (paths relative to the project).
Returns the JudgeResult {clean, summary, findings, meta, …, judge_version, met, stakes, predicates: [{id, type, statement, verdict (met | not_met | ambiguous), confidence, applied_gate, evidence: [{source, quote, tier}], tier_history, t3}], tier_disagreements, budget_consumed, judge_kernel_meta}; the turn is recorded in the flow (audit: judge_history, judge_outcome). Then report it with stratum_step_done (result: the JudgeResult).
Errors {status:"error", error_type, message}: flow_not_found, step_mismatch, not_a_judge_step, predicates_mismatch, stakes_mismatch, budget_mismatch, BudgetExceededError (max_turns, max_wall_clock_s, max_dollars), CitationFormatError and VerifierAnswerError (a verifier's answer broke its contract), VerifierError, StagingError.`},
		s.judge)
	s.registerDecompose(srv)
}

func judgeError(typ, msg string) engine.Response {
	return engine.Response{"status": "error", "error_type": typ, "message": msg}
}

// judge is stratum_judge.
func (s *server) judge(ctx context.Context, _ *mcp.CallToolRequest, in judgeArgs) (engine.Response, error) {
	if err := required("flow_id", in.FlowID, "step_id", in.StepID); err != nil {
		return nil, err
	}
	arts := make(map[string]string, len(in.Artifacts))
	for k, v := range in.Artifacts {
		str, ok := v.(string)
		if !ok {
			return nil, badArgs("artifacts must map names to text, %q is %s", k, jsonKind(v))
		}
		arts[k] = str
	}
	if resp, err := s.resolveFlowID(ctx, &in.FlowID); resp != nil || err != nil {
		return resp, err
	}
	fw, err := s.svc.Query().FlowWithSpec(ctx, in.FlowID)
	if err != nil {
		return answer(nil, err)
	}
	step, resp := judgeStep(fw, in)
	if resp != nil {
		return resp, nil
	}
	root, err := run.JudgeRoot()
	if err != nil {
		return nil, err
	}
	project, _ := filepath.Abs(run.ProjectDir(fw.State.SpecFile))
	v, err := run.JudgeVerifier(project)
	if err != nil {
		return nil, err
	}
	res, err := judge.Run(ctx, judge.Request{
		FlowID: in.FlowID, StepID: in.StepID, Predicates: step.Judge.Predicates, Stakes: step.Judge.Stakes,
		Budget: step.Judge.Budget, Artifacts: arts, Modified: in.ModifiedFiles, Workspace: project,
		Root: root, Verifier: v,
	})
	var je *judge.Error
	if errors.As(err, &je) {
		r := judgeError(je.Type, je.Message)
		if je.Violations != nil {
			r["violations"] = je.Violations
		}
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := s.svc.RecordJudge(ctx, engine.JudgeTurn{FlowID: in.FlowID, StepID: in.StepID, History: res.Entries(), Outcome: res.Outcome(), Verdict: res.Verdict()}); err != nil {
		return answer(nil, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var out engine.Response
	return out, json.Unmarshal(b, &out)
}

// judgeStep is the flow's current step when it is the judge step named,
// dispatched with exactly this payload; else the original's error.
func judgeStep(fw *engine.FlowWithSpec, in judgeArgs) (*specs.Step, engine.Response) {
	var cur *specs.Step
	if f := fw.Flow; f != nil && !fw.State.Status.Finished() && fw.State.CurrentIdx >= 0 && fw.State.CurrentIdx < len(f.Order) {
		cur = f.Steps[f.Order[fw.State.CurrentIdx]]
	}
	if cur == nil || cur.ID != in.StepID {
		id := "None"
		if cur != nil {
			id = cur.ID
		}
		return nil, judgeError("step_mismatch", "step_id '"+in.StepID+"' is not the current judge step (current: "+id+")")
	}
	if cur.Kind != specs.KindJudge || cur.Judge == nil {
		return nil, judgeError("not_a_judge_step", "step '"+in.StepID+"' is not declared as a judge step")
	}
	j := cur.Judge
	declared := make([]any, len(j.Predicates))
	for i, p := range j.Predicates {
		declared[i] = p.Raw
	}
	if !sameJSON(in.Predicates, declared) {
		return nil, judgeError("predicates_mismatch", "predicates payload does not match the flow's judge: declaration")
	}
	stakes := in.Stakes
	if stakes == "" {
		stakes = specs.StakesDefault
	}
	if stakes != j.Stakes {
		return nil, judgeError("stakes_mismatch", "stakes '"+stakes+"' does not match IR declaration '"+j.Stakes+"'")
	}
	var budget any
	if j.Budget != nil && len(j.Budget.Raw) > 0 {
		budget = j.Budget.Raw
	}
	if m, ok := in.Budget.(map[string]any); ok && len(m) == 0 {
		in.Budget = nil
	}
	if !sameJSON(in.Budget, budget) {
		return nil, judgeError("budget_mismatch", "budget payload does not match the flow's judge: declaration")
	}
	return cur, nil
}

// sameJSON compares two values as JSON (numbers by value).
func sameJSON(a, b any) bool {
	norm := func(v any) any {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var out any
		_ = json.Unmarshal(raw, &out)
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

type decomposeArgs struct {
	Prompt      string `json:"prompt" jsonschema:"the task, in prose"`
	WorkContext string `json:"work_context,omitempty" jsonschema:"extra context: what was done so far"`
	Model       string `json:"model,omitempty" jsonschema:"provider/model of the LLM to ask (default anthropic/claude-haiku-4-5)"`
}

// registerDecompose adds stratum_decompose.
func (s *server) registerDecompose(srv *mcp.Server) {
	addTool(srv, s, &mcp.Tool{Name: "stratum_decompose", Annotations: readOnly(), Description: `Draft acceptance predicates for a task: one LLM call turns the prose into 1-6 predicates in the judge's taxonomy (deterministic | verified | judged), for you to show, edit, and put in a judge step. No flow, nothing stored.
Inputs: prompt (the task), work_context (optional), model (provider/model, default anthropic/claude-haiku-4-5; keys and base URLs as for stratum run).
Returns {predicates: [{id, type, statement, applied_gate: 7}], applied: bool, reason: str, model: str}. Fail-open: on any LLM or parse failure applied is false, predicates empty and reason "decompose_error:KIND" — never a fabricated predicate; do not use an empty draft.`},
		func(ctx context.Context, _ *mcp.CallToolRequest, in decomposeArgs) (engine.Response, error) {
			if err := required("prompt", in.Prompt); err != nil {
				return nil, err
			}
			model := in.Model
			if model == "" {
				model = judge.DefaultDecomposeModel
			}
			cfg, err := config.Load(".")
			if err != nil {
				return nil, err
			}
			setup := infer.Setup{DefaultModel: cfg.DefaultModel, BaseURLs: cfg.BaseURLs, CallTimeout: cfg.LLMTimeout}
			d := judge.Decompose(ctx, func(ctx context.Context, prompt string) (string, error) {
				ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				text, _, err := setup.Complete(ctx, model, prompt, 512)
				return text, err
			}, in.Prompt, in.WorkContext, model)
			b, err := json.Marshal(d)
			if err != nil {
				return nil, err
			}
			var out engine.Response
			return out, json.Unmarshal(b, &out)
		})
}
