package judge

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stratum-go/stratum/specs"
)

// Request is one judge turn.
type Request struct {
	FlowID, StepID string
	Predicates     []*specs.Predicate // at least one
	Stakes         string             // "" = specs.StakesDefault
	Budget         *specs.JudgeBudget // nil: no caps
	Artifacts      map[string]string  // name → text, staged as artifacts/NAME.txt
	Modified       []string           // workspace-relative paths, staged as modified/PATH
	Workspace      string             // where Modified are read
	// Root is where turns are staged: Root/FLOW/STEP/turn-N.
	Root string
	// Verifier answers tier 2; Adversary tier 3 (nil: Verifier). A turn
	// that needs one that is nil fails (ErrVerifier).
	Verifier, Adversary Verifier
	Now                 func() time.Time // nil: time.Now
}

// Run stages the evidence and decides every predicate, in order: tier 1
// for deterministic predicates, tier 2 for the others (and tier 3 over a
// tier-2 met at paranoid stakes). It checks the turn budget before
// staging and the wall-clock and dollar budgets after each predicate. An
// error is a turn that could not be decided (*Error, or ctx's error).
func Run(ctx context.Context, req Request) (*Result, error) {
	now := req.Now
	if now == nil {
		now = time.Now
	}
	stakes := req.Stakes
	if stakes == "" {
		stakes = specs.StakesDefault
	}
	if err := checkRequest(req, stakes); err != nil {
		return nil, err
	}
	turnN := NextTurn(req.Root, req.FlowID, req.StepID)
	if b := req.Budget; b != nil && b.MaxTurns > 0 && turnN > b.MaxTurns {
		return nil, errorf(ErrBudget, "turn budget exceeded: next turn would be %d, max_turns=%d", turnN, b.MaxTurns)
	}
	turn, err := Stage(req.Root, req.FlowID, req.StepID, turnN, req.Artifacts, req.Modified, req.Workspace, now)
	if err != nil {
		return nil, err
	}
	defer turn.Close()
	started := now()
	k := &kernel{req: req, turn: turn, stakes: stakes}
	for _, p := range req.Predicates {
		pr, err := k.predicate(ctx, p)
		if err != nil {
			return nil, err
		}
		k.results = append(k.results, pr)
		elapsed := now().Sub(started).Seconds()
		if b := req.Budget; b != nil && b.MaxWallClockS > 0 && elapsed > b.MaxWallClockS {
			return nil, errorf(ErrBudget, "wall-clock budget exceeded at %.1fs (cap=%gs)", elapsed, b.MaxWallClockS)
		}
		if b := req.Budget; b != nil && b.MaxDollars > 0 && k.dollars > b.MaxDollars {
			return nil, errorf(ErrBudget, "dollar budget exceeded at $%.4f (cap=$%g)", k.dollars, b.MaxDollars)
		}
	}
	return k.result(now().Sub(started).Seconds()), nil
}

func checkRequest(req Request, stakes string) error {
	if len(req.Predicates) == 0 {
		return errorf(ErrEmptyPredicates, "predicates list must be non-empty")
	}
	if stakes == specs.StakesCheap {
		var ids []string
		for _, p := range req.Predicates {
			if p.Type != specs.PredicateDeterministic {
				ids = append(ids, "'"+p.ID+"'")
			}
		}
		if len(ids) > 0 {
			return errorf(ErrStakesMismatch, "'cheap' stakes rejects non-deterministic predicates: [%s]", strings.Join(ids, ", "))
		}
	}
	return nil
}

// kernel is one turn under way.
type kernel struct {
	req      Request
	turn     *Turn
	stakes   string
	results  []PredicateResult
	disagree []Disagreement
	degraded bool
	dollars  float64
	model    string
	agent    string
	last     Answer // the last verifier answer (tier 3 reads its Mode and Model)
}

// predicate decides one predicate through its tiers.
func (k *kernel) predicate(ctx context.Context, p *specs.Predicate) (PredicateResult, error) {
	pr := PredicateResult{ID: p.ID, Type: p.Type, Statement: p.Statement, AppliedGate: p.AppliedGate, Evidence: []Evidence{}}
	t1, err := k.tier1(ctx, p)
	if err != nil {
		return pr, err
	}
	pr.TierHistory = append(pr.TierHistory, t1)
	final := t1
	if p.Type != specs.PredicateDeterministic {
		t2, ev, err := k.ask(ctx, TierT2, p)
		if err != nil {
			return pr, err
		}
		pr.TierHistory = append(pr.TierHistory, t2)
		pr.Evidence = append(pr.Evidence, ev...)
		final = t2
		ranT3 := false
		if k.stakes == specs.StakesParanoid && t2.Verdict == Met {
			final, ranT3 = k.adversary(ctx, p, &pr, t2)
		}
		if p.Type == specs.PredicateJudged && !ranT3 {
			k.degraded = true
		}
	}
	pr.Verdict, pr.Confidence = final.Verdict, 0
	if final.Confidence != nil {
		pr.Confidence = *final.Confidence
	}
	if pr.Verdict == Met && pr.Confidence < p.AppliedGate {
		pr.Verdict = Ambiguous
	}
	return pr, nil
}

