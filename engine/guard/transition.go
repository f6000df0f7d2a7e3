package guard

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sort"

	"github.com/stratum-go/stratum/engine"
)

// TransitionRequest is stratum_guard_transition's arguments.
type TransitionRequest struct {
	ResourceID     string            `json:"resource_id" jsonschema:"the guarded resource"`
	FromState      string            `json:"from_state" jsonschema:"the state the resource is in"`
	ToState        string            `json:"to_state" jsonschema:"the state to move it to"`
	Artifacts      map[string]string `json:"artifacts,omitempty" jsonschema:"name -> content, context for the verifier tiers (never evidence by itself)"`
	ModifiedFiles  []string          `json:"modified_files,omitempty" jsonschema:"files the change touched"`
	IdempotencyKey string            `json:"idempotency_key,omitempty" jsonschema:"the same key and payload replays the recorded answer"`
	ResolvedBy     string            `json:"resolved_by,omitempty" jsonschema:"human | agent | system (default agent)"`
}

// Transition applies from→to when the edge is legal, the resource is in
// from and the edge's predicates pass; it is refused (and recorded) when a
// predicate fails.
func (s *Service) Transition(ctx context.Context, in TransitionRequest) (engine.Response, error) {
	if in.ResolvedBy == "" {
		in.ResolvedBy = "agent"
	}
	payload, err := canonical(map[string]any{"from_state": in.FromState, "to_state": in.ToState, "artifacts": orEmptyStrMap(in.Artifacts),
		"modified_files": sorted(in.ModifiedFiles), "resolved_by": in.ResolvedBy})
	if err != nil {
		return nil, errorf(ErrInvalidArguments, "%v", err)
	}
	digest := sha(payload)
	// Phase 1: the structural checks.
	var r *resource
	if err := s.Store.View(ctx, func(tx engine.Tx) error {
		var err error
		r, err = s.checked(tx, in)
		return err
	}); err != nil {
		return nil, err
	}
	if resp, err := replay(r, in.IdempotencyKey, digest); resp != nil || err != nil {
		return resp, err
	}
	if err := legal(r, in.FromState, in.ToState); err != nil {
		return nil, err
	}
	// Phase 2: the predicates, outside any transaction.
	edge := edgeKey(in.FromState, in.ToState)
	stakes := r.reg.Stakes[edge]
	if stakes == "" {
		stakes = "default"
	}
	met, verdict := s.verdict(ctx, r, edge, stakes, in)
	// Phase 3: commit, re-checking what may have moved meanwhile.
	var resp engine.Response
	err = s.Store.Update(ctx, func(tx engine.Tx) error {
		r, err := s.checked(tx, in)
		if err != nil {
			return err
		}
		if resp, err = replay(r, in.IdempotencyKey, digest); resp != nil || err != nil {
			return err
		}
		if cur := r.state(); cur != in.FromState {
			return errorf(ErrStaleFromState, "current_state advanced to %q during evaluation", cur)
		}
		outcome := outcomeRefused
		if met {
			outcome = outcomeApplied
		}
		e := Entry{TSMillis: s.now().UnixMilli(), FromState: in.FromState, ToState: in.ToState, Outcome: outcome, Kind: "transition",
			ResolvedBy: in.ResolvedBy, IdempotencyKey: optional(in.IdempotencyKey), PayloadDigest: &digest, Verdict: verdict, Channel: s.Channel}
		e, err = r.appendEntry(tx, e)
		if err != nil {
			return err
		}
		resp = engine.Response{"status": outcome, "verdict": verdict, "ledger_ref": e.EntryDigest, "current_state": r.state()}
		return nil
	})
	if errors.Is(err, engine.ErrConflict) {
		return nil, errorf(ErrStaleFromState, "another transition of %q was recorded meanwhile", in.ResourceID)
	}
	return resp, err
}

// checked loads a registered, untampered resource.
func (s *Service) checked(tx engine.Tx, in TransitionRequest) (*resource, error) {
	r, err := load(tx, in.ResourceID)
	if err != nil {
		return nil, err
	}
	if r.reg == nil {
		return nil, errorf(ErrNotFound, "no guard registered for %q", in.ResourceID)
	}
	if sum, err := Checksum(r.reg.Graph, r.reg.EdgePredicates, r.reg.Terminal, r.reg.Stakes); err != nil || sum != r.reg.Checksum {
		return nil, errorf(ErrTampered, "guard %q policy checksum mismatch", in.ResourceID)
	}
	return r, nil
}

