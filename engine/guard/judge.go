package guard

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/stratum-go/stratum/engine/internal/judge"
	"github.com/stratum-go/stratum/specs"
)

// Judge wires the judge's verifier tiers to the guard: predicates of type
// verified or judged go to judge.Run (tier 2, and tier 3 at paranoid
// stakes) with the transition's artifacts and modified files as the staged
// evidence, the workspace root as the workspace.
type Judge struct {
	// Root is where the judge stages turns ($STRATUM_HOME/judge).
	Root string
	// Verifier builds the verifier for a workspace (run.JudgeVerifier).
	Verifier func(workspace string) (judge.Verifier, error)
}

// judged runs the verifier tiers over llm; nil Judge or a failure to
// decide is a refusal with the reason (as the original without a verifier).
func (s *Service) judged(ctx context.Context, r *resource, edge, stakes string, llm []Predicate, in TransitionRequest) (map[string]any, string) {
	if s.Judge == nil || s.Judge.Verifier == nil {
		return nil, "LLM-tier predicates present but no verifier available"
	}
	ws := ""
	if r.reg.WorkspaceRoot != nil {
		ws = *r.reg.WorkspaceRoot
	}
	v, err := s.Judge.Verifier(ws)
	if err != nil {
		return nil, "the verifier could not be set up: " + err.Error()
	}
	preds := make([]*specs.Predicate, 0, len(llm))
	for i, p := range llm {
		id := pstring(p, "id")
		if id == "" {
			id = "v" + itoa(i)
		}
		gate := specs.DefaultAppliedGate
		if g, ok := p["applied_gate"].(float64); ok && g >= 1 && g <= 10 {
			gate = int(g)
		}
		preds = append(preds, &specs.Predicate{ID: id, Type: ptype(p), Statement: pstring(p, "statement"), AppliedGate: gate, Raw: p})
	}
	res, err := judge.Run(ctx, judge.Request{FlowID: "guard-" + sha([]byte(r.reg.ResourceID))[:16], StepID: "e-" + sha([]byte(edge + "@" + in.IdempotencyKey))[:16],
		Predicates: preds, Stakes: stakes, Artifacts: in.Artifacts, Modified: in.ModifiedFiles, Workspace: ws, Root: s.Judge.Root, Verifier: v, Now: s.Now})
	var je *judge.Error
	if errors.As(err, &je) {
		return nil, "the judge could not decide: " + je.Message
	}
	if err != nil {
		return nil, "the judge could not decide: " + err.Error()
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, err.Error()
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err.Error()
	}
	return out, ""
}
