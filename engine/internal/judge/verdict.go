package judge

import "github.com/stratum-go/stratum/engine/state"

// Verdict is the turn's verdict as the trace shows it (the judge_verdict
// event): each predicate's verdict, confidence, deciding reason and
// evidence.
func (r *Result) Verdict() *state.JudgeVerdict {
	v := &state.JudgeVerdict{Turn: r.Consumed.Turns, Met: r.Met, Stakes: r.Stakes, Predicates: make([]state.PredicateVerdict, 0, len(r.Predicates))}
	for _, p := range r.Predicates {
		pv := state.PredicateVerdict{ID: p.ID, Type: p.Type, Statement: p.Statement, Verdict: p.Verdict, Confidence: p.Confidence}
		if n := len(p.TierHistory); n > 0 {
			pv.Reason = p.TierHistory[n-1].Reason
		}
		for _, e := range p.Evidence {
			pv.Evidence = append(pv.Evidence, state.JudgeEvidence{Source: e.Source, Quote: e.Quote, Tier: e.Tier})
		}
		v.Predicates = append(v.Predicates, pv)
	}
	return v
}