// tier1 runs a deterministic predicate's statement over the staged turn;
// other predicates get "n/a". A statement that fails to evaluate is not met.
func (k *kernel) tier1(ctx context.Context, p *specs.Predicate) (TierRecord, error) {
	if p.Type != specs.PredicateDeterministic {
		return TierRecord{Tier: TierT1, Verdict: NotApply, Reason: "non-deterministic predicate"}, nil
	}
	if p.Expr == nil {
		return TierRecord{}, errorf(ErrPredicatePath, "predicate '%s' has no compiled statement", p.ID)
	}
	ok, err := p.Expr.EvalBoolContext(ctx, specs.EvalEnv{FS: k.turn.tree})
	if err != nil {
		if ctx.Err() != nil {
			return TierRecord{}, ctx.Err()
		}
		return TierRecord{Tier: TierT1, Verdict: NotMet, Confidence: intp(10), Reason: "t1 eval raised: " + err.Error()}, nil
	}
	v := NotMet
	if ok {
		v = Met
	}
	return TierRecord{Tier: TierT1, Verdict: v, Confidence: intp(10), Reason: "deterministic check"}, nil
}

// ask puts one predicate to the tier's verifier, in a read-only copy of
// the staged turn. A met without evidence is ambiguous; a verifier that
// changed its copy has its verdict discarded (ambiguous).
func (k *kernel) ask(ctx context.Context, tier string, p *specs.Predicate) (TierRecord, []Evidence, error) {
	v := k.req.Verifier
	if tier == TierT3 && k.req.Adversary != nil {
		v = k.req.Adversary
	}
	if v == nil {
		return TierRecord{}, nil, errorf(ErrVerifier, "predicate '%s' is %s: it needs a verifier, and none is configured", p.ID, p.Type)
	}
	dir, err := readOnlyCopy(k.turn.Dir, k.turn.tree)
	if err != nil {
		return TierRecord{}, nil, errorf(ErrStaging, "copying the staged turn for the verifier: %v", err)
	}
	defer removeCopy(dir)
	ans, err := v.Verify(ctx, VerifyRequest{Tier: tier, Predicate: p.ID, Prompt: prompt(tier, p), Dir: dir})
	if err != nil {
		if ctx.Err() != nil {
			return TierRecord{}, nil, ctx.Err()
		}
		return TierRecord{}, nil, errorf(ErrVerifier, "%s verifier for predicate '%s': %v", tier, p.ID, err)
	}
	k.dollars += ans.USD
	k.last = ans
	if tier == TierT2 && ans.Model != "" {
		k.model = ans.Model
	}
	if tier == TierT2 && ans.Agent != "" {
		k.agent = ans.Agent
	}
	if path := tampered(k.turn.tree, dir); path != "" {
		return TierRecord{Tier: tier, Verdict: Ambiguous, Confidence: intp(0),
			Reason: "the verifier changed its read-only copy of the evidence (" + path + "): its verdict is discarded"}, nil, nil
	}
	vd, err := parseVerdict(ans.Text, k.turn.tree, tier)
	if err != nil {
		return TierRecord{}, nil, err
	}
	rec := TierRecord{Tier: tier, Verdict: vd.Verdict, Confidence: intp(vd.Confidence), Reason: vd.Reason}
	if vd.Verdict == Met && len(vd.Evidence) == 0 {
		rec.Verdict, rec.Reason = Ambiguous, "met without evidence: the verifier cited no staged file. "+vd.Reason
	}
	return rec, vd.Evidence, nil
}