// legal checks that the resource is in from and from→to is an edge.
func legal(r *resource, from, to string) error {
	if cur := r.state(); from != cur {
		return errorf(ErrStaleFromState, "from_state %q != current_state %q", from, cur)
	}
	if !contains(r.reg.Graph[from], to) {
		return errorf(ErrIllegalEdge, "%s is not a legal edge", edgeKey(from, to))
	}
	return nil
}

// replay answers a transition whose idempotency key was recorded: the
// recorded answer for the same payload, idempotency_conflict for another.
func replay(r *resource, key, digest string) (engine.Response, error) {
	if key == "" {
		return nil, nil
	}
	e := r.byIdempotencyKey(key)
	if e == nil {
		return nil, nil
	}
	if e.PayloadDigest == nil || *e.PayloadDigest != digest {
		return nil, errorf(ErrIdempotencyConflict, "idempotency_key %q reused with a different payload", key)
	}
	return engine.Response{"status": "replayed", "verdict": e.Verdict, "ledger_ref": e.EntryDigest, "current_state": r.state()}, nil
}

// verdict judges an edge: its trusted predicates server-side, those of
// the verifier tiers by the judge (Service.Judge); met when all are. The
// answer has the judge's JudgeResult shape, the trusted predicates' results
// first and their evidence in meta.guard_evidence.
func (s *Service) verdict(ctx context.Context, r *resource, edge, stakes string, in TransitionRequest) (bool, map[string]any) {
	var trusted, llm []Predicate
	for _, p := range r.reg.EdgePredicates[edge] {
		if t := ptype(p); t == typeVerified || t == typeJudged {
			llm = append(llm, p)
		} else {
			trusted = append(trusted, p)
		}
	}
	met, ev := s.evaluate(ctx, trusted, r.reg.WorkspaceRoot, r.entries)
	preds := make([]any, 0, len(ev)+len(llm))
	for _, e := range ev {
		v := "not_met"
		if e.Met {
			v = "met"
		}
		preds = append(preds, predicateResult(e.ID, typeTrusted, e.Statement, v, 10))
	}
	out := map[string]any{
		"clean": met, "summary": "guard transition verdict", "findings": []any{},
		"consensus": []any{}, "claude_only": []any{}, "codex_only": []any{}, "lenses_run": []any{}, "auto_fixes": []any{}, "asks": []any{},
		"judge_version": "1.0", "stakes": stakes, "tier_disagreements": []any{},
		"budget_consumed":   map[string]any{"turns": 0, "dollars": 0.0, "wall_clock_s": 0.0},
		"judge_kernel_meta": map[string]any{"decomposer_mode": "user", "smartmemory_priors_consulted": 0, "degraded_judged": false},
	}
	meta := map[string]any{"agent_type": "guard", "source": "evidence"}
	if len(llm) > 0 {
		jr, why := s.judged(ctx, r, edge, stakes, llm, in)
		if jr == nil {
			met = false
			out["summary"] = why
			for i, p := range llm {
				id := pstring(p, "id")
				if id == "" {
					id = "v" + itoa(i)
				}
				preds = append(preds, predicateResult(id, ptype(p), pstring(p, "statement"), "not_met", 0))
			}
		} else {
			jm, _ := jr["met"].(bool)
			met = met && jm
			for k, v := range jr {
				if k != "meta" && k != "predicates" && k != "met" && k != "clean" {
					out[k] = v
				}
			}
			if m, ok := jr["meta"].(map[string]any); ok {
				for k, v := range m {
					meta[k] = v
				}
				meta["agent_type"] = "guard"
			}
			if ps, ok := jr["predicates"].([]any); ok {
				preds = append(preds, ps...)
			}
		}
	}
	meta["guard_evidence"] = ev
	out["meta"], out["predicates"], out["met"], out["clean"] = meta, preds, met, met
	return met, out
}

func predicateResult(id, typ, stmt, verdict string, confidence int) map[string]any {
	return map[string]any{"id": id, "type": typ, "statement": stmt, "verdict": verdict, "confidence": confidence,
		"applied_gate": 0, "evidence": []any{}, "tier_history": []any{}}
}

func putRegistry(tx engine.Tx, key string, reg Registry) error {
	raw, err := json.Marshal(reg)
	if err != nil {
		return err
	}
	return tx.GuardPut(key, raw)
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orEmptyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func orEmptyStrMap(m map[string]string) map[string]string { return orEmptyMap(m) }

func orEmptyPreds(m map[string][]Predicate) map[string][]Predicate {
	if m == nil {
		return map[string][]Predicate{}
	}
	return m
}

func statDir(p string) (bool, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}
