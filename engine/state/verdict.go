package state

// JudgeVerdict is one judge turn's verdict as the trace tells it (the
// judge_verdict event): whether the step's predicates were met and, for
// each, its verdict with the evidence it cites. The flow's judge_history
// and judge_outcome (JudgeProgress) keep the original's shapes; this is
// what a person reading the trace needs beside them.
type JudgeVerdict struct {
	// Turn is the turn's number (the original's budget_consumed.turns).
	Turn int `json:"turn"`
	// Met says every predicate was met.
	Met bool `json:"met"`
	// Stakes are the judge's stakes (cheap, default, paranoid).
	Stakes string `json:"stakes,omitempty"`
	// Predicates are the predicates' verdicts, in the spec's order.
	Predicates []PredicateVerdict `json:"predicates"`
}

// PredicateVerdict is one predicate's verdict in a judge turn.
type PredicateVerdict struct {
	ID         string `json:"id"`
	Type       string `json:"type,omitempty"`
	Statement  string `json:"statement,omitempty"`
	Verdict    string `json:"verdict"` // met | not_met | ambiguous
	Confidence int    `json:"confidence"`
	// Reason is the reason of the last tier that decided it.
	Reason string `json:"reason,omitempty"`
	// Evidence are the citations its verdict rests on.
	Evidence []JudgeEvidence `json:"evidence,omitempty"`
}

// JudgeEvidence is one citation: Source names a staged file and line
// (artifacts/PATH:LINE, modified/PATH:LINE), Quote what it says there,
// Tier the tier that cited it.
type JudgeEvidence struct {
	Source string `json:"source"`
	Quote  string `json:"quote"`
	Tier   string `json:"tier"`
}