// adversary runs tier 3 over a tier-2 met. It answers the final record and
// whether an adversary really ran (only then is the predicate credited
// with one). Its failures resolve the predicate ambiguous, never silently.
func (k *kernel) adversary(ctx context.Context, p *specs.Predicate, pr *PredicateResult, t2 TierRecord) (TierRecord, bool) {
	if !k.turn.hasEvidence() {
		return t2, false
	}
	k.last = Answer{}
	t3, ev, err := k.ask(ctx, TierT3, p)
	mode := k.last.Mode
	if mode == "" {
		mode = ModeColdFallback
	}
	switch {
	case err != nil && ctx.Err() != nil:
		t3 = TierRecord{Tier: TierT3, Verdict: Ambiguous, Confidence: intp(0), Reason: ctx.Err().Error()}
		pr.T3 = provenance(ModeJailedError, "")
	case err != nil && mode == ModeJailed:
		t3 = TierRecord{Tier: TierT3, Verdict: Ambiguous, Confidence: intp(0), Reason: err.Error()}
		pr.T3 = provenance(ModeJailedError, "")
	case err != nil:
		t3 = TierRecord{Tier: TierT3, Verdict: Ambiguous, Confidence: intp(0), Reason: err.Error()}
		pr.T3 = provenance(ModeColdFallback, k.last.Model)
	default:
		pr.T3 = provenance(mode, k.last.Model)
	}
	pr.TierHistory = append(pr.TierHistory, t3)
	pr.Evidence = append(pr.Evidence, ev...)
	if t3.Verdict == Met {
		return t2, true
	}
	conf := 0
	if t3.Confidence != nil {
		conf = *t3.Confidence
	}
	res := "t3_inconclusive"
	if t3.Verdict == NotMet {
		res = "adversary_counterexample"
	}
	k.disagree = append(k.disagree, Disagreement{Predicate: p.ID, Tiers: []string{TierT2, TierT3}, Resolution: res, T2Verdict: t2.Verdict, T3Verdict: t3.Verdict})
	return TierRecord{Tier: TierT3, Verdict: Ambiguous, Confidence: intp(conf), Reason: "adversary: " + t3.Reason}, true
}

// result aggregates the turn.
func (k *kernel) result(wall float64) *Result {
	met := true
	t1Only := true
	var findings []Finding
	for _, pr := range k.results {
		if pr.Verdict != Met {
			met = false
			sev := "should-fix"
			if pr.Verdict == NotMet {
				sev = "must-fix"
			}
			reason := ""
			if n := len(pr.TierHistory); n > 0 {
				reason = pr.TierHistory[n-1].Reason
			}
			findings = append(findings, Finding{Lens: "judge", Severity: sev, Finding: pr.Statement + " — " + reason, Confidence: pr.Confidence, AppliedGate: pr.AppliedGate})
		}
		if pr.Type != specs.PredicateDeterministic {
			t1Only = false
		}
	}
	agent := "judge"
	var model *string
	if !t1Only {
		agent = k.agent
		if agent == "" {
			agent = "verifier"
		}
		if k.model != "" {
			m := k.model
			model = &m
		}
	}
	if findings == nil {
		findings = []Finding{}
	}
	r := &Result{
		Clean: met, Findings: findings, Meta: Meta{AgentType: agent, ModelID: model, T3Summary: k.t3Summary()},
		Consensus: []map[string]any{}, ClaudeOnly: []map[string]any{}, CodexOnly: []map[string]any{}, LensesRun: []string{},
		AutoFixes: []map[string]any{}, Asks: []map[string]any{},
		Version: "1.0", Met: met, Stakes: k.stakes, Predicates: k.results, Disagree: k.disagree,
		Consumed:   Consumed{Turns: k.turn.N, Dollars: k.dollars, WallClockS: wall},
		KernelMeta: KernelMeta{DecomposerMode: "user", DegradedJudged: k.degraded},
	}
	if r.Disagree == nil {
		r.Disagree = []Disagreement{}
	}
	r.Summary = summary(r, agent)
	return r
}

func (k *kernel) t3Summary() T3Summary {
	s := T3Summary{ByMode: map[string]int{}}
	for _, pr := range k.results {
		if pr.T3 != nil {
			s.Reached++
			s.ByMode[pr.T3.Mode]++
		}
	}
	s.AllJailed = s.Reached > 0 && s.ByMode[ModeJailed] == s.Reached
	s.AnyDegraded = s.Reached > s.ByMode[ModeJailed]
	return s
}

func summary(r *Result, agent string) string {
	n := 0
	tiers := map[string]bool{}
	for _, pr := range r.Predicates {
		if pr.Verdict == Met {
			n++
		}
		for _, t := range pr.TierHistory {
			if t.Verdict != NotApply {
				tiers[t.Tier] = true
			}
		}
	}
	var ts []string
	for t := range tiers {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return fmt.Sprintf("judge: %d/%d predicates met (%s, %s); degraded_judged=%t", n, len(r.Predicates), strings.Join(ts, "+"), agent, r.KernelMeta.DegradedJudged)
}

func itoa(n int) string { return strconv.Itoa(n) }
