package judge

import (
	"encoding/json"

	"github.com/stratum-go/stratum/engine/state"
)

// Tier names.
const (
	TierT1 = "T1"
	TierT2 = "T2"
	TierT3 = "T3"
)

// Verdicts.
const (
	Met       = "met"
	NotMet    = "not_met"
	Ambiguous = "ambiguous"
	NotApply  = "n/a"
)

// Result is the original's JudgeResult: a superset of a cross-model review
// result (clean, summary, findings, meta, …) with the judge's fields.
// Clean always equals Met. Field order is the original's to_dict order.
type Result struct {
	Clean      bool              `json:"clean"`
	Summary    string            `json:"summary"`
	Findings   []Finding         `json:"findings"`
	Meta       Meta              `json:"meta"`
	Consensus  []map[string]any  `json:"consensus"`
	ClaudeOnly []map[string]any  `json:"claude_only"`
	CodexOnly  []map[string]any  `json:"codex_only"`
	LensesRun  []string          `json:"lenses_run"`
	AutoFixes  []map[string]any  `json:"auto_fixes"`
	Asks       []map[string]any  `json:"asks"`
	Version    string            `json:"judge_version"`
	Met        bool              `json:"met"`
	Stakes     string            `json:"stakes"`
	Predicates []PredicateResult `json:"predicates"`
	Disagree   []Disagreement    `json:"tier_disagreements"`
	Consumed   Consumed          `json:"budget_consumed"`
	KernelMeta KernelMeta        `json:"judge_kernel_meta"`
}

// Finding is a predicate that is not met (severity must-fix) or ambiguous
// (should-fix).
type Finding struct {
	Lens        string `json:"lens"` // "judge"
	Severity    string `json:"severity"`
	Finding     string `json:"finding"`
	Confidence  int    `json:"confidence"`
	AppliedGate int    `json:"applied_gate"`
}

// Meta says who judged: agent_type "judge" when only tier 1 ran, else the
// verifier's kind, and its model.
type Meta struct {
	AgentType string    `json:"agent_type"`
	ModelID   *string   `json:"model_id"`
	T3Summary T3Summary `json:"t3_summary"`
}

// T3Summary rolls up the adversaries that ran.
type T3Summary struct {
	Reached     int            `json:"reached"`
	ByMode      map[string]int `json:"by_mode"`
	AllJailed   bool           `json:"all_jailed"`
	AnyDegraded bool           `json:"any_degraded"`
}

// PredicateResult is one predicate's verdict after every tier ran. A "met"
// whose confidence is below the predicate's applied gate is reported as
// ambiguous.
type PredicateResult struct {
	ID          string        `json:"id"`
	Type        string        `json:"type"`
	Statement   string        `json:"statement"`
	Verdict     string        `json:"verdict"`
	Confidence  int           `json:"confidence"`
	AppliedGate int           `json:"applied_gate"`
	Evidence    []Evidence    `json:"evidence"`
	TierHistory []TierRecord  `json:"tier_history"`
	T3          *T3Provenance `json:"t3"`
}

// Evidence is one citation: source is "artifacts/PATH:LINE" or
// "modified/PATH:LINE" and names a staged file.
type Evidence struct {
	Source string `json:"source"`
	Quote  string `json:"quote"`
	Tier   string `json:"tier"`
}

// TierRecord is one tier's verdict on one predicate; Confidence is nil for
// tier 1's "n/a" (no model ran).
type TierRecord struct {
	Tier       string `json:"tier"`
	Verdict    string `json:"verdict"`
	Confidence *int   `json:"confidence"`
	Reason     string `json:"reason"`
}

// T3Provenance says what the adversary of one predicate actually was and
// what its isolation did not close.
type T3Provenance struct {
	Mode      string  `json:"mode"`
	Guarantee *string `json:"guarantee"`
	ModelID   *string `json:"model_id"`
	Residual  string  `json:"residual"`
}

// Disagreement is a tier-3 verdict that overturned a tier-2 "met".
type Disagreement struct {
	Predicate  string   `json:"predicate"`
	Tiers      []string `json:"tiers"`
	Resolution string   `json:"resolution"`
	T2Verdict  string   `json:"t2_verdict"`
	T3Verdict  string   `json:"t3_verdict"`
}

// Consumed is what one judge turn spent; Turns is the turn's number.
type Consumed struct {
	Turns      int     `json:"turns"`
	Dollars    float64 `json:"dollars"`
	WallClockS float64 `json:"wall_clock_s"`
}

// KernelMeta: how the predicates were decomposed ("user": by the spec),
// and whether a judged predicate went without an adversary.
type KernelMeta struct {
	DecomposerMode  string `json:"decomposer_mode"`
	PriorsConsulted int    `json:"smartmemory_priors_consulted"`
	DegradedJudged  bool   `json:"degraded_judged"`
}

// Isolation modes of a tier-3 adversary (T3Provenance.Mode), the
// original's names.
const (
	// ModeJailed: the adversary ran in a container whose only readable
	// host path is the staged turn.
	ModeJailed = "codex_jailed"
	// ModeJailedError: the jailed adversary failed to run.
	ModeJailedError = "codex_jailed_error"
	// ModeColdFallback: no container; the adversary ran in a read-only copy
	// of the staged turn without write tools.
	ModeColdFallback = "claude_cold_fallback"
)

// Residuals: what each isolation does not close, stated plainly.
const (
	residualJailed = "network egress to the model API is required, and the model-API " +
		"credential is present in the container environment (a compromised T3 " +
		"could exfiltrate over the network) — but no host filesystem path " +
		"other than the staged turn tree is readable"
	residualFallback = "no OS read-jail: the adversary runs as this user in a read-only copy of the " +
		"staged turn, without write tools; other paths on this machine remain readable to it, " +
		"and a write it manages lands in the copy, is detected and voids its verdict. " +
		"Guarantee is reasoning-not-handed + a copy of the evidence only"
	residualJailedError = "jailed adversary failed to run; predicate resolved ambiguous and the " +
		"error is surfaced — NOT silently downgraded to a weaker guarantee"
)

func provenance(mode, model string) *T3Provenance {
	p := &T3Provenance{Mode: mode}
	switch mode {
	case ModeJailed:
		g := "os_read_jail+cross_model"
		p.Guarantee, p.Residual = &g, residualJailed
	case ModeColdFallback:
		g := "reasoning_isolation+read_only_copy"
		p.Guarantee, p.Residual = &g, residualFallback
	default:
		p.Residual = residualJailedError
		return p
	}
	if model != "" {
		p.ModelID = &model
	}
	return p
}

func intp(v int) *int { return &v }

// Entries are the turn's judge_history entries: one per predicate and tier.
func (r *Result) Entries() []state.JudgeEntry {
	var out []state.JudgeEntry
	for _, p := range r.Predicates {
		for _, t := range p.TierHistory {
			out = append(out, state.JudgeEntry{Turn: r.Consumed.Turns, PredicateID: p.ID, Tier: t.Tier, Verdict: t.Verdict, Confidence: t.Confidence, Reason: t.Reason})
		}
	}
	return out
}

// Outcome is the turn's judge_outcome: {met, predicate_results}.
func (r *Result) Outcome() json.RawMessage {
	b, _ := json.Marshal(struct {
		Met     bool              `json:"met"`
		Results []PredicateResult `json:"predicate_results"`
	}{r.Met, r.Predicates})
	return b
}
